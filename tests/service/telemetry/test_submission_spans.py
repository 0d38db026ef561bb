"""One submission followed end to end: the API takes it, a real worker (process pool, real kernel) grades
it, and its spans (in-memory exporter), its worker log lines and the /metrics histograms tell the story."""

from __future__ import annotations

import io
import json
import logging
import re

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from service.telemetry.logs import JsonFormatter
from service.telemetry.spans import GradingTelemetry
from service.wiring import build_worker

pytestmark = pytest.mark.slow
PHASES = ("queued", "claimed", "sandbox_start", "cell", "checks", "store")


def _phase_counts(metrics_text: str) -> dict[str, float]:
    found = re.findall(r'^titangrade_phase_duration_seconds_count\{phase="(\w+)"\} (\S+)$', metrics_text, re.M)
    return {phase: float(n) for phase, n in found}


@pytest.fixture
def worker_log():
    """The worker's log lines as the JSON formatter writes them."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("titangrade.worker")
    old_level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in out.getvalue().splitlines()]
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def _graded_with_spans(api, svc):
    """Submit through the API, grade in a burst worker with an in-memory span exporter: (submission id, spans)."""
    token = api.tokens["alice"]
    made = api.post("/api/v1/submissions", files={"notebook": ("n.ipynb", svc.notebook())}, headers=svc.auth(token))
    assert made.status_code in (201, 202), made.text
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    state = api.app_state
    worker = build_worker(state.settings, sessions=state.sessions)
    worker.telemetry = GradingTelemetry(tracer=provider.get_tracer("test"))
    try:
        worker.run(burst=True)
    finally:
        worker.executor.shutdown()
    assert worker.stored == 1
    return made.json()["id"], exporter.get_finished_spans()


def test_one_submissions_spans_nest_in_order_and_carry_its_ids(api, svc, worker_log):
    before = _phase_counts(api.get("/metrics").text)
    sid, spans = _graded_with_spans(api, svc)
    by_name: dict[str, list] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    names = [f"grading.{p}" for p in PHASES]
    assert set(by_name) == {"grading.job", *names}, sorted(by_name)
    (root,) = by_name["grading.job"]
    assert root.parent is None
    job_id = root.attributes["titangrade.job_id"]
    assert root.attributes["titangrade.submission_id"] == sid and root.attributes["titangrade.attempt"] == 1
    assert root.attributes["titangrade.state"] == "stored"
    for span in spans:  # one trace, and every span names the submission and the job
        assert span.context.trace_id == root.context.trace_id
        assert (span.attributes["titangrade.submission_id"], span.attributes["titangrade.job_id"]) == (sid, job_id)
    (queued,), (claimed,), (store,) = by_name["grading.queued"], by_name["grading.claimed"], by_name["grading.store"]
    for top in (queued, claimed, store):
        assert top.parent.span_id == root.context.span_id
    for name in ("grading.sandbox_start", "grading.cell", "grading.checks"):
        for span in by_name[name]:
            assert span.parent.span_id == claimed.context.span_id, name
            assert claimed.start_time <= span.start_time <= span.end_time <= claimed.end_time, name
    # in time: queued, then claimed (kernel start, the two cells in order, checks), then the store
    assert root.start_time == queued.start_time <= queued.end_time <= claimed.start_time
    assert claimed.end_time <= store.start_time <= store.end_time == root.end_time
    (sandbox,), (checks,) = by_name["grading.sandbox_start"], by_name["grading.checks"]
    cells = sorted(by_name["grading.cell"], key=lambda s: s.start_time)
    assert [c.attributes["titangrade.cell.index"] for c in cells] == [0, 1]
    assert [c.attributes["titangrade.cell.status"] for c in cells] == ["ok", "ok"]
    assert sandbox.end_time <= cells[0].start_time and cells[-1].end_time <= checks.start_time

    # the worker's log lines about this job carry its ids
    lines = [line for line in worker_log() if line.get("job_id") == job_id]
    claimed_line = next(line for line in lines if "claimed job" in line["message"])
    assert (claimed_line["submission_id"], claimed_line["attempt"], claimed_line["level"]) == (sid, 1, "info")
    assert any(line["message"].endswith(": stored") for line in lines)

    # and /metrics counts this grading's phases (this process's worker: the histograms are per process)
    after = _phase_counts(api.get("/metrics").text)
    grew = {phase: after.get(phase, 0) - before.get(phase, 0) for phase in PHASES}
    assert grew == {"queued": 1, "claimed": 1, "sandbox_start": 1, "cell": 2, "checks": 1, "store": 1}
