"""Whose time was it: the clock that decides, when a cell's limit passes, if the learner used the time.

A limit of L seconds means (Limits.cpu_cores_implied = c, Limits.wall_backstop_factor = k):

- code that computes may use c x L CPU seconds (its run's whole control group: every process and
  thread). Once it has, the timeout is the learner's, however long the wall clock took to give them;
- code that does not ask for CPU (sleeps, blocks, stops itself) gets L wall seconds, as before;
- code that asked for CPU and did not get c x L of it in L seconds was held back by the host: its clock
  runs on, and if k x L wall seconds pass before it has had c x L CPU seconds, it was starved. That is
  a grader fault (retried when the host is less busy), never the learner's timeout.

"Asked for CPU" is what it used plus what it waited for: the run delay of its tasks (runnable, not
running) or its quota's throttled time, whichever is larger (cgroups.py / cpu_usage.py).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass

from grading.sandbox.cpu_usage import CpuSample

RECHECK_S = 0.25  # how often a held-back cell's counters are read again past its limit


class Verdict(enum.Enum):
    USED = "used"  # it had the CPU its limit implies: the learner's timeout
    WAITED = "waited"  # it did not ask for that much CPU (slept, blocked, stopped): the learner's timeout
    STARVED = "starved"  # it asked and the host did not give it, up to the wall backstop: a grader fault


@dataclass(frozen=True, kw_only=True)
class Spent:
    """What one clock's span consumed, for messages and figures."""

    wall_s: float
    cpu_s: float
    waited_s: float
    budget_s: float  # the CPU seconds its limit implied


class CellClock:
    """One cell's clock, restarted for each timed span (a cell, or one call of a cell of calls).

    The engine's client calls `restart()` when a span starts and `more_s(limit_s)` once its wall limit
    has passed: 0 means stop now (`verdict` says why), more means look again after that many seconds.
    """

    def __init__(
        self,
        sample: Callable[[], CpuSample | None],
        *,
        cores: float,
        backstop_factor: float,
        recheck_s: float = RECHECK_S,
        on_more: Callable[[float], None] = lambda s: None,
    ) -> None:
        self._sample = sample
        self._on_more = on_more  # told of every extension as it is granted (the sandbox's own wall backstop)
        self.cores, self.backstop_factor, self.recheck_s = cores, backstop_factor, recheck_s
        self._base: CpuSample | None = None
        self._waits: dict[int, float] = {}
        self.verdict: Verdict | None = None
        self.spent: Spent | None = None
        self.extended_s = 0.0  # wall seconds run past the limits, all spans (the run's deadline moves on)
        self._over_at: float | None = None  # when the current span passed its limit and was let run on

    def restart(self) -> None:
        self.stop()
        self._base = self._sample()
        self._waits = dict(self._base.waits) if self._base else {}
        self.verdict, self.spent = None, None

    def more_s(self, limit_s: float) -> float:
        """The span's wall limit (`limit_s` from its start) has passed: how much longer to let it run."""
        now = self._sample() if self._base is not None else None
        if now is None or self._base is None:  # nothing to measure with: the wall limit decides, as before
            self.verdict = Verdict.USED
            return 0.0
        for tid, waited in now.waits.items():  # a task's delay only grows; one that exited keeps its last
            self._waits[tid] = max(waited, self._waits.get(tid, 0.0))
        base = self._base
        cpu = now.used_s - base.used_s
        delay = sum(w - base.waits.get(tid, 0.0) for tid, w in self._waits.items() if w >= base.waits.get(tid, 0.0))
        waited = max(delay, now.throttled_s - base.throttled_s)
        wall = now.at_s - base.at_s
        budget = self.cores * limit_s
        self.spent = Spent(wall_s=wall, cpu_s=cpu, waited_s=waited, budget_s=budget)
        if cpu >= budget:
            self.verdict = Verdict.USED
        elif cpu + waited < budget:
            self.verdict = Verdict.WAITED
        elif wall >= self.backstop_factor * limit_s:
            self.verdict = Verdict.STARVED
        else:
            self.verdict = None
            if self._over_at is None:
                self._over_at = time.monotonic()
            more = max(min(self.recheck_s, self.backstop_factor * limit_s - wall), 0.01)
            self._on_more(more)
            return more
        self.stop()
        return 0.0

    def stop(self) -> None:
        """The span ended (or was stopped): count the time it ran past its limit."""
        if self._over_at is not None:
            self.extended_s += time.monotonic() - self._over_at
            self._over_at = None

    @property
    def starved(self) -> bool:
        return self.verdict is Verdict.STARVED

    def describe(self) -> str:
        """Figures for a grader fault's message."""
        s = self.spent
        if s is None:
            return ""
        return (
            f"it received {s.cpu_s:.1f} CPU-s in {s.wall_s:.0f} s of wall clock and waited {s.waited_s:.0f} s "
            f"for more; its limit implies {s.budget_s:.1f} CPU-s"
        )
