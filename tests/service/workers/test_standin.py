"""The benchmarks' stand-in engine (TITANGRADE_GRADING_ENGINE=standin-hold): refused in prod mode, its
holds validated, and through the real worker and local executor it holds each job for its declared time
and says nothing was graded. Its run on a Ray cluster: test_standin_cluster.py."""

from __future__ import annotations

import time

import pytest
from pydantic import ValidationError

from grading.progress import Started
from grading.result import Status
from grading.sandbox import DeviceGrant
from service.config import Settings
from service.db import transaction
from service.submissions.models import Submission
from service.wiring import build_worker
from service.workers.engines import engine_spec, grading_engine
from service.workers.standin import ENGINE_NAME, hold


def test_prod_mode_refuses_the_stand_in():
    with pytest.raises(ValidationError, match="refusing to start in prod mode: TITANGRADE_GRADING_ENGINE=standin-hold"):
        Settings(mode="prod", secret_key="k" * 40, sandbox="bwrap", grading_engine="standin-hold")
    assert Settings(mode="prod", secret_key="k" * 40, sandbox="bwrap").grading_engine == "notebook"


@pytest.mark.parametrize("holds", ["not json", '["ch05.svc_sum"]', '{"ch05.svc_sum": -1}', '{"*": true}'])
def test_bad_holds_are_refused_naming_the_setting(holds):
    with pytest.raises(ValidationError, match="STANDIN_HOLD_S"):
        Settings(grading_engine="standin-hold", standin_hold_s=holds)


def test_the_engine_is_chosen_by_name():
    settings = Settings(grading_engine="standin-hold", standin_hold_s='{"*": 0.5, "ch05.svc_sum": 1}')
    assert engine_spec(settings) == ("standin-hold", (("*", 0.5), ("ch05.svc_sum", 1.0)))
    assert grading_engine("notebook").__name__ == "grade_notebook"
    with pytest.raises(ValueError, match="notebook, standin-hold"):
        grading_engine("fast")


def test_hold_holds_for_the_declared_time_and_reports_it(test_catalogue):
    events = []
    t0 = time.monotonic()
    result = hold(
        b"{}",
        holds={"ch05.svc_sum": 0.3, "*": 5},
        exercise_id="ch05.svc_sum",
        catalogue=test_catalogue,
        devices=DeviceGrant(kind="npu", ids=(2, 3)),
        progress=events.append,
    )
    assert time.monotonic() - t0 >= 0.3
    assert result.status is Status.GRADED and result.engine_version == ENGINE_NAME
    assert result.device == "npu:2,3" and result.score == 0.0 and "nothing was graded" in result.message
    record = result.trace[0]
    assert record["standin_hold_s"] == 0.3 and record["held_s"] >= 0.3
    assert record["end_unix"] - record["start_unix"] >= 0.3
    assert events == [Started(exercise_id="ch05.svc_sum")]
    with pytest.raises(ValueError, match="unknown exercise"):
        hold(b"{}", holds={}, exercise_id="ch99.nope", catalogue=test_catalogue)


def test_worker_with_the_stand_in_stores_its_results_through_the_queue(sessions, svc, add_submission):
    with transaction(sessions) as s:
        ids = [add_submission(s, user=f"u{i}", notebook=svc.notebook())[0].id for i in range(3)]
    url = str(sessions.kw["bind"].url.render_as_string(hide_password=False))
    settings = svc.settings(url, grading_engine="standin-hold", standin_hold_s='{"ch05.svc_sum": 0.4}')
    worker = build_worker(settings, sessions=sessions)
    try:
        worker.run(burst=True)
    finally:
        worker.executor.shutdown()
    assert worker.stored == 3
    with sessions() as s:
        for sid in ids:
            sub = s.get(Submission, sid)
            assert sub.status == "graded" and sub.result["engine_version"] == ENGINE_NAME
            assert sub.result["trace"][0]["held_s"] >= 0.4
            assert (sub.graded_at - sub.started_at).total_seconds() >= 0.4
