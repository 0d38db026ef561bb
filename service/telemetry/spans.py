"""One trace per grading attempt, made by the worker when it stores the job's outcome.

    grading.job                       queued_at -> stored (the whole attempt)
    ├── grading.queued                the job claimable -> claimed by this worker
    ├── grading.claimed               claimed -> the worker begins storing
    │   ├── grading.sandbox_start     the kernel's start (one per kernel: a restart adds one)
    │   ├── grading.cell              each learner cell run (titangrade.cell.index, .status)
    │   └── grading.checks            scoring the extracted answers against the reference
    └── grading.store                 the transaction that stores the grade or applies the retry policy

Every span carries titangrade.submission_id, .job_id and .attempt. The engine's phases are recorded in
the grading process (phases.py) and travel back with the outcome, so the spans are made here with their
recorded times. Exported over OTLP/HTTP only when an endpoint is configured; otherwise the tracer is a
no-op and only the histograms (metrics.py) are kept.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from service.queue.service import ClaimedJob
from service.telemetry import metrics
from service.telemetry.phases import Phase

TRACER_NAME = "titangrade.grading"
JOB, QUEUED, CLAIMED, STORE = "grading.job", "grading.queued", "grading.claimed", "grading.store"
PREFIX = "grading."  # an engine phase "cell" becomes the span "grading.cell"
TRACES_PATH = "/v1/traces"


def traces_endpoint(setting: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """Where spans go: the `otlp_endpoint` setting (a collector's base URL), else the standard
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or OTEL_EXPORTER_OTLP_ENDPOINT (base); None: nowhere."""
    if setting:
        return setting if setting.rstrip("/").endswith(TRACES_PATH) else setting.rstrip("/") + TRACES_PATH
    if environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    if environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return environ["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + TRACES_PATH
    return None


@functools.cache
def _exporting_provider(endpoint: str, service_name: str) -> TracerProvider:
    """One provider (and one batch-export thread) per process and endpoint; flushed at exit by the SDK."""
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def tracer_for(*, otlp_endpoint: str, service_name: str) -> Tracer:
    endpoint = traces_endpoint(otlp_endpoint)
    if endpoint is None:
        return trace.NoOpTracer()
    return _exporting_provider(endpoint, service_name).get_tracer(TRACER_NAME)


def _ns(moment: dt.datetime | None) -> int | None:
    if moment is None:
        return None
    aware = moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)  # the database's naive UTC
    return int(aware.timestamp() * 1e9)


class GradingTelemetry:
    """The worker's side: note when a job is claimed, and make its spans and histogram samples once its
    outcome is stored (an outcome held through a database outage is traced when it is finally stored)."""

    def __init__(self, *, tracer: Tracer | None = None) -> None:
        self.tracer = tracer or trace.NoOpTracer()
        self._claimed_ns: dict[int, tuple[int, str]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Any) -> GradingTelemetry:
        return cls(tracer=tracer_for(otlp_endpoint=settings.otlp_endpoint, service_name=settings.otel_service_name))

    def claimed(self, job: ClaimedJob, *, worker_id: str) -> None:
        with self._lock:
            self._claimed_ns[job.job_id] = (time.time_ns(), worker_id)

    def storing(self, *, job: ClaimedJob, outcome: Any) -> _Storing:
        """Call just before the store; `.done(state=...)` once it committed (not at all if it raised)."""
        return _Storing(owner=self, job=job, outcome=outcome, started_ns=time.time_ns())

    def record(self, *, job: ClaimedJob, outcome: Any, state: str, store_ns: int) -> None:
        """The attempt's spans and histogram samples, the store having begun at `store_ns`."""
        end_ns = time.time_ns()
        with self._lock:
            claimed_ns, worker_id = self._claimed_ns.pop(job.job_id, (store_ns, ""))
        queued_ns = min(_ns(job.queued_at) or claimed_ns, claimed_ns)
        ids: dict[str, AttributeValue] = {
            "titangrade.submission_id": job.submission_id,
            "titangrade.job_id": job.job_id,
            "titangrade.attempt": job.attempt,
        }
        root = self.tracer.start_span(
            JOB, start_time=queued_ns, attributes={**ids, "titangrade.lane": job.lane, "titangrade.worker": worker_id}
        )
        under_root = trace.set_span_in_context(root)
        self._closed(QUEUED, under_root, queued_ns, claimed_ns, ids)
        claimed = self.tracer.start_span(CLAIMED, context=under_root, start_time=claimed_ns, attributes=ids)
        under_claimed = trace.set_span_in_context(claimed)
        phases: tuple[Phase, ...] = getattr(outcome, "phases", ())
        for phase in phases:
            attrs: dict[str, AttributeValue] = {**ids}
            attrs.update((f"titangrade.{phase.name}.{key}", value) for key, value in phase.attrs)
            self._closed(PREFIX + phase.name, under_claimed, phase.start_ns, phase.end_ns, attrs, error=phase.error)
            metrics.observe(phase.name, phase.duration_s)
        claimed.end(end_time=store_ns)
        self._closed(STORE, under_root, store_ns, end_ns, {**ids, "titangrade.state": state})
        root.set_attribute("titangrade.outcome", type(outcome).__name__)
        root.set_attribute("titangrade.state", state)
        root.end(end_time=end_ns)
        own = ((QUEUED, queued_ns, claimed_ns), (CLAIMED, claimed_ns, store_ns), (STORE, store_ns, end_ns))
        for name, start_ns, stop_ns in own:
            metrics.observe(name.removeprefix(PREFIX), (stop_ns - start_ns) / 1e9)

    def _closed(
        self, name: str, context: Any, start_ns: int, end_ns: int, attrs: dict[str, AttributeValue], error: str = ""
    ) -> Span:
        span = self.tracer.start_span(name, context=context, start_time=start_ns, attributes=attrs)
        if error:  # before end(): an ended span's status can no longer be set
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=max(end_ns, start_ns))
        return span


@dataclass(slots=True, kw_only=True)
class _Storing:
    owner: GradingTelemetry
    job: ClaimedJob
    outcome: Any
    started_ns: int

    def done(self, *, state: str) -> None:
        self.owner.record(job=self.job, outcome=self.outcome, state=state, store_ns=self.started_ns)
