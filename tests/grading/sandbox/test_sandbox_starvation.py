"""A busy host is never charged to the learner (issue 24): real bwrap, real cgroup v1 groups, real kernels.

Starvation is made deterministic by the test itself: it caps the run's control group at 2% of one core
(v1 `cpu.cfs_quota_us`, v2 `cpu.max`) once the kernel is up, so however quiet or busy the machine is,
the cell cannot get the CPU its limit implies. The learner's own timeouts (a busy loop beside CPU hogs
in other groups, a cell that only sleeps) must stay the learner's.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest
from sandbox_helpers import FIXTURES, Runner, needs_bwrap

from grading.exercise import Catalogue, Limits
from grading.pipeline import grade_notebook
from grading.result import Status
from grading.sandbox import KernelRequest, cgroups
from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

CGROUPS = cgroups.probe()
needs_cgroups = pytest.mark.skipif(not CGROUPS.usable, reason=f"control groups unusable here: {CGROUPS.reason}")
SPINNERS = (
    "import multiprocessing as mp, time\n"
    "def spin(s):\n"
    "    end = time.time() + s\n"
    "    while time.time() < end: pass\n"
    "procs = [mp.Process(target=spin, args=({seconds},)) for _ in range({count})]\n"
    "[p.start() for p in procs]\n"
)


@pytest.fixture(scope="module")
def sandbox():
    if not CGROUPS.usable:
        pytest.skip(CGROUPS.reason)
    box = BwrapSandbox(BwrapConfig(cgroups="require"))
    if box.groups.layout is None or box.groups.layout.cpu_files("x") is None:
        pytest.skip("this host's control groups cannot tell a run's CPU usage (no cpuacct hierarchy)")
    return box


def catalogue_with(tmp_path, **limits: float) -> Catalogue:
    """sbx_timers (light, a 1 s function check) with the given [limits] replaced or added."""
    root = tmp_path / "catalogue"
    shutil.copytree(FIXTURES / "catalogue", root)
    manifest = root / "exercises" / "ch05" / "sbx_timers" / "exercise.toml"
    text = manifest.read_text()
    for key, value in limits.items():
        lines = [ln for ln in text.splitlines() if not ln.startswith(f"{key} =")]
        at = lines.index("[limits]") + 1
        text = "\n".join([*lines[:at], f"{key} = {value}", *lines[at:]]) + "\n"
    manifest.write_text(text)
    return Catalogue(root / "exercises", root / "reference")


def notebook(*cells: str) -> str:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["titangrade"] = {"exercise_id": "ch05.sbx_timers"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nbformat.writes(nb)


class Throttled:
    """Starts kernels as the real sandbox does, then caps each run's group at `cores` of a core (the
    test's stand-in for a host that gives the run almost nothing)."""

    mode = "bwrap"

    def __init__(self, inner: BwrapSandbox, cores: float) -> None:
        self.inner, self.cores = inner, cores

    def start(self, request):
        session = self.inner.start(request)
        layout = self.inner.groups.layout
        d = layout.bases["cpu"] / session.group.name
        quota = int(self.cores * 100000)
        if isinstance(layout, cgroups.V1):
            (d / "cpu.cfs_period_us").write_text("100000")
            (d / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (d / "cpu.max").write_text(f"{quota} 100000")
        return session


DOUBLE = "def double(v):\n    return 2 * v"


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_a_cell_the_host_starves_is_a_grader_fault_not_the_learners_timeout(sandbox, tmp_path):
    # 2% of a core for 4 x 3 s = 12 s gives at most 0.24 CPU-s; the 3 s limit implies 1.5
    catalogue = catalogue_with(tmp_path, cell_timeout_s=3, run_timeout_s=60, wall_backstop_factor=4)
    work = "total = sum(i * i for i in range(10 ** 8))"  # correct code that needs its CPU
    result = grade_notebook(notebook("x = 6 * 7", work, DOUBLE), catalogue=catalogue, sandbox=Throttled(sandbox, 0.02))
    # not_gradable is a grader fault: the worker hands it back for another attempt (never a score)
    assert result.status is Status.NOT_GRADABLE and result.score == 0, (result.status, result.message)
    assert "kept the CPU from learner cell 1" in result.message, result.message
    assert "not the learner's timeout" in result.message and not result.checks, result.message


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_a_cell_that_only_sleeps_is_the_learners_timeout_even_when_its_run_gets_little_cpu(sandbox, tmp_path):
    # It never asks for the CPU, so a host that gives it none did not take the time: a stopped or
    # sleeping kernel cannot turn its own timeout into a grader fault (a veto on its grading).
    catalogue = catalogue_with(tmp_path, cell_timeout_s=2, run_timeout_s=60, wall_backstop_factor=4)
    sleeper = notebook("x = 6 * 7", "import time\ntime.sleep(600)", DOUBLE)
    result = grade_notebook(sleeper, catalogue=catalogue, sandbox=Throttled(sandbox, 0.05))
    assert result.cells[1].status == "timeout" and "time limit" in result.limits_hit, result.cells
    assert result.status is Status.ERROR, result.message  # the learner's timeout; run on, it would be starved
    assert next(c.score for c in result.checks if c.name == "product") == 1


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_a_busy_loop_beside_cpu_hogs_is_still_the_learners_timeout(sandbox, tmp_path):
    # The loop gets a share of the CPU, however small, and spends it: once it has used the 0.5 CPU-s its
    # 1 s limit implies it is the learner's timeout. The backstop (100 x 1 s) is far beyond what even a
    # 1/50 share of a core needs for that, so the machine's own load does not decide the outcome.
    catalogue = catalogue_with(tmp_path, cell_timeout_s=1, run_timeout_s=300, wall_backstop_factor=100)
    hogs = [sandbox.start(KernelRequest(limits=Limits(max_processes=64, cpu_time_s=300))) for _ in range(2)]
    runners = [Runner(h) for h in hogs]
    try:
        for r in runners:
            r.kc.execute(SPINNERS.format(seconds=120, count=4))
        result = grade_notebook(
            notebook("x = 6 * 7", "while True:\n    pass", DOUBLE), catalogue=catalogue, sandbox=sandbox
        )
    finally:
        for r in runners:
            r.close()
        for h in hogs:
            h.close()
    assert result.cells[1].status == "timeout" and "time limit" in result.limits_hit, result.cells
    scores = {c.name: c.score for c in result.checks}
    assert scores == {"product": 1, "doubling": 1}, result.checks


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_the_sandboxs_own_wall_backstop_moves_with_a_cell_the_host_holds_back(tmp_path):
    # The sandbox kills everything at run_timeout_s + wall_grace_s (here 20 + 1 s). A starved cell that
    # runs on past that (3 s limit, 8 x 3 = 24 s backstop) must still end as the host's fault, not be
    # killed as a kernel death charged to the learner.
    box = BwrapSandbox(BwrapConfig(cgroups="require", wall_grace_s=1))
    catalogue = catalogue_with(tmp_path, cell_timeout_s=3, run_timeout_s=20, wall_backstop_factor=8)
    work = "total = sum(i * i for i in range(10 ** 9))"
    result = grade_notebook(notebook("x = 6 * 7", work, DOUBLE), catalogue=catalogue, sandbox=Throttled(box, 0.02))
    assert result.status is Status.NOT_GRADABLE, (result.status, result.message, result.cells)
    assert "kept the CPU from learner cell 1" in result.message, result.message
