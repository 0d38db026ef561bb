"""X-Request-ID: a safe caller id is echoed, anything else replaced; log lines inside a request carry it;
the JSON and text formats; and where spans go."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import re

import pytest

from service.middleware import REQUEST_ID_MAX, request_id_from
from service.telemetry import logs
from service.telemetry.spans import traces_endpoint

FRESH = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def captured():
    """The `titangrade.test` logger, its handler (the test sets the formatter) and what it wrote."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    logger = logging.getLogger("titangrade.test")
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield logger, handler, out
    logger.removeHandler(handler)


@pytest.mark.parametrize("sent", ["abc-123", "7f3c2a9e-1b2d-4c5e-8f90-a1b2c3d4e5f6", "trace.span:01_x", "x" * 128])
def test_a_safe_request_id_is_kept(sent):
    assert request_id_from(sent) == sent


@pytest.mark.parametrize(
    "sent",
    [None, "", "x" * (REQUEST_ID_MAX + 1), "a b", 'a"}{"level":"error', "a\\nb", "ü-unicode", "-leading-dash", "a;b"],
)
def test_an_unsafe_or_missing_request_id_is_replaced_by_a_fresh_one(sent):
    assert FRESH.fullmatch(request_id_from(sent))


def test_the_answer_echoes_the_callers_id_or_a_fresh_one_even_on_a_401_and_a_404(api, svc):
    token = api.tokens["alice"]
    ok = api.get("/api/v1/exercises", headers=svc.auth(token, **{"X-Request-ID": "req-42"}))
    assert ok.status_code == 200 and ok.headers["x-request-id"] == "req-42"
    refused = api.get("/api/v1/exercises", headers={"X-Request-ID": "req-43"})  # no token: RequestGuard's 401
    assert refused.status_code == 401 and refused.headers["x-request-id"] == "req-43"
    missing = api.get("/no-such-page", headers={"X-Request-ID": "bad id with spaces"})
    assert missing.status_code == 404 and FRESH.fullmatch(missing.headers["x-request-id"])
    long = api.get("/healthz", headers={"X-Request-ID": "y" * 500})
    assert FRESH.fullmatch(long.headers["x-request-id"])
    assert api.get("/healthz").headers["x-request-id"] != api.get("/healthz").headers["x-request-id"]


def test_a_500_echoes_the_request_id_too(api):
    from fastapi.testclient import TestClient

    def broken() -> dict:
        raise RuntimeError("a bug")

    api.app.add_api_route("/_telemetry_broken", broken, methods=["GET"])
    answer = TestClient(api.app, raise_server_exceptions=False).get(
        "/_telemetry_broken", headers={"X-Request-ID": "r-500"}
    )
    assert answer.status_code == 500 and answer.headers["x-request-id"] == "r-500"


def test_log_lines_written_during_a_request_carry_its_request_id(api, captured):
    logger, handler, out = captured
    handler.setFormatter(logs.JsonFormatter())

    def noisy() -> dict:
        logger.info("inside the route")
        return {}

    api.app.add_api_route("/_telemetry_test", noisy, methods=["GET"])
    answer = api.get("/_telemetry_test", headers={"X-Request-ID": "req-from-caller"})
    assert answer.status_code == 200
    (line,) = [json.loads(raw) for raw in out.getvalue().splitlines()]
    assert line["request_id"] == "req-from-caller" and line["message"] == "inside the route"
    logger.info("outside any request")
    assert "request_id" not in json.loads(out.getvalue().splitlines()[-1])


def test_a_json_line_has_time_level_logger_message_and_the_bound_ids(captured):
    logger, handler, out = captured
    handler.setFormatter(logs.JsonFormatter())
    with logs.bind(submission_id="s1", job_id=7), logs.bind(attempt=2, request_id=None):
        logger.warning('job "%s" said\nhi', "x")
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("failed")
    first, second = (json.loads(raw) for raw in out.getvalue().splitlines())
    assert set(first) == {"time", "level", "logger", "message", "submission_id", "job_id", "attempt"}
    assert (first["level"], first["logger"], first["message"]) == ("warning", "titangrade.test", 'job "x" said\nhi')
    assert (first["submission_id"], first["job_id"], first["attempt"]) == ("s1", 7, 2)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first["time"])
    when = dt.datetime.fromisoformat(first["time"].replace("Z", "+00:00"))
    assert abs((dt.datetime.now(dt.UTC) - when).total_seconds()) < 60
    assert "job_id" not in second and "ValueError: boom" in second["exception"]


def test_job_scoped_binds_a_jobs_ids_for_the_call_only(captured):
    logger, handler, out = captured
    handler.setFormatter(logs.formatter("text"))

    class Job:
        job_id, submission_id, attempt = 3, "sub-9", 1

    @logs.job_scoped(lambda job: job)
    def handle(job) -> None:
        logger.info("handling")

    handle(Job())
    logger.info("after")
    inside, after = out.getvalue().splitlines()
    assert inside.endswith("[submission_id=sub-9 job_id=3 attempt=1] handling")
    assert after.endswith("titangrade.test after") and "job_id" not in after


def test_log_format_is_a_validated_setting(svc):
    from pydantic import ValidationError

    assert svc.settings("sqlite://", log_format="text").log_format == "text"
    with pytest.raises(ValidationError, match="log_format"):
        svc.settings("sqlite://", log_format="xml")


def test_spans_go_to_the_setting_else_the_standard_variables_else_nowhere():
    assert traces_endpoint("", {}) is None
    assert traces_endpoint("http://otel:4318", {}) == "http://otel:4318/v1/traces"
    assert traces_endpoint("http://otel:4318/v1/traces", {"OTEL_EXPORTER_OTLP_ENDPOINT": "x"}).count("v1") == 1
    assert traces_endpoint("", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == "http://c:4318/v1/traces"
    both = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x"}
    assert traces_endpoint("", both) == "http://t/x"
