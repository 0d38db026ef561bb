"""Liveness, readiness (DB reachable, a worker heartbeat seen) and Prometheus metrics.

/metrics joins two kinds: queue and latency metrics read from the database at scrape time (the whole
system, the same from every API process), and `titangrade_phase_duration_seconds`, the per-phase
durations of the gradings this process's own worker stored (per process: service/telemetry/metrics.py).
"""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from sqlalchemy import select, text

from service.db import utcnow
from service.deps import SessionFactoryDep, SettingsDep
from service.queue import health as queue_health
from service.queue import service as queue
from service.queue.causes import Cause
from service.queue.health import CauseCount
from service.states import JobStatus
from service.submissions.models import Submission
from service.telemetry.metrics import PHASE_SECONDS

router = APIRouter(tags=["operations"])
FAULT_WINDOW_S = 3600.0  # titangrade_job_faults and titangrade_workers count the last hour
LATENCY_BUCKETS_S = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600)


@router.get("/healthz")
def healthz() -> dict:
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "the database is unreachable or no worker is alive"}})
def readyz(settings: SettingsDep, open_session: SessionFactoryDep) -> JSONResponse:
    try:
        with open_session() as session:
            session.execute(text("SELECT 1"))
            workers = queue.live_workers(session, within_s=3 * settings.heartbeat_s)
            session.commit()
    except Exception as exc:  # readiness reports, it does not raise; it is asked afresh each time, so it
        # recovers by itself once the database answers and a worker's heartbeat is seen again
        retry = {"Retry-After": str(settings.db_retry_after_s)}
        return JSONResponse({"status": "unavailable", "database": f"unreachable: {type(exc).__name__}"}, 503, retry)
    body = {"status": "ready" if workers else "no_workers", "database": "ok", "workers": len(workers)}
    if not workers:
        body["hint"] = "no worker heartbeat recently; start one with `titangrade worker` or `serve --workers N`"
    return JSONResponse(body, 200 if workers else 503)


class _DatabaseCollector:
    """Computes queue and grading metrics at scrape time, so every API process reports the same numbers.
    `dead_after_s`: a worker without a heartbeat this long counts as dead (the lease, as on the queue page)."""

    def __init__(self, sessions, *, dead_after_s: float) -> None:
        self.sessions = sessions
        self.dead_after_s = dead_after_s

    def collect(self):
        with self.sessions() as session:
            depth = queue.depth_by_lane(session)
            by_status = queue.jobs_by_status(session)
            lanes = queue_health.oldest_queued(session)
            since = utcnow() - dt.timedelta(seconds=FAULT_WINDOW_S)
            causes, _, reaped = queue_health.cause_counts(session, since=since)
            beats = queue_health.workers(
                session, dead_after_s=self.dead_after_s, since=since, reaped=reaped, now=utcnow()
            )
            rows = session.execute(
                select(Submission.created_at, Submission.graded_at).where(Submission.graded_at.is_not(None))
            ).all()
            session.commit()
        g = GaugeMetricFamily("titangrade_queue_depth", "queued jobs per lane", labels=["lane"])
        for lane in ("short", "long"):
            g.add_metric([lane], depth.get(lane, 0))
        yield g
        j = GaugeMetricFamily("titangrade_jobs", "jobs by status", labels=["status"])
        for status in JobStatus:
            j.add_metric([status], by_status.get(status, 0))
        yield j
        o = GaugeMetricFamily(
            "titangrade_queue_oldest_age_seconds", "age of the oldest queued job per lane (0: none)", labels=["lane"]
        )
        for waiting in lanes:
            o.add_metric([waiting.lane], waiting.oldest_age_s or 0.0)
        yield o
        f = GaugeMetricFamily(
            "titangrade_job_faults",
            "jobs of the last hour whose last run was faulted, by cause and by what became of them",
            labels=["cause", "outcome"],
        )
        found = {c.cause: c for c in causes}
        for cause in Cause:
            c = found.get(cause) or CauseCount(cause=cause)
            for outcome in ("failed", "recovered", "retrying"):
                f.add_metric([cause, outcome], getattr(c, outcome))
        yield f
        w = GaugeMetricFamily(
            "titangrade_workers",
            "workers that beat in the last hour: live, or dead (no heartbeat for lease_s)",
            labels=["state"],
        )
        w.add_metric(["live"], sum(1 for b in beats if b.alive))
        w.add_metric(["dead"], sum(1 for b in beats if not b.alive))
        yield w
        latencies = [(done - created).total_seconds() for created, done in rows]
        buckets, total = [], 0
        for bound in LATENCY_BUCKETS_S:
            buckets.append((str(float(bound)), sum(1 for x in latencies if x <= bound)))
        buckets.append(("+Inf", len(latencies)))
        total = sum(latencies)
        h = HistogramMetricFamily("titangrade_grading_latency_seconds", "submit-to-graded latency")
        h.add_metric([], buckets, total)
        yield h


@router.get("/metrics", response_class=Response)
def metrics(open_session: SessionFactoryDep, settings: SettingsDep) -> Response:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_DatabaseCollector(open_session, dead_after_s=settings.lease_s))
    registry.register(PHASE_SECONDS)  # this process's gradings only
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
