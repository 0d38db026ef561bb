"""How this host's control groups are laid out, and the file access of one group: cgroup v1 (a hierarchy per
controller, e.g. these CI machines) or v2 (unified; needs the service's group delegated, systemd
`Delegate=yes`), detected once from /proc/self/cgroup and mountinfo (`detect()`).

The v2 code is written to the kernel's documented interface but has not been run here (the CI machines bind
memory, pids and cpu to v1 hierarchies); tests/grading/sandbox/test_sandbox_cgroups.py checks its file
layout on a directory tree shaped like cgroupfs (labelled a fake there). The lifecycle of a run's group
(made, joined, read, removed) is in cgroups.py.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from grading.sandbox.cpu_usage import CpuFiles

PREFIX = "titangrade-"
SERVICE_LEAF = "titangrade-service"  # v2: where the service's own processes move if its group must delegate
CONTROLLERS = ("memory", "pids", "cpu")
V1_ACCOUNTING = "cpuacct"  # v1: the run's CPU usage (issue 24); used where mounted, its own or with cpu
MEMORY, PROCESSES = "memory limit", "process limit"  # the labels watch.py reports (no import: watch needs zmq)
OPTIONAL = {"memory.memsw.limit_in_bytes", "memory.swap.max"}  # exist only where swap is accounted
MiB = 1024 * 1024
DEFAULT_WEIGHT = 10  # a run's CPU weight (v2 units): a tenth of a service process's under contention


@dataclass(frozen=True, kw_only=True)
class Counters:
    """What a group's kernel counters say; `oom_kills` and `pids_denied` only ever grow."""

    oom_kills: int = 0
    pids_denied: int = 0  # forks refused because the group was at pids.max
    memory_peak_bytes: int = 0
    pids_peak: int = 0

    def limits_since(self, before: Counters) -> set[str]:
        hits = set()
        if self.oom_kills > before.oom_kills:
            hits.add(MEMORY)
        if self.pids_denied > before.pids_denied:
            hits.add(PROCESSES)
        return hits


def read_file(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _keyed(text: str, key: str) -> int:
    """`key N` lines (memory.events, pids.events, memory.oom_control) -> N, 0 if absent."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _int(text: str) -> int:
    text = text.strip()
    return int(text) if text.isdigit() else 0


def write_file(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


class Layout(abc.ABC):
    """How one cgroup version names things. `bases` maps a controller to the service's own group dir."""

    version = "abstract"

    def __init__(self, bases: dict[str, Path]) -> None:
        self.bases = bases

    def dirs(self, name: str) -> tuple[Path, ...]:
        return tuple(dict.fromkeys(base / name for base in self.bases.values()))

    @abc.abstractmethod
    def limit_files(
        self, *, memory_mb: int, max_processes: int, cpus: float, weight: int = DEFAULT_WEIGHT
    ) -> dict[str, list[tuple[str, str]]]:
        """controller -> [(file, value)] in the order they must be written."""

    @abc.abstractmethod
    def counters(self, name: str) -> Counters: ...

    @abc.abstractmethod
    def cpu_files(self, name: str) -> CpuFiles | None:
        """Where group `name`'s CPU usage is read (None: this layout cannot tell)."""

    def reset_peaks(self, name: str) -> None:  # noqa: B027  (optional hook)
        """Restart peak accounting where the kernel allows it (a pre-warmed kernel handed out)."""

    def kill_all(self, directory: Path) -> None:
        for pid in read_file(directory / "cgroup.procs").split():
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid), signal.SIGKILL)

    def prepare(self) -> None:  # noqa: B027  (optional hook)
        """Make the service's group able to hold child groups with these controllers (v2 only)."""

    def describe(self) -> str:
        return f"cgroup {self.version} under " + ", ".join(sorted({str(p) for p in self.bases.values()}))


class V1(Layout):
    """One hierarchy per controller (memory, pids, cpu[,cpuacct]); a run's group exists in each."""

    version = "v1"

    def limit_files(
        self, *, memory_mb: int, max_processes: int, cpus: float, weight: int = DEFAULT_WEIGHT
    ) -> dict[str, list[tuple[str, str]]]:
        limit = str(memory_mb * MiB)
        memory = [("memory.limit_in_bytes", limit), ("memory.memsw.limit_in_bytes", limit)]  # no swap
        # every run weighs the same, however many processes it starts; v1's 1024 shares are v2's weight 100
        cpu = [("cpu.shares", str(max(2, round(weight * 1024 / 100))))]
        if cpus > 0:
            cpu += [("cpu.cfs_period_us", "100000"), ("cpu.cfs_quota_us", str(int(cpus * 100000)))]
        files = {"memory": memory, "pids": [("pids.max", str(max_processes))], "cpu": cpu}
        if V1_ACCOUNTING in self.bases:
            files[V1_ACCOUNTING] = []  # the group only counts there
        return files

    def cpu_files(self, name: str) -> CpuFiles | None:
        if V1_ACCOUNTING not in self.bases:
            return None
        cpu = self.bases["cpu"] / name
        return CpuFiles(
            usage=self.bases[V1_ACCOUNTING] / name / "cpuacct.usage",
            usage_key="",
            usage_per_s=1e9,
            stat=cpu / "cpu.stat",
            throttled_key="throttled_time",
            throttled_per_s=1e9,
            procs=cpu / "cgroup.procs",
        )

    def counters(self, name: str) -> Counters:
        memory, pids = self.bases["memory"] / name, self.bases["pids"] / name
        return Counters(
            oom_kills=_keyed(read_file(memory / "memory.oom_control"), "oom_kill"),
            pids_denied=_keyed(read_file(pids / "pids.events"), "max"),
            memory_peak_bytes=_int(read_file(memory / "memory.max_usage_in_bytes")),
            pids_peak=_int(read_file(pids / "pids.peak")),
        )

    def reset_peaks(self, name: str) -> None:
        with contextlib.suppress(OSError):
            write_file(self.bases["memory"] / name / "memory.max_usage_in_bytes", "0")


class V2(Layout):
    """The unified hierarchy: one group per run with all three controllers. Not run on these machines."""

    version = "v2"

    def limit_files(
        self, *, memory_mb: int, max_processes: int, cpus: float, weight: int = DEFAULT_WEIGHT
    ) -> dict[str, list[tuple[str, str]]]:
        memory = [("memory.max", str(memory_mb * MiB)), ("memory.swap.max", "0")]
        quota = f"{int(cpus * 100000)} 100000" if cpus > 0 else "max 100000"
        return {
            "memory": memory,
            "pids": [("pids.max", str(max_processes))],
            "cpu": [("cpu.weight", str(weight)), ("cpu.max", quota)],
        }

    def cpu_files(self, name: str) -> CpuFiles | None:
        d = self.bases["cpu"] / name
        return CpuFiles(
            usage=d / "cpu.stat",
            usage_key="usage_usec",
            usage_per_s=1e6,
            stat=d / "cpu.stat",
            throttled_key="throttled_usec",
            throttled_per_s=1e6,
            procs=d / "cgroup.procs",
        )

    def counters(self, name: str) -> Counters:
        d = self.bases["memory"] / name
        return Counters(
            oom_kills=_keyed(read_file(d / "memory.events"), "oom_kill"),
            pids_denied=_keyed(read_file(d / "pids.events"), "max"),
            memory_peak_bytes=_int(read_file(d / "memory.peak")),
            pids_peak=_int(read_file(d / "pids.peak")),
        )

    def kill_all(self, directory: Path) -> None:
        if (directory / "cgroup.kill").exists():  # Linux 5.14+: the whole group at once, no pid races
            try:
                write_file(directory / "cgroup.kill", "1")
                return
            except OSError:
                pass
        super().kill_all(directory)

    def prepare(self) -> None:
        """Enable memory, pids and cpu for child groups. A non-root group with processes cannot (the
        "no internal processes" rule), so the service's own processes move to a leaf first."""
        base = self.bases["memory"]
        enabled = set(read_file(base / "cgroup.subtree_control").split())
        missing = [c for c in CONTROLLERS if c not in enabled]
        if not missing:
            return
        available = set(read_file(base / "cgroup.controllers").split())
        if not set(missing) <= available:
            raise OSError(errno.EPERM, f"controllers {sorted(set(missing) - available)} are not delegated to {base}")
        enable = " ".join(f"+{c}" for c in missing)
        try:
            write_file(base / "cgroup.subtree_control", enable)
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:  # EBUSY: the group holds processes (the root group never says so)
                raise
        leaf = base / SERVICE_LEAF
        leaf.mkdir(exist_ok=True)
        for pid in read_file(base / "cgroup.procs").split():
            with contextlib.suppress(OSError):  # it exited meanwhile
                write_file(leaf / "cgroup.procs", pid)
        write_file(base / "cgroup.subtree_control", enable)


# ---- detection -------------------------------------------------------------------------------------


def _unescape(path: str) -> str:
    return path.encode().decode("unicode_escape") if "\\" in path else path


def _mounts(mountinfo: str) -> list[tuple[str, str, str, set[str]]]:
    """(fstype, root, mount point, super options) of each cgroup mount in /proc/self/mountinfo."""
    found = []
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((tail[0], _unescape(fields[3]), _unescape(fields[4]), set(tail[2].split(","))))
    return found


def _under(mount: str, root: str, path: str) -> Path | None:
    """The directory of cgroup `path` in a mount of hierarchy root `root`, or None if outside it."""
    rel = os.path.relpath(path, root) if root != "/" else path.lstrip("/")
    if rel.startswith(".."):
        return None
    return Path(mount, rel) if rel not in ("", ".") else Path(mount)


def detect(proc_cgroup: str | None = None, mountinfo: str | None = None) -> Layout:
    """The host's layout for the service's own groups; raises OSError naming what is missing."""
    proc_cgroup = Path("/proc/self/cgroup").read_text() if proc_cgroup is None else proc_cgroup
    mountinfo = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
    own_v1: dict[str, str] = {}
    own_v2 = None
    for line in proc_cgroup.splitlines():
        hid, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hid == "0" and controllers == "":
            own_v2 = path
        else:
            for c in controllers.split(","):
                own_v1[c] = path
    mounts = _mounts(mountinfo)
    v1: dict[str, Path] = {}
    for fstype, root, mount, options in mounts:
        for c in CONTROLLERS:
            if fstype == "cgroup" and c in options and c in own_v1 and c not in v1:
                where = _under(mount, root, own_v1[c])
                if where is not None:
                    v1[c] = where
    if len(v1) == len(CONTROLLERS):
        for fstype, root, mount, options in mounts:
            if fstype == "cgroup" and V1_ACCOUNTING in options and V1_ACCOUNTING in own_v1:
                where = _under(mount, root, own_v1[V1_ACCOUNTING])
                if where is not None:
                    v1[V1_ACCOUNTING] = where
                    break
        return V1(v1)
    if own_v2 is not None:
        for fstype, root, mount, _ in mounts:
            if fstype != "cgroup2":
                continue
            where = _under(mount, root, own_v2)
            if where is None:
                continue
            if where.name == SERVICE_LEAF:  # a previous start already moved the service into its leaf
                where = where.parent
            available = set(read_file(where / "cgroup.controllers").split())
            if set(CONTROLLERS) <= available:
                return V2(dict.fromkeys(CONTROLLERS, where))
    missing = sorted(set(CONTROLLERS) - set(v1))
    raise OSError(
        errno.ENOENT,
        f"no usable cgroup layout: controllers {missing} are neither mounted as v1 "
        "hierarchies nor available in the service's v2 group",
    )
