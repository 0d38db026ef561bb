"""Per-phase grading durations as a Prometheus histogram, kept in this process's memory.

Unlike the queue and latency metrics of service/ops.py, which are read from the database at scrape time
(the whole system), these count only the gradings this process's worker stored: `serve` shows its own
workers' phases on /metrics; a separate `titangrade worker` process keeps its own, which no /metrics of an
API process sees (docs/service.md, Telemetry).
"""

from __future__ import annotations

from prometheus_client import Histogram

PHASE_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

# registry=None: not in prometheus_client's global registry; /metrics registers it in its own, per scrape
PHASE_SECONDS = Histogram(
    "titangrade_phase_duration_seconds",
    "duration of each phase of a grading stored by this process's worker "
    "(queued, claimed, sandbox_start, cell, checks, store)",
    labelnames=("phase",),
    buckets=PHASE_BUCKETS_S,
    registry=None,
)


def observe(phase: str, seconds: float) -> None:
    PHASE_SECONDS.labels(phase=phase).observe(max(seconds, 0.0))
