"""Unsafe local mode: the kernel is a plain child process of the grader.

No isolation beyond a fresh scratch directory and an allow-listed environment. Only for
development and only when explicitly chosen; every result says `sandbox: unsafe-local`.

ZMQ runs over the ipc transport (sockets in a private directory), as in the bwrap sandbox: with tcp,
jupyter_client picks five free ports and the kernel binds them later, so two kernels starting together could
pick the same port and one died with "Address already in use", costing a job an attempt (a CI flake).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from jupyter_client import KernelManager

from grading.errors import GraderFault
from grading.exercise import REPO_ROOT
from grading.sandbox.devices import device_env
from grading.sandbox.interface import KernelRequest, KernelSession, Sandbox

ENV_ALLOW = (
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)


class _LocalSession(KernelSession):
    mode = "unsafe-local"

    def __init__(self, km: KernelManager, workdir: Path, sockets: Path) -> None:
        self.km = km
        self.workdir = workdir
        self.sockets = sockets

    def close(self) -> list[str]:
        try:
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=True)
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)
            shutil.rmtree(self.sockets, ignore_errors=True)
        return []


class UnsafeLocalSandbox(Sandbox):
    mode = "unsafe-local"

    def start(self, request: KernelRequest) -> KernelSession:
        workdir = Path(tempfile.mkdtemp(prefix="tg-kernel-"))
        env = {k: os.environ[k] for k in ENV_ALLOW if k in os.environ}
        env.update(
            HOME=str(workdir),
            PYTHONPATH=str(REPO_ROOT),
            PYTHONHASHSEED="0",
            TORCH_DEVICE_BACKEND_AUTOLOAD="0",
            MPLBACKEND="Agg",
        )
        env.update(device_env(request.devices))  # the granted devices, and TITANGRADE_DEVICE, as under bwrap
        env.update(request.env)
        try:  # outside the kernel's HOME, short (AF_UNIX: 107 bytes); a full disk is the host's fault too
            sockets = Path(tempfile.mkdtemp(prefix="tg-zmq-"))
        except OSError as exc:
            shutil.rmtree(workdir, ignore_errors=True)
            raise GraderFault(f"kernel failed to start: {exc}") from exc
        km = KernelManager(
            kernel_name="python3", transport="ipc", ip=str(sockets / "k"), connection_file=str(sockets / "kernel.json")
        )
        try:
            km.start_kernel(cwd=str(workdir), env=env)
            kc = km.client()
            kc.start_channels(stdin=False, hb=False)
            try:  # ready before it is handed over: the engine's sockets connect once and never retry
                kc.wait_for_ready(timeout=60)
            finally:
                kc.stop_channels()
            km._close_control_socket()  # never read; the engine interrupts through its own bounded socket
        except Exception as exc:  # the kernel not starting is our fault, not the learner's
            if km.has_kernel:
                km.shutdown_kernel(now=True)
            shutil.rmtree(workdir, ignore_errors=True)
            shutil.rmtree(sockets, ignore_errors=True)
            raise GraderFault(f"kernel failed to start: {exc}") from exc
        return _LocalSession(km, workdir, sockets)
