"""Which accelerators a worker has, and which job holds each one.

Detection and the busy checks are real code for CUDA (torch + nvidia-smi) and Ascend NPU (torch_npu +
npu-smi), but these machines have neither: only the bookkeeping is tested here, on a configured
inventory that the tests label as fake. See docs/sandbox.md, "Devices".
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping

from grading.errors import HostBusy
from grading.exercise import Resources
from grading.sandbox.interface import DeviceGrant

log = logging.getLogger(__name__)
VISIBLE_ENV = {"cuda": "CUDA_VISIBLE_DEVICES", "npu": "ASCEND_RT_VISIBLE_DEVICES"}
SHARED_NODES = {
    "cuda": ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"),
    "npu": ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"),
}
NODE_PATTERN = {"cuda": "/dev/nvidia{}", "npu": "/dev/davinci{}"}
LAB_DEVICE_ENV = "TITANGRADE_DEVICE"  # exercises.lab.device.OVERRIDE_ENV (the grader never imports the lab)

BusyCheck = Callable[[str, int], bool]  # (kind, device id) -> is something still using it?


def device_env(grant: DeviceGrant) -> dict[str, str]:
    """Environment that restricts the frameworks in the sandbox to the granted devices, and tells the
    course runtime which kind it was given (exercises.lab.device reads TITANGRADE_DEVICE: a run with
    device "auto" trains there, and one on a kind it cannot use fails loudly instead of using the CPU)."""
    if grant.kind == "cpu":
        return {"CUDA_VISIBLE_DEVICES": "", "ASCEND_RT_VISIBLE_DEVICES": "", LAB_DEVICE_ENV: "cpu"}
    env = {VISIBLE_ENV[grant.kind]: ",".join(str(i) for i in grant.ids), LAB_DEVICE_ENV: grant.kind}
    if grant.kind == "cuda":  # make CUDA's numbering match nvidia-smi's (and so the host ids we grant)
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    return env


def device_nodes(grant: DeviceGrant) -> list[str]:
    """Host device nodes to bind into the sandbox for `grant` (only those that exist)."""
    if grant.kind == "cpu":
        return []
    wanted = [NODE_PATTERN[grant.kind].format(i) for i in grant.ids] + list(SHARED_NODES[grant.kind])
    return [node for node in wanted if os.path.exists(node)]


def detect() -> dict[str, list[int]]:
    """Devices this host has, by kind. Never raises: a broken driver stack means no devices.

    NOT RUN HERE (no accelerator): the CUDA branch uses torch.cuda; the NPU branch imports torch_npu
    with TORCH_DEVICE_BACKEND_AUTOLOAD=0 so a torch_npu without CANN cannot break `import torch`.
    """
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    found: dict[str, list[int]] = {}
    try:
        import torch

        if torch.cuda.is_available():
            found["cuda"] = list(range(torch.cuda.device_count()))
    except Exception:
        pass
    try:
        import torch
        import torch_npu  # noqa: F401  (registers torch.npu)

        if torch.npu.is_available():
            found["npu"] = list(range(torch.npu.device_count()))
    except Exception:  # ImportError (no torch_npu / no CANN libhccl.so) or a driver error
        pass
    return found


class _NoTool(Exception):
    """The vendor tool is not installed: nothing can hold the device (a configured, fake inventory)."""


def _run(argv: list[str]) -> str | None:
    """The tool's stdout; None if it failed (device state unknown); _NoTool if it is not installed."""
    if shutil.which(argv[0]) is None:
        log.warning("cannot check device hygiene: %s is not installed; treating the device as free", argv[0])
        raise _NoTool(argv[0])
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return None


def cuda_busy(device: int) -> bool:
    """True if a compute process still holds CUDA device `device` (per nvidia-smi). NOT RUN HERE."""
    gpus = _run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"])
    apps = _run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid", "--format=csv,noheader"])
    if gpus is None or apps is None:
        return True  # cannot prove it is free: quarantine rather than hand out a dirty device
    uuid = {int(i): u.strip() for i, u in (line.split(",", 1) for line in gpus.splitlines() if line.strip())}
    return any(line.split(",")[1].strip() == uuid.get(device) for line in apps.splitlines() if "," in line)


def npu_busy(device: int) -> bool:
    """True if npu-smi lists a process on NPU `device`. NOT RUN HERE; the table format is CANN's
    `npu-smi info` (process rows: | NPU Chip | Process id | Process name | Memory |)."""
    out = _run(["npu-smi", "info"])
    if out is None:
        return True
    in_procs = False
    for line in out.splitlines():
        if "Process id" in line:
            in_procs = True
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if in_procs and len(cells) >= 2 and cells[0].split()[:1] == [str(device)] and cells[1].isdigit():
            return True
    return False


def host_busy_check(kind: str, device: int) -> bool:
    """Vendor-tool check; a tool that fails means "unknown", which quarantines (never hand out a
    device we could not prove free); a tool that is absent means there is nothing to hold it."""
    try:
        return {"cuda": cuda_busy, "npu": npu_busy}.get(kind, lambda _d: False)(device)
    except _NoTool:
        return False


TOOL = {"cuda": "nvidia-smi", "npu": "npu-smi info"}


def check_free(grant: DeviceGrant, busy_check: BusyCheck | None = None) -> None:
    """Before a run's first kernel starts: a granted device that another process holds (another service on
    this host given the same devices, a process left behind) is a shortage of the host, so the job waits
    unattempted (HostBusy) rather than failing on a device it cannot use. Unknown state counts as held."""
    if grant.kind == "cpu" or not grant.ids:
        return
    check = busy_check or host_busy_check  # looked up now, so a test can swap the module's check
    held = [i for i in grant.ids if check(grant.kind, i)]
    if held:
        tool = TOOL.get(grant.kind, grant.kind)
        raise HostBusy(
            f"{grant.kind} device(s) {held} granted to this job are held by another process (or `{tool}` could "
            "not tell); the job waits and is retried without counting an attempt. If it lasts: find and end "
            f"the process with `{tool}`, and give each service on this host its own devices "
            "(TITANGRADE_WORKER_DEVICES)",
            resource="device",
        )


class DeviceInventory:
    """The worker's accelerators; `acquire` hands out disjoint grants, `release` checks hygiene.

    A device that is still busy after its job (a leaked process, a stuck context) is quarantined: never
    handed out again until `recheck` finds it clean (the worker probes between jobs) or an operator calls
    `unquarantine`.
    """

    def __init__(
        self,
        devices: Mapping[str, Iterable[int]],
        *,
        busy_check: BusyCheck = host_busy_check,
        label: str = "configured",
    ) -> None:
        self.label = label
        self._all = {kind: sorted(set(ids)) for kind, ids in devices.items() if kind != "cpu"}
        self._free = {kind: list(ids) for kind, ids in self._all.items()}
        self.quarantined: dict[str, set[int]] = {kind: set() for kind in self._all}
        self._busy = busy_check
        self._lock = threading.Lock()

    @classmethod
    def detect(cls) -> DeviceInventory:
        return cls(detect(), label="detected")

    @classmethod
    def from_spec(cls, spec: str) -> DeviceInventory:
        """Parse a setting like "cuda:0,1;npu:0-7" (empty = CPU only)."""
        devices: dict[str, list[int]] = {}
        for part in filter(None, (p.strip() for p in spec.split(";"))):
            kind, _, ids = part.partition(":")
            if kind not in VISIBLE_ENV:
                raise ValueError(f"unknown device kind {kind!r} in {spec!r}; use cuda:IDS or npu:IDS")
            for item in filter(None, ids.split(",")):
                lo, _, hi = item.partition("-")
                devices.setdefault(kind, []).extend(range(int(lo), int(hi or lo) + 1))
        return cls(devices)

    def installed(self, kind: str) -> int:
        """Devices of `kind` this worker has, quarantined ones included (they come back when clean)."""
        return len(self._all.get(kind, ()))

    def total(self, kind: str) -> int:
        with self._lock:
            return len(self._all.get(kind, ())) - len(self.quarantined.get(kind, ()))

    def can_satisfy(self, resources: Resources) -> bool:
        """Could this worker ever run a job needing `resources` (ignoring what is busy right now)?"""
        if resources.devices == 0 or resources.cpu_fallback:
            return True
        return any(self.total(k) >= resources.devices for k in resources.accelerator_kinds)

    def kind_for(self, resources: Resources) -> str | None:
        """The accelerator kind this worker runs `resources` on: the first accepted kind it has enough of
        (busy or quarantined ones too: those come back); None = it has too few, so the job falls back to the
        CPU or cannot run here."""
        return next((k for k in resources.accelerator_kinds if self.installed(k) >= resources.devices), None)

    def acquire(self, kind: str, count: int) -> DeviceGrant | None:
        """Exactly `count` free devices of `kind`, or None if not that many are free now."""
        if kind == "cpu" or count == 0:
            return DeviceGrant()
        with self._lock:
            free = self._free.get(kind, [])
            if len(free) < count:
                return None
            ids, self._free[kind] = free[:count], free[count:]
            return DeviceGrant(kind=kind, ids=tuple(ids))

    def acquire_for(self, resources: Resources) -> DeviceGrant | None:
        """Devices of the kind this worker runs the exercise on (`kind_for`), None while they are busy; a
        CPU grant where the worker has too few of the accepted kinds and the exercise falls back to CPU."""
        if resources.devices == 0:
            return DeviceGrant()
        kind = self.kind_for(resources)
        if kind is None:
            return DeviceGrant() if resources.cpu_fallback else None
        return self.acquire(kind, resources.devices)

    def release(self, grant: DeviceGrant) -> list[int]:
        """Return `grant`'s devices; those still busy are quarantined and listed in the result."""
        if grant.kind == "cpu":
            return []
        dirty = [i for i in grant.ids if self._busy(grant.kind, i)]
        with self._lock:
            for i in grant.ids:
                if i in dirty:
                    self.quarantined[grant.kind].add(i)
                elif i not in self._free[grant.kind]:
                    self._free[grant.kind].append(i)
            self._free[grant.kind].sort()
        return dirty

    def recheck(self) -> dict[str, list[int]]:
        """Probe every quarantined device again; those found clean go back to the pool (returned by kind).
        The worker calls it between jobs, so a device left busy is out only until it is clean."""
        with self._lock:
            held = {kind: sorted(ids) for kind, ids in self.quarantined.items() if ids}
        clean = {kind: [i for i in ids if not self._busy(kind, i)] for kind, ids in held.items()}
        clean = {kind: ids for kind, ids in clean.items() if ids}
        for kind, ids in clean.items():
            for i in ids:
                self.unquarantine(kind, i)
        return clean

    def unquarantine(self, kind: str, device: int) -> None:
        with self._lock:
            if device in self.quarantined.get(kind, set()):
                self.quarantined[kind].discard(device)
                self._free[kind].append(device)
                self._free[kind].sort()


def node_globs() -> list[str]:
    """Every accelerator node present on this host (for docs and diagnostics)."""
    return sorted(glob.glob("/dev/nvidia*") + glob.glob("/dev/davinci*"))
