"""Where learner kernels run. One interface, chosen once (see `make_sandbox`).

A `Sandbox` starts a fresh Jupyter kernel for exactly one submission and returns a `KernelSession`
whose `km` is an already-started jupyter_client KernelManager; the engine talks to the kernel through
`session.channel_urls()` with its own bounded client (grading/steps/kernel_io.py). `session.close()` tears
the whole sandbox down (every process the learner started) and reports which limits were hit.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grading.exercise import Limits, Manifest


@dataclass(frozen=True, kw_only=True)
class DeviceGrant:
    """Accelerators handed to one job: kind is cpu|cuda|npu, ids are host device indices."""

    kind: str = "cpu"
    ids: tuple[int, ...] = ()


CPU_ONLY = DeviceGrant()  # the default grant: no accelerator (DeviceGrant is frozen, so one instance is shared)


@dataclass(frozen=True, kw_only=True)
class KernelRequest:
    limits: Limits = field(default_factory=Limits)
    devices: DeviceGrant = field(default_factory=DeviceGrant)
    kernel_family: str = "light"
    env: dict[str, str] = field(default_factory=dict)  # extra variables, already allow-listed by the caller
    hidden_modules: tuple[str, ...] = ()  # the exercise's forbidden modules: absent in the kernel (views.py)

    @classmethod
    def for_exercise(cls, manifest: Manifest, devices: DeviceGrant) -> KernelRequest:
        """The kernel an exercise's grade runs in: the pipeline and a head start (headstart.py) must agree."""
        return cls(
            limits=manifest.limits,
            devices=devices,
            kernel_family=manifest.kernel_family,
            hidden_modules=manifest.policy.forbid,
        )


class KernelSession(abc.ABC):
    """A started kernel inside its sandbox."""

    km: Any  # jupyter_client KernelManager (started)
    workdir: Path  # host-side path of the kernel's writable scratch directory
    mode: str

    def channel_urls(self) -> dict[str, str]:
        """Where the engine connects to the kernel's shell, iopub and control channels. Sandboxes whose
        socket paths the kernel can write override this with paths only the grader controls."""
        return {name: self.km._make_url(name) for name in ("shell", "iopub", "control")}

    @abc.abstractmethod
    def close(self) -> list[str]:
        """Kill everything in the sandbox, remove scratch; return limits hit (e.g. ["memory limit"])."""

    def poll_limits(self) -> set[str]:
        """Whole-run limits enforced since the last call (e.g. an OOM kill in the run's control group)."""
        return set()

    def __enter__(self) -> KernelSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Sandbox(abc.ABC):
    mode: str = "abstract"

    @abc.abstractmethod
    def start(self, request: KernelRequest) -> KernelSession:
        """Start a fresh kernel for one submission. Raises GraderFault if it cannot."""


def make_sandbox(
    mode: str = "auto", *, prewarm: dict[str, int] | None = None, prewarm_keys: int = 4, **options: Any
) -> Sandbox:
    """Pick the sandbox backend once at start-up: "bwrap", "unsafe-local", or "auto".

    "auto" means bwrap, and refuses (GraderFault) where `probe()` says bwrap cannot run: unisolated
    execution must be asked for by name ("unsafe-local"), never fallen into. `prewarm` = kernels to keep
    started per kernel family, e.g. {"light": 2, "torch": 1}, for each of the last `prewarm_keys` kernel
    shapes requested (see grading/sandbox/pool.py).
    """
    from grading.errors import GraderFault

    if mode == "unsafe-local":
        from grading.sandbox.local import UnsafeLocalSandbox

        sandbox: Sandbox = UnsafeLocalSandbox(**options)
    elif mode in ("bwrap", "auto"):
        found = probe()
        if not found.usable:
            raise GraderFault(
                f"sandbox mode {mode!r} is not available: {found.reason}. Only for development, "
                "set TITANGRADE_SANDBOX=unsafe-local to run kernels without isolation "
                "(every result then says sandbox: unsafe-local)",
                retryable=False,
            )
        from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

        sandbox = BwrapSandbox(BwrapConfig(**options))
    else:
        raise ValueError(f"unknown sandbox mode {mode!r}; use one of: auto, bwrap, unsafe-local")
    if prewarm:
        from grading.sandbox.pool import PrewarmedSandbox

        sandbox = PrewarmedSandbox(sandbox, sizes=prewarm, max_keys=prewarm_keys)
    return sandbox


from grading.sandbox.probe import Probe, probe  # noqa: E402, F401  (re-exported for the service's start-up check)
