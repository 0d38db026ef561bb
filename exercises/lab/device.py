"""Pick the training device once: NPU (hccl) when torch_npu works, else CUDA (nccl), else CPU (gloo).

torch_npu registers a torch backend entry point, so on a machine with torch_npu but without CANN a
plain ``import torch`` crashes (libhccl.so missing). ``guard_torch_import`` sets
``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` before torch is imported in that case, and ``select_device`` then
fails with a message naming the fix instead. ``TITANGRADE_DEVICE`` (auto|cpu|cuda|npu) overrides.
"""

from __future__ import annotations

import ctypes.util
import functools
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

OVERRIDE_ENV = "TITANGRADE_DEVICE"
AUTOLOAD_ENV = "TORCH_DEVICE_BACKEND_AUTOLOAD"
BACKENDS = {"npu": "hccl", "cuda": "nccl", "cpu": "gloo"}
#: The dtype the trained parameters are kept in on every device (torchtitan's mixed_precision_param); run.json
#: states it, and the grader picks the reference band by device kind and this dtype.
PARAM_DTYPE = "float32"


def rollout_dtype(kind: str, rollout: str = "torch") -> str:
    """The dtype the rollout engine samples in: float32 on the CPU, bfloat16 on an accelerator or with vLLM."""
    return "float32" if kind == "cpu" and rollout == "torch" else "bfloat16"


CANN_MISSING = (
    "torch_npu is installed but CANN's libhccl.so was not found; source CANN's set_env.sh "
    "(e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) or uninstall torch_npu, "
    f"or set {OVERRIDE_ENV}=cpu to train on the CPU"
)
_CANN_LIB_DIRS_ENV = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH")
_CANN_DEFAULT_DIR = "/usr/local/Ascend/ascend-toolkit/latest"


class DeviceUnavailable(RuntimeError):
    """The requested or detected device cannot be used; the message says how to fix it."""


@dataclass(frozen=True, slots=True)
class DeviceChoice:
    """The device the lab trains on. ``device_count`` is accelerators visible, or 1 for the CPU."""

    kind: str
    backend: str
    device_count: int
    reason: str

    @property
    def torch_device(self) -> str:
        """The ``torch.device`` string for rank-local tensors (``npu``/``cuda``/``cpu``)."""
        return self.kind


def find_libhccl(env: Mapping[str, str] | None = None) -> str | None:
    """Path of CANN's libhccl.so if a loader would find it (LD_LIBRARY_PATH, ASCEND_* homes), else None."""
    env = os.environ if env is None else env
    dirs = [d for d in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    for name in _CANN_LIB_DIRS_ENV:
        if env.get(name):
            dirs.append(os.path.join(env[name], "lib64"))
    dirs.append(os.path.join(_CANN_DEFAULT_DIR, "lib64"))
    for directory in dirs:
        candidate = Path(directory) / "libhccl.so"
        if candidate.exists():
            return str(candidate)
    return ctypes.util.find_library("hccl")


def _torch_npu_installed() -> bool:
    return importlib.util.find_spec("torch_npu") is not None


def _npu_count() -> int:
    import torch
    import torch_npu  # noqa: F401  (registers torch.npu)

    return int(torch.npu.device_count())


def _cuda_count() -> int:
    import torch

    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


@dataclass(frozen=True, slots=True)
class Probes:
    """How the machine is inspected; tests inject fixed answers to exercise the NPU/CUDA branches."""

    torch_npu_installed: Callable[[], bool] = _torch_npu_installed
    cann_available: Callable[[], bool] = lambda: find_libhccl() is not None
    npu_count: Callable[[], int] = _npu_count
    cuda_count: Callable[[], int] = _cuda_count


def guard_torch_import(env: MutableMapping[str, str] | None = None, probes: Probes | None = None) -> bool:
    """Set TORCH_DEVICE_BACKEND_AUTOLOAD=0 when torch_npu is installed without CANN; True if it did.

    Must run before the first ``import torch``; an explicit user setting is never overwritten.
    """
    env = os.environ if env is None else env
    probes = probes or Probes()
    if AUTOLOAD_ENV in env or not probes.torch_npu_installed() or probes.cann_available():
        return False
    env[AUTOLOAD_ENV] = "0"
    return True


def _requested(env: Mapping[str, str]) -> str:
    value = env.get(OVERRIDE_ENV, "").strip().lower() or "auto"
    if value not in ("auto", *BACKENDS):
        raise ValueError(f"{OVERRIDE_ENV}={value!r} is not one of auto, cpu, cuda, npu; unset it or pick one")
    return value


def _choice(kind: str, count: int, reason: str) -> DeviceChoice:
    return DeviceChoice(kind=kind, backend=BACKENDS[kind], device_count=count, reason=reason)


def select_device(*, env: MutableMapping[str, str] | None = None, probes: Probes | None = None) -> DeviceChoice:
    """Decide the device from the override and the probes; raises DeviceUnavailable with the fix."""
    env = os.environ if env is None else env
    probes = probes or Probes()
    requested = _requested(env)
    if "torch" not in sys.modules or env is not os.environ:
        guard_torch_import(env, probes)
    if requested == "cpu":
        return _choice("cpu", 1, f"{OVERRIDE_ENV}=cpu")

    if requested in ("auto", "npu") and probes.torch_npu_installed():
        if not probes.cann_available():
            raise DeviceUnavailable(CANN_MISSING)
        try:
            count = probes.npu_count()
        except ImportError as exc:
            raise DeviceUnavailable(
                f"torch_npu failed to import ({exc}); check that CANN matches torch_npu and that "
                f"set_env.sh was sourced, or set {OVERRIDE_ENV}=cpu"
            ) from exc
        if count > 0:
            return _choice("npu", count, f"torch_npu imported and sees {count} NPU(s)")
        if requested == "npu":
            raise DeviceUnavailable("torch_npu imported but sees no NPU; check ASCEND_RT_VISIBLE_DEVICES and npu-smi")
    elif requested == "npu":
        raise DeviceUnavailable(
            f"{OVERRIDE_ENV}=npu but torch_npu is not installed; run setup_backend.sh on an Ascend host "
            f"or unset {OVERRIDE_ENV}"
        )

    count = probes.cuda_count()
    if count > 0:
        return _choice("cuda", count, f"torch.cuda sees {count} GPU(s)")
    if requested == "cuda":
        raise DeviceUnavailable(
            f"{OVERRIDE_ENV}=cuda but torch.cuda sees no GPU; install a CUDA build of torch or unset it"
        )
    return _choice("cpu", 1, "no NPU or GPU found; training on the CPU with gloo")


@functools.cache
def current_device() -> DeviceChoice:
    """The device for this process, decided once (from os.environ and the real probes)."""
    return select_device()


def resolve(requested: str, *, ranks: int) -> str:
    """The device kind a run of `ranks` ranks trains on: `requested`, or for "auto" the detected device
    (TITANGRADE_DEVICE, set by the grader to the kind it granted, decides first). An accelerator with fewer
    visible devices than ranks raises DeviceUnavailable: one rank per device."""
    if requested != "auto":
        return requested
    choice = current_device()
    if choice.kind != "cpu" and choice.device_count < ranks:
        raise DeviceUnavailable(
            f"{ranks} ranks need {ranks} {choice.kind} devices but {choice.device_count} are visible "
            f"({choice.reason}); set world_size to at most {choice.device_count} or {OVERRIDE_ENV}=cpu"
        )
    return choice.kind
