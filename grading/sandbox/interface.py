"""The sandbox interface every backend implements: what a job is granted, what a kernel is asked to be,
the started kernel, and the backend itself. Backends (bwrap.py, local.py, pool.py, headstart.py) import
these from here; `grading.sandbox` re-exports them and chooses a backend once (`make_sandbox`).
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
