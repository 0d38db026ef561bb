"""Where learner kernels run. One interface, chosen once (see `make_sandbox`).

A `Sandbox` starts a fresh Jupyter kernel for exactly one submission and returns a `KernelSession`
whose `km` is an already-started jupyter_client KernelManager; the engine talks to the kernel through
`session.channel_urls()` with its own bounded client (grading/steps/kernel_io.py). `session.close()` tears
the whole sandbox down (every process the learner started) and reports which limits were hit.
"""

from __future__ import annotations

from typing import Any

from grading.sandbox.interface import CPU_ONLY, DeviceGrant, KernelRequest, KernelSession, Sandbox
from grading.sandbox.probe import Probe, probe  # re-exported for the service's start-up check

__all__ = ["CPU_ONLY", "DeviceGrant", "KernelRequest", "KernelSession", "Probe", "Sandbox", "make_sandbox", "probe"]


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

        config = BwrapConfig(**options)
        if config.kernel_start == "fork":  # kernels forked from a pre-imported parent, exec as the fallback
            from grading.sandbox.forkserver import ForkingSandbox

            sandbox = ForkingSandbox(config)
        elif config.kernel_start == "exec":
            sandbox = BwrapSandbox(config)
        else:
            raise ValueError(f"unknown kernel start {config.kernel_start!r}; use one of: exec, fork")
    else:
        raise ValueError(f"unknown sandbox mode {mode!r}; use one of: auto, bwrap, unsafe-local")
    if prewarm:
        from grading.sandbox.pool import PrewarmedSandbox

        sandbox = PrewarmedSandbox(sandbox, sizes=prewarm, max_keys=prewarm_keys)
    return sandbox
