"""The worker's span-making without a kernel: phases recorded in the grading process become child spans
(errors marked), nothing is exported unless configured, and a configured endpoint receives OTLP/HTTP."""

from __future__ import annotations

import datetime as dt
import http.server
import threading
import time
from typing import ClassVar

import pytest
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from service.queue.service import ClaimedJob
from service.telemetry import spans
from service.telemetry.phases import PhaseRecorder
from service.workers.executor import Faulted, NotStarted


def _job() -> ClaimedJob:
    """A job that became claimable 3 s ago: made at the test's own time (a module-level one would age with
    every test collected before it runs, and the queued span would outgrow its bound)."""
    return ClaimedJob(
        job_id=5,
        submission_id="sub-5",
        lease_token="t",
        attempt=2,
        lane="short",
        devices=0,
        world_size=1,
        queued_at=dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(seconds=3),
    )


def _recorded_fault() -> Faulted:
    """A grading process's outcome: the kernel started, cell 0 ran, cell 1 raised (a grader fault)."""
    recorder = PhaseRecorder()
    with recorder.phase("sandbox_start", attempt=0):
        pass
    with recorder.phase("cell", index=0) as seen:
        seen["status"] = "ok"
    with pytest.raises(RuntimeError), recorder.phase("cell", index=1, note=object()):  # not an attribute type
        raise RuntimeError("starved")
    return recorder.attach(Faulted("starved", retryable=True))


def test_recorded_phases_become_child_spans_of_claimed_and_an_error_is_marked():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = spans.GradingTelemetry(tracer=provider.get_tracer("t"))
    job = _job()
    telemetry.claimed(job, worker_id="w1")
    telemetry.storing(job=job, outcome=_recorded_fault()).done(state="queued")
    by_name = {}
    for span in exporter.get_finished_spans():
        by_name.setdefault(span.name, []).append(span)
    (claimed,), (root,) = by_name["grading.claimed"], by_name["grading.job"]
    cells = by_name["grading.cell"]
    assert [c.parent.span_id for c in cells] == [claimed.context.span_id] * 2
    assert [c.attributes.get("titangrade.cell.status") for c in cells] == ["ok", None]
    assert "titangrade.cell.note" not in cells[1].attributes
    assert cells[1].status.status_code is StatusCode.ERROR and cells[1].status.description == "RuntimeError"
    assert by_name["grading.sandbox_start"][0].attributes["titangrade.sandbox_start.attempt"] == 0
    assert (root.attributes["titangrade.outcome"], root.attributes["titangrade.state"]) == ("Faulted", "queued")
    assert root.attributes["titangrade.worker"] == "w1" and root.attributes["titangrade.attempt"] == 2
    queued = by_name["grading.queued"][0]
    assert 2.5 < (queued.end_time - queued.start_time) / 1e9 < 30  # from the job's queued_at to the claim


def test_an_outcome_without_phases_is_returned_as_it_is():
    assert PhaseRecorder().attach(NotStarted("busy")) == NotStarted("busy")


def test_without_an_endpoint_nothing_is_exported(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert isinstance(spans.tracer_for(otlp_endpoint="", service_name="x"), trace.NoOpTracer)


class _Collector(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, bytes]]] = []  # (path, body) of each export

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")

    def log_message(self, *args) -> None:
        pass


def test_a_configured_endpoint_receives_the_spans_over_otlp_http(svc):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        settings = svc.settings("sqlite://", otlp_endpoint=url, otel_service_name="tg-test")
        telemetry = spans.GradingTelemetry.from_settings(settings)
        job = _job()
        telemetry.claimed(job, worker_id="w1")
        telemetry.storing(job=job, outcome=_recorded_fault()).done(state="queued")
        spans._exporting_provider(url + "/v1/traces", "tg-test").force_flush()
        deadline = time.monotonic() + 10
        while not _Collector.received and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        server.shutdown()
    path, body = _Collector.received[0]
    request = ExportTraceServiceRequest.FromString(body)
    (resource,) = request.resource_spans
    service_name = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
    names = sorted(s.name for scope in resource.scope_spans for s in scope.spans)
    assert (path, service_name) == ("/v1/traces", "tg-test")
    assert names == sorted(
        [
            "grading.job",
            "grading.queued",
            "grading.claimed",
            "grading.sandbox_start",
            "grading.cell",
            "grading.cell",
            "grading.store",
        ]
    )
