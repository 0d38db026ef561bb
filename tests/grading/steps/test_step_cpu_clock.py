"""grading/steps/cpu_clock.py: whose time a passed limit was, from a run's CPU counters (issue 24).

The decision is a pure function of the counters, so these tests feed it scripted samples (what a group's
cpuacct.usage, cpu.stat and its tasks' schedstat would say); the real counters are read in
tests/grading/sandbox/test_sandbox_starvation.py and test_sandbox_cgroups.py. One test drives the
engine's own client against a real kernel to show a held-back cell is let run on."""

from __future__ import annotations

import time

import pytest

from grading.sandbox.cpu_usage import CpuSample
from grading.steps.cpu_clock import CellClock, Verdict


class Script:
    """Samples whose figures, wall time included, the test sets."""

    def __init__(self) -> None:
        self.at_s = self.used_s = self.throttled_s = 0.0
        self.waits: dict[int, float] = {}
        self.readable = True

    def __call__(self) -> CpuSample | None:
        if not self.readable:
            return None
        return CpuSample(at_s=self.at_s, used_s=self.used_s, throttled_s=self.throttled_s, waits=dict(self.waits))


def clock_for(script: Script, *, factor: float = 4.0) -> CellClock:
    clock = CellClock(script, cores=0.5, backstop_factor=factor, recheck_s=0.01)
    script.used_s, script.waits = 100.0, {7: 50.0}  # what the run had used before this cell
    clock.restart()
    return clock


def test_a_cell_that_had_its_cpu_is_the_learners_timeout():
    script = Script()
    clock = clock_for(script)
    script.used_s += 0.6  # a 1 s limit implies 0.5 CPU-s
    assert clock.more_s(1.0) == 0 and clock.verdict is Verdict.USED and not clock.starved


def test_a_cell_that_asked_for_no_cpu_is_the_learners_timeout():
    script = Script()
    clock = clock_for(script)
    script.used_s += 0.01  # it slept, or stopped itself: no run delay either
    assert clock.more_s(1.0) == 0 and clock.verdict is Verdict.WAITED


def test_a_held_back_cell_runs_on_and_is_starved_at_the_backstop():
    script = Script()
    clock = clock_for(script, factor=1.5)
    script.used_s += 0.02  # a 0.2 s limit implies 0.1 CPU-s
    script.waits[7] += 0.15  # runnable most of the time, and kept off the CPU
    assert clock.more_s(0.2) > 0 and clock.verdict is None  # not decided: it may still get its CPU
    script.at_s += 0.35  # past 1.5 x its 0.2 s limit
    assert clock.more_s(0.2) == 0 and clock.verdict is Verdict.STARVED and clock.starved
    assert "received 0.0 CPU-s" in clock.describe() and "implies 0.1 CPU-s" in clock.describe(), clock.describe()
    assert clock.extended_s > 0  # the run's deadline moves on by what the host took


def test_a_held_back_cell_that_gets_its_cpu_late_is_the_learners_timeout():
    script = Script()
    clock = clock_for(script)
    script.throttled_s += 0.9  # its quota held it back (run delay misses part of throttled time)
    assert clock.more_s(1.0) > 0
    script.used_s += 0.5
    assert clock.more_s(1.0) == 0 and clock.verdict is Verdict.USED


def test_a_task_that_exits_keeps_the_delay_it_was_seen_with():
    script = Script()
    clock = clock_for(script, factor=100)
    script.waits[8] = 0.4  # a new worker process, kept waiting
    assert clock.more_s(1.0) == 0 and clock.verdict is Verdict.WAITED  # 0.4 asked < 0.5 implied
    script.waits[8] = 0.45
    clock.more_s(1.0)
    del script.waits[8]  # it exited; what it waited still counts
    script.waits[9] = 0.1
    assert clock.more_s(1.0) > 0 and clock.verdict is None


def test_without_counters_the_wall_limit_decides_as_before():
    script = Script()
    script.readable = False
    clock = CellClock(script, cores=0.5, backstop_factor=4)
    clock.restart()
    assert clock.more_s(1.0) == 0 and not clock.starved


@pytest.mark.slow
def test_the_engines_client_lets_a_held_back_cell_finish(tmp_path):
    """A real kernel (unsafe-local: the clock, not the sandbox, is under test) runs a 2 s cell under a
    0.5 s limit while the scripted counters say it is being held back: it ends ok, not timed out."""
    from grading.sandbox import KernelRequest, make_sandbox
    from grading.steps.execute import _connect
    from grading.steps.limit_output import OutputCollector

    sandbox = make_sandbox("unsafe-local")
    session = sandbox.start(KernelRequest())
    io = _connect(session)
    try:
        script = Script()
        clock = CellClock(script, cores=0.5, backstop_factor=20, recheck_s=0.05)
        began = time.monotonic()

        def starving() -> CpuSample | None:
            script.at_s = time.monotonic()
            script.waits = {1: script.at_s - began}  # always runnable, never running
            return script()

        clock._sample = starving
        code = "import time\ntime.sleep(2)\nprint('done')"
        done = io.execute(
            code, limit_s=0.5, collector=OutputCollector(max_bytes=4096), store_history=False, iopub_s=2.0, clock=clock
        )
        assert done.status == "ok", done
        assert any("done" in o.get("text", "") for o in done.outputs), done.outputs
        clock.stop()
        assert clock.extended_s >= 1.0, clock.extended_s

        plain = io.execute(
            code, limit_s=0.5, collector=OutputCollector(max_bytes=4096), store_history=False, iopub_s=2.0
        )
        assert plain.status == "timeout"  # without the clock, the wall limit alone
    finally:
        io.close()
        session.close()
