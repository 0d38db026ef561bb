"""The grading process's side: record each phase the engine reports (grading/observer.py) as plain data.

Grading runs in a pool process (or on a Ray node); its phases travel back with the job's outcome, and
the worker, which claimed and stores the job, turns them into spans and histograms (spans.py). So every
span of one grading is made in one process, with no exporter in the pool processes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

ATTR_TYPES = (str, int, float, bool)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Phase:
    """One phase as the grading process saw it: wall-clock nanoseconds (time.time_ns) and flat attributes."""

    name: str
    start_ns: int
    end_ns: int
    attrs: tuple[tuple[str, str | int | float | bool], ...] = ()
    error: str = ""  # the exception type that left the phase, if any

    @property
    def duration_s(self) -> float:
        return max(self.end_ns - self.start_ns, 0) / 1e9


class PhaseRecorder:
    """A GradingObserver that keeps the phases in order of their end (a cell ends before the next begins)."""

    def __init__(self) -> None:
        self.phases: list[Phase] = []

    @contextlib.contextmanager
    def phase(self, name: str, **attrs: Any) -> Iterator[dict[str, Any]]:
        start_ns, error = time.time_ns(), ""
        try:
            yield attrs
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            flat = tuple((k, v) for k, v in attrs.items() if isinstance(v, ATTR_TYPES))
            self.phases.append(Phase(name=name, start_ns=start_ns, end_ns=time.time_ns(), attrs=flat, error=error))

    def attach(self, outcome: Any) -> Any:
        """The outcome with the phases recorded so far (an outcome without a `phases` field is returned as is)."""
        fields = {f.name for f in dataclasses.fields(outcome)} if dataclasses.is_dataclass(outcome) else set()
        if "phases" not in fields:
            return outcome
        return dataclasses.replace(outcome, phases=tuple(self.phases))
