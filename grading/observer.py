"""An optional watcher of a grading's phases (kernel start, each learner cell, the checks), unthrottled.

Progress events are throttled for the database (`pipeline._emitter`); an observer sees every phase with
its own start and end, for timings and traces. The engine knows only this protocol: the service's worker
records the phases and turns them into spans and histograms (service/telemetry/), the engine never does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Protocol

SANDBOX_START, CELL, CHECKS = "sandbox_start", "cell", "checks"


class GradingObserver(Protocol):
    def phase(self, name: str, **attrs: Any) -> contextlib.AbstractContextManager[dict[str, Any]]:
        """A context around one phase; the engine may add attributes (e.g. a cell's status) to the dict
        it yields. An exception leaving the phase passes through unchanged."""
        ...


class NoObserver:
    """The default: phases cost a context manager and nothing else."""

    @contextlib.contextmanager
    def phase(self, name: str, **attrs: Any) -> Iterator[dict[str, Any]]:
        yield attrs


NO_OBSERVER: GradingObserver = NoObserver()
