"""Whole-run limits: one control group per sandbox run, holding every process the run starts.

RLIMIT_AS and RLIMIT_NPROC bound one process and one uid; a run's memory as a whole (all its processes,
the page cache it pulls in, the pages of its tmpfs scratch and /dev/shm) and its share of the CPU need a
control group. Each run gets `<service's own group>/titangrade-<sandbox user>` with memory at
`memory_mb` (no swap), pids at `max_processes` and an equal CPU weight (plus an optional quota in
cores). The weight (`cpu_weight`, cgroup v2 units: 100 is a process's default) is below the service's own
processes by default, so a grading run takes every idle cycle but yields to the API under contention: an
intake burst is answered at once and the queue catches up after it. The group is named after the run's
sandbox user, which one live sandbox holds at a time on a host (an flock, see users.py), so a crashed
worker's group is found and removed by the next owner of that user, and by the start-up sweep.

Two layouts, detected once (`detect()`): cgroup v1 (a hierarchy per controller, e.g. these CI
machines) and v2 (unified; needs the service's group delegated, systemd `Delegate=yes`). The v2 code is
written to the kernel's documented interface but has not been run here (the CI machines bind memory,
pids and cpu to v1 hierarchies); tests/grading/sandbox/test_sandbox_cgroups.py checks its file layout
on a directory tree shaped like cgroupfs (labelled a fake there).

The sandbox's first process enters its group before it execs bwrap (`RunGroup.exec_prefix`: a shell that
writes itself into the group, then execs), so bwrap and everything under it are born inside; nothing
of a run ever runs outside it. (Not Popen's preexec_fn: Python code between fork and exec can deadlock
in a process with threads, and the worker has several.)
"""

from __future__ import annotations

import abc
import contextlib
import errno
import functools
import logging
import os
import shlex
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grading.sandbox.cpu_usage import CpuFiles, CpuSample, sample
from grading.sandbox.probe import Probe

PREFIX = "titangrade-"
SERVICE_LEAF = "titangrade-service"  # v2: where the service's own processes move if its group must delegate
CONTROLLERS = ("memory", "pids", "cpu")
V1_ACCOUNTING = "cpuacct"  # v1: the run's CPU usage (issue 24); used where mounted, its own or with cpu
MEMORY, PROCESSES = "memory limit", "process limit"  # the labels watch.py reports (no import: watch needs zmq)
FIX = (
    "run the worker as root in a cgroup it may create child groups under: cgroup v1 with the memory, "
    "pids and cpu hierarchies mounted, or cgroup v2 with those controllers delegated (systemd unit "
    "`Delegate=yes`; docker `--cgroupns=host` or a writable /sys/fs/cgroup)"
)
OPTIONAL = {"memory.memsw.limit_in_bytes", "memory.swap.max"}  # exist only where swap is accounted
MiB = 1024 * 1024
DEFAULT_WEIGHT = 10  # a run's CPU weight (v2 units): a tenth of a service process's under contention
log = logging.getLogger(__name__)


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


def _read(path: Path) -> str:
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


def _write(path: Path, value: str) -> None:
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
        for pid in _read(directory / "cgroup.procs").split():
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
            oom_kills=_keyed(_read(memory / "memory.oom_control"), "oom_kill"),
            pids_denied=_keyed(_read(pids / "pids.events"), "max"),
            memory_peak_bytes=_int(_read(memory / "memory.max_usage_in_bytes")),
            pids_peak=_int(_read(pids / "pids.peak")),
        )

    def reset_peaks(self, name: str) -> None:
        with contextlib.suppress(OSError):
            _write(self.bases["memory"] / name / "memory.max_usage_in_bytes", "0")


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
            oom_kills=_keyed(_read(d / "memory.events"), "oom_kill"),
            pids_denied=_keyed(_read(d / "pids.events"), "max"),
            memory_peak_bytes=_int(_read(d / "memory.peak")),
            pids_peak=_int(_read(d / "pids.peak")),
        )

    def kill_all(self, directory: Path) -> None:
        if (directory / "cgroup.kill").exists():  # Linux 5.14+: the whole group at once, no pid races
            try:
                _write(directory / "cgroup.kill", "1")
                return
            except OSError:
                pass
        super().kill_all(directory)

    def prepare(self) -> None:
        """Enable memory, pids and cpu for child groups. A non-root group with processes cannot (the
        "no internal processes" rule), so the service's own processes move to a leaf first."""
        base = self.bases["memory"]
        enabled = set(_read(base / "cgroup.subtree_control").split())
        missing = [c for c in CONTROLLERS if c not in enabled]
        if not missing:
            return
        available = set(_read(base / "cgroup.controllers").split())
        if not set(missing) <= available:
            raise OSError(errno.EPERM, f"controllers {sorted(set(missing) - available)} are not delegated to {base}")
        enable = " ".join(f"+{c}" for c in missing)
        try:
            _write(base / "cgroup.subtree_control", enable)
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:  # EBUSY: the group holds processes (the root group never says so)
                raise
        leaf = base / SERVICE_LEAF
        leaf.mkdir(exist_ok=True)
        for pid in _read(base / "cgroup.procs").split():
            with contextlib.suppress(OSError):  # it exited meanwhile
                _write(leaf / "cgroup.procs", pid)
        _write(base / "cgroup.subtree_control", enable)


class RunGroup:
    """One run's group (a directory per v1 hierarchy, one for v2). `join` runs in the forked child."""

    def __init__(self, layout: Layout | None, name: str) -> None:
        self.layout, self.name = layout, name
        self._dirs = layout.dirs(name) if layout else ()
        self._procs = [str(d / "cgroup.procs") for d in self._dirs]
        self._base = self._last = Counters()
        self.final: Counters | None = None  # the counters as the run ended (after destroy)

    def exec_prefix(self) -> list[str]:
        """argv to put before the sandbox's command: it joins the group ("0" = the writing process), then
        execs the command under the same pid; a failed join ends it before anything of the run starts."""
        if not self._procs:
            return []
        joins = "; ".join(f"echo 0 > {shlex.quote(p)}" for p in self._procs)
        return ["/bin/sh", "-ec", f'{joins}; exec "$@"', "titangrade-cgroup-join"]

    def counters(self) -> Counters:
        if self.final is not None or self.layout is None:
            return self.final or Counters()
        return self.layout.counters(self.name)

    def cpu_sample(self) -> CpuSample | None:
        """The run's CPU used and waited for so far (None where it cannot be read, or once destroyed)."""
        if self.layout is None or self.final is not None:
            return None
        files = self.layout.cpu_files(self.name)
        return sample(files) if files is not None else None

    def reset(self) -> None:
        """Count limits from now on (a pre-warmed kernel handed to its submission)."""
        if self.layout is not None:
            self.layout.reset_peaks(self.name)
        self._base = self._last = self.counters()

    def poll(self) -> set[str]:
        """Limits enforced since the last poll (e.g. an OOM kill during the cell that just ran)."""
        now = self.counters()
        hits, self._last = now.limits_since(self._last), now
        return hits

    def hits(self) -> set[str]:
        """Limits enforced since the run began (or since `reset`)."""
        return self.counters().limits_since(self._base)

    def destroy(self, timeout_s: float = 5.0) -> bool:
        """Kill whatever is left inside and remove the group; False if it could not be removed."""
        if self.layout is None:
            return True
        if self.final is None:
            self.final = self.layout.counters(self.name)
        return _remove(self.layout, self._dirs, timeout_s)  # a second call retries (a no-op once removed)


NO_GROUP = RunGroup(None, "")  # where control groups are off: joins nothing, reports nothing


def _remove(layout: Layout, dirs: Iterable[Path], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    pause_s = 0.002  # killed processes usually leave the group within a few ms
    left = [d for d in dirs if d.exists()]
    while left:
        for d in left:
            layout.kill_all(d)
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    log.warning("cannot remove cgroup %s: %s", d, exc)
                    return False
        left = [d for d in left if d.exists()]
        if left:
            if time.monotonic() > deadline:
                log.warning("cgroup(s) %s still hold processes after %.0f s", left, timeout_s)
                return False
            time.sleep(pause_s)
            pause_s = min(pause_s * 2, 0.02)
    return True


@dataclass(kw_only=True)
class RunGroups:
    """Makes and removes the runs' groups; `layout` None means control groups are off (NO_GROUP runs)."""

    layout: Layout | None
    cpus_per_run: float = 0.0  # quota in cores; 0 = none (equal weight only)
    cpu_weight: int = DEFAULT_WEIGHT  # every run's weight, v2 units (100 = a plain process's)
    reason: str = ""  # why off, or where the groups live

    @property
    def enabled(self) -> bool:
        return self.layout is not None

    def create(self, user: str, *, memory_mb: int, max_processes: int) -> RunGroup:
        """A fresh group for the run of sandbox user `user`; a leftover of a crashed run is removed first."""
        if self.layout is None:
            return NO_GROUP
        name = PREFIX + user
        group = RunGroup(self.layout, name)
        if not _remove(self.layout, group._dirs, 5.0):
            raise OSError(errno.EBUSY, f"leftover cgroup {name} cannot be removed")
        try:
            for controller, files in self.layout.limit_files(
                memory_mb=memory_mb, max_processes=max_processes, cpus=self.cpus_per_run, weight=self.cpu_weight
            ).items():
                d = self.layout.bases[controller] / name
                d.mkdir(exist_ok=True)
                for filename, value in files:
                    if filename not in OPTIONAL or (d / filename).exists():
                        _write(d / filename, value)
        except OSError:
            _remove(self.layout, group._dirs, 1.0)
            raise
        return group

    def remove(self, user: str) -> bool:
        if self.layout is None:
            return True
        return _remove(self.layout, self.layout.dirs(PREFIX + user), 5.0)

    def sweep(self, uids) -> None:
        """Start-up: remove the groups of every sandbox user no live run holds (`uids` is the UidPool,
        whose per-user lock is held meanwhile) and of probes whose process is gone."""
        if self.layout is None:
            return
        uids.sweep(lambda user: self.remove(user.pw_name))
        for name in self.leftovers():
            pid = name.removeprefix("probe-")
            if pid != name and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                self.remove(name)

    def leftovers(self) -> list[str]:
        """Users whose groups exist under the service's group (live runs of this host included)."""
        if self.layout is None:
            return []
        found = set()
        for base in self.layout.bases.values():
            with contextlib.suppress(OSError):
                found |= {
                    p.name[len(PREFIX) :]
                    for p in base.iterdir()
                    if p.is_dir() and p.name.startswith(PREFIX) and p.name != SERVICE_LEAF
                }
        return sorted(found)


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
            available = set(_read(where / "cgroup.controllers").split())
            if set(CONTROLLERS) <= available:
                return V2(dict.fromkeys(CONTROLLERS, where))
    missing = sorted(set(CONTROLLERS) - set(v1))
    raise OSError(
        errno.ENOENT,
        f"no usable cgroup layout: controllers {missing} are neither mounted as v1 "
        "hierarchies nor available in the service's v2 group",
    )


@functools.cache
def probe() -> Probe:
    """Whether this host can give each run its own group (detected, prepared and tried once)."""
    if os.geteuid() != 0:
        return Probe(False, f"the grader is not root, so it cannot create control groups; {FIX}")
    try:
        layout = detect()
        layout.prepare()
        trial = RunGroups(layout=layout).create(f"probe-{os.getpid()}", memory_mb=256, max_processes=16)
        trial.destroy()
    except OSError as exc:
        return Probe(False, f"control groups cannot be used here ({exc.strerror or exc}); {FIX}")
    return Probe(True, layout.describe())


_warned = False


def run_groups(policy: str = "auto", *, cpus_per_run: float = 0.0, cpu_weight: int = DEFAULT_WEIGHT) -> RunGroups:
    """Choose once: "require" (GraderFault if unusable), "auto" (use if usable, else warn once), "off"."""
    global _warned
    from grading.errors import GraderFault

    if policy not in ("auto", "require", "off"):
        raise ValueError(f"unknown cgroups policy {policy!r}; use one of: auto, require, off")
    if policy == "off":
        return RunGroups(layout=None, reason="off by configuration")
    found = probe()
    if found.usable:
        return RunGroups(layout=detect(), cpus_per_run=cpus_per_run, cpu_weight=cpu_weight, reason=found.reason)
    if policy == "require":
        raise GraderFault(f"whole-run limits need control groups: {found.reason}", retryable=False)
    if not _warned:
        _warned = True
        log.warning("sandbox runs get no whole-run memory/process/CPU caps: %s", found.reason)
    return RunGroups(layout=None, reason=found.reason)
