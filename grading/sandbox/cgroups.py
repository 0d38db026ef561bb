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

The two layouts (cgroup v1 and v2), their detection and the files of one group are in cgroup_layout.py;
this module is a run's group's lifecycle: made, joined, read, removed, and the start-up probe.

The sandbox's first process enters its group before it execs bwrap (`RunGroup.exec_prefix`: a shell that
writes itself into the group, then execs), so bwrap and everything under it are born inside; nothing
of a run ever runs outside it. (Not Popen's preexec_fn: Python code between fork and exec can deadlock
in a process with threads, and the worker has several.)
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grading.errors import HostBusy
from grading.sandbox.cgroup_layout import (
    CONTROLLERS,
    DEFAULT_WEIGHT,
    MEMORY,
    OPTIONAL,
    PREFIX,
    PROCESSES,
    SERVICE_LEAF,
    V1,
    V1_ACCOUNTING,
    V2,
    Counters,
    Layout,
    detect,
    read_file,
    write_file,
)
from grading.sandbox.cpu_usage import CpuSample, sample
from grading.sandbox.probe import Probe

__all__ = [  # the layout's names, re-exported: callers and tests know them from here
    "CONTROLLERS",
    "DEFAULT_WEIGHT",
    "MEMORY",
    "NO_GROUP",
    "PREFIX",
    "PROCESSES",
    "V1",
    "V1_ACCOUNTING",
    "V2",
    "Counters",
    "Layout",
    "RunGroup",
    "RunGroups",
    "detect",
    "probe",
    "run_groups",
]
FIX = (
    "run the worker as root in a cgroup it may create child groups under: cgroup v1 with the memory, "
    "pids and cpu hierarchies mounted, or cgroup v2 with those controllers delegated (systemd unit "
    "`Delegate=yes`; docker `--cgroupns=host` or a writable /sys/fs/cgroup)"
)
log = logging.getLogger(__name__)


class RunGroup:
    """One run's group (a directory per v1 hierarchy, one for v2). `join` runs in the forked child."""

    def __init__(self, layout: Layout | None, name: str) -> None:
        self.layout, self.name = layout, name
        self._dirs = layout.dirs(name) if layout else ()
        self._procs = [str(d / "cgroup.procs") for d in self._dirs]
        self._base = self._last = Counters()
        self.final: Counters | None = None  # the counters as the run ended (after destroy)

    def procs_files(self) -> list[str]:
        """The group's cgroup.procs files: a process writing "0" to each joins the run (forkserver.py)."""
        return list(self._procs)

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
    return not _remove_why(layout, dirs, timeout_s)


def _remove_why(layout: Layout, dirs: Iterable[Path], timeout_s: float) -> str:
    """Kill what is inside and rmdir each dir; "" once gone, else why not ("busy: ..." while something is
    still inside when `timeout_s` ends, else the error)."""
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
                    return f"cannot remove {d}: {exc.strerror or exc}"
        left = [d for d in left if d.exists()]
        if left:
            if time.monotonic() > deadline:
                log.warning("cgroup(s) %s still hold processes after %.0f s", left, timeout_s)
                return "busy: " + "; ".join(_inside(d) for d in left)
            time.sleep(pause_s)
            pause_s = min(pause_s * 2, 0.02)
    return ""


def _inside(directory: Path) -> str:
    """What keeps `directory` from being removed: the pids SIGKILL did not end, or child groups."""
    pids = read_file(directory / "cgroup.procs").split()
    try:
        children = sorted(p.name for p in directory.iterdir() if p.is_dir())
    except OSError:  # removed meanwhile
        children = []
    parts = [f"pids {' '.join(pids[:8])}{' ...' if len(pids) > 8 else ''}"] if pids else []
    parts += [f"child groups {', '.join(children[:4])}"] if children else []
    return f"{directory} holds {' and '.join(parts) or 'something the kernel has not released yet'}"


# errors of mkdir/write in a cgroup that mean "not now" (a limit of the host's groups, memory, a busy
# group), not "never" (EACCES/EPERM: not root or not delegated; ENOENT: the hierarchy is gone)
SHORTAGE_ERRNOS = frozenset({errno.EBUSY, errno.EAGAIN, errno.ENOSPC, errno.ENOMEM, errno.EROFS, errno.EINTR})


@dataclass(kw_only=True)
class RunGroups:
    """Makes and removes the runs' groups; `layout` None means control groups are off (NO_GROUP runs)."""

    layout: Layout | None
    cpus_per_run: float = 0.0  # quota in cores; 0 = none (equal weight only)
    cpu_weight: int = DEFAULT_WEIGHT  # every run's weight, v2 units (100 = a plain process's)
    reason: str = ""  # why off, or where the groups live
    leftover_wait_s: float = 5.0  # how long a leftover group's processes may take to die before HostBusy

    @property
    def enabled(self) -> bool:
        return self.layout is not None

    def create(self, user: str, *, memory_mb: int, max_processes: int) -> RunGroup:
        """A fresh group for the run of sandbox user `user`; a leftover of a crashed run is removed first."""
        if self.layout is None:
            return NO_GROUP
        name = PREFIX + user
        group = RunGroup(self.layout, name)
        why = _remove_why(self.layout, group._dirs, self.leftover_wait_s)
        if why.startswith("busy: "):
            raise HostBusy(
                f"control group {name} of a previous run cannot be removed: {why.removeprefix('busy: ')} "
                f"(still alive {self.leftover_wait_s:.0f} s after SIGKILL: frozen, or stuck in the kernel in "
                "D state); the job waits and is retried without counting an attempt. If it lasts, end or thaw "
                "those processes (`ps -o pid,stat,wchan -p PID`, the freezer group's freezer.state) and rmdir "
                "the group",
                resource="control group",
            )
        if why:
            raise OSError(errno.EBUSY, f"leftover cgroup {name} cannot be removed ({why})")
        try:
            for controller, files in self.layout.limit_files(
                memory_mb=memory_mb, max_processes=max_processes, cpus=self.cpus_per_run, weight=self.cpu_weight
            ).items():
                d = self.layout.bases[controller] / name
                d.mkdir(exist_ok=True)
                for filename, value in files:
                    if filename not in OPTIONAL or (d / filename).exists():
                        write_file(d / filename, value)
        except OSError as exc:
            _remove(self.layout, group._dirs, 1.0)
            if exc.errno in SHORTAGE_ERRNOS:
                raise HostBusy(
                    f"control group {name} cannot be made now ({exc.strerror or exc} on {exc.filename or name}): "
                    "the host's control groups are at a limit (cgroup.max.descendants, pids or memory of the "
                    "service's group) or busy; the job waits and is retried without counting an attempt. If it "
                    f"lasts, look for groups left behind and those limits under {self.layout.describe()}",
                    resource="control group",
                ) from exc
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
    except (OSError, HostBusy) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return Probe(False, f"control groups cannot be used here ({why}); {FIX}")
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
