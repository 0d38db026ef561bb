"""A run's control group that cannot be had now is a shortage of the host (HostBusy: the job waits,
unattempted), while a missing hierarchy stays an ordinary fault. Real cgroup v1 here: the leftover group's
process is really frozen (v1 freezer), so SIGKILL cannot end it until it is thawed."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from grading.errors import HostBusy
from grading.sandbox import cgroups
from grading.sandbox.cgroups import PREFIX, RunGroups, detect

CGROUPS = cgroups.probe()
needs_cgroups = pytest.mark.skipif(not CGROUPS.usable, reason=f"control groups unusable here: {CGROUPS.reason}")


def freezer_root() -> Path | None:
    """The v1 freezer hierarchy's mount point (None where it is not mounted, e.g. on cgroup v2)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        tail = right.split()
        if len(tail) >= 3 and tail[0] == "cgroup" and "freezer" in tail[2].split(","):
            return Path(left.split()[4])
    return None


needs_freezer = pytest.mark.skipif(freezer_root() is None, reason="needs the cgroup v1 freezer hierarchy")


@contextlib.contextmanager
def frozen_leftover(groups: RunGroups, name: str):
    """A previous run's group `PREFIX + name` still holding a live, frozen process (which a SIGKILL only ends
    once thawed): what a run stuck in the kernel leaves. Yields a function that thaws it."""
    assert groups.layout is not None
    proc = subprocess.Popen(["sleep", "600"])
    freezer = freezer_root() / f"titangrade-test-freeze-{os.getpid()}-{name}"  # type: ignore[operator]
    freezer.mkdir()

    def thaw() -> None:
        (freezer / "freezer.state").write_text("THAWED")

    try:
        for d in groups.layout.dirs(PREFIX + name):
            d.mkdir(exist_ok=True)
            (d / "cgroup.procs").write_text(str(proc.pid))
        (freezer / "cgroup.procs").write_text(str(proc.pid))
        (freezer / "freezer.state").write_text("FROZEN")
        deadline = time.monotonic() + 10
        while (freezer / "freezer.state").read_text().strip() != "FROZEN":
            assert time.monotonic() < deadline, "the freezer did not freeze the leftover's process"
            time.sleep(0.01)
        yield thaw
    finally:
        thaw()
        proc.kill()
        proc.wait()
        groups.remove(name)
        freezer.rmdir()


@needs_cgroups
@needs_freezer
def test_a_leftover_group_whose_process_cannot_be_killed_is_a_host_shortage_until_it_dies():
    groups = RunGroups(layout=detect(), leftover_wait_s=0.3)
    name = f"shortage-{os.getpid()}"
    with frozen_leftover(groups, name) as thaw:
        with pytest.raises(HostBusy) as busy:  # old code: OSError (EBUSY), which the sandbox made a GraderFault
            groups.create(name, memory_mb=64, max_processes=8)
        assert busy.value.resource == "control group" and busy.value.retryable
        message = str(busy.value)
        assert f"control group {PREFIX}{name} of a previous run cannot be removed" in message
        assert "holds pids" in message and "without counting an attempt" in message and "freezer" in message
        thaw()  # the pending SIGKILL ends it: the next run gets its group
        group = groups.create(name, memory_mb=64, max_processes=8)
        assert all(d.is_dir() for d in groups.layout.dirs(PREFIX + name))  # type: ignore[union-attr]
        assert group.destroy()


def test_a_missing_hierarchy_stays_an_ordinary_fault_not_a_shortage(tmp_path):
    """FAKE cgroupfs (plain dirs): the service's group is gone, which waiting does not fix."""
    svc = tmp_path / "svc"
    for f, text in (("cgroup.controllers", "cpu memory pids\n"), ("cgroup.subtree_control", "+memory +pids +cpu")):
        svc.mkdir(exist_ok=True)
        (svc / f).write_text(text)
    layout = detect("0::/svc\n", f"41 31 0:38 / {tmp_path} rw,relatime - cgroup2 cgroup2 rw\n")
    shutil.rmtree(svc)
    with pytest.raises(OSError) as fault:
        RunGroups(layout=layout).create("tgsbx0", memory_mb=64, max_processes=8)
    assert not isinstance(fault.value, HostBusy)
