"""The worker with its real executor (process pool) and real kernels, over SQLite and PostgreSQL."""
from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from service.db import transaction
from service.outbox.models import OutboxEvent
from service.queue.models import Job
from service.submissions.models import ProgressEvent, Submission
from service.wiring import build_worker

pytestmark = pytest.mark.slow


def _run_burst(settings, sessions):
    worker = build_worker(settings, sessions=sessions)
    try:
        worker.run(burst=True)
    finally:
        worker.executor.shutdown()
    return worker


def test_burst_worker_grades_solution_template_and_partial(sessions, svc, add_submission):
    with transaction(sessions) as s:
        solved, _ = add_submission(s, notebook=svc.notebook())
        template, _ = add_submission(s, notebook=svc.notebook(solved=False))
        partial, _ = add_submission(s, notebook=svc.notebook(wrong_word=True))
    settings = svc.settings(str(sessions.kw["bind"].url.render_as_string(hide_password=False)))
    worker = _run_burst(settings, sessions)
    assert worker.stored == 3
    with sessions() as s:
        scores = {sid: (s.get(Submission, sid).status, s.get(Submission, sid).score)
                  for sid in (solved.id, template.id, partial.id)}
        assert scores == {solved.id: ("graded", 3.0), template.id: ("graded", 0.0), partial.id: ("graded", 2.0)}
        checks = s.get(Submission, partial.id).result["checks"]
        assert [(c["name"], c["passed"]) for c in checks] == [("total_value", True), ("word_value", False)]
        events = [e.event for e in s.scalars(select(ProgressEvent).where(ProgressEvent.submission_id == solved.id)
                                             .order_by(ProgressEvent.id))]
        assert events[:3] == ["queued", "claimed", "started"] and events[-2:] == ["checks", "done"]
        assert events.count("cell") == 2
        assert s.scalar(select(func.count()).select_from(OutboxEvent)) == 3


def test_grader_fault_is_retried_then_not_gradable(sessions, svc, add_submission):
    with transaction(sessions) as s:
        broken, _ = add_submission(s, exercise_id="ch05.svc_broken", max_attempts=2,
                                   notebook=svc.notebook("ch05.svc_broken"))
    settings = svc.settings(sessions.kw["bind"].url.render_as_string(hide_password=False), max_attempts=2)
    _run_burst(settings, sessions)
    with sessions() as s:
        sub = s.get(Submission, broken.id)
        job = s.scalar(select(Job).where(Job.submission_id == broken.id))
        assert (sub.status, sub.score, job.status, job.attempts) == ("not_gradable", None, "failed", 2)
        assert "not scored" in sub.message
        events = [e.event for e in s.scalars(select(ProgressEvent).where(ProgressEvent.submission_id == broken.id))]
        assert events.count("requeued") == 1 and events[-1] == "done"


def test_short_jobs_do_not_wait_behind_long_ones(sessions, svc, add_submission):
    """Two slots, one reserved for the short lane: a short job runs beside a long one, the 2nd long waits."""
    with transaction(sessions) as s:
        long1, _ = add_submission(s, exercise_id="ch05.svc_long", lane="long",
                                  notebook=svc.notebook("ch05.svc_long", slow_s=3))
        long2, _ = add_submission(s, exercise_id="ch05.svc_long", lane="long",
                                  notebook=svc.notebook("ch05.svc_long"))
        short, _ = add_submission(s, notebook=svc.notebook())
    settings = svc.settings(sessions.kw["bind"].url.render_as_string(hide_password=False),
                            worker_slots=2, short_reserved_slots=1)
    _run_burst(settings, sessions)
    with sessions() as s:
        l1, l2, sh = (s.get(Submission, x.id) for x in (long1, long2, short))
        assert {l1.status, l2.status, sh.status} == {"graded"}
        assert sh.started_at < l1.graded_at  # ran beside the long job
        assert l2.started_at >= l1.graded_at  # the second long job waited for the long slot


def test_worker_heartbeat_makes_readyz_ready(db_url, svc, test_catalogue):
    from fastapi.testclient import TestClient

    from service.app import create_app

    settings = svc.settings(db_url)
    app = create_app(settings, catalogue=test_catalogue)
    worker = build_worker(settings, sessions=app.state.sessions)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        with TestClient(app) as client:
            for _ in range(50):
                resp = client.get("/readyz")
                if resp.status_code == 200:
                    break
                worker.stop.wait(0.1)
            assert resp.status_code == 200 and resp.json()["workers"] == 1
    finally:
        worker.stop.set()
        thread.join(10)
        worker.executor.shutdown()
        app.state.engine.dispose()


def test_real_wordle_reward_exercise_solution_and_template(sessions, svc, add_submission):
    """The course's ch07.wordle_reward through the worker: the reference solution gets full marks."""
    from grading.exercise import DEFAULT_EXERCISES_ROOT, DEFAULT_REFERENCE_ROOT, Catalogue

    catalogue = Catalogue()
    if "ch07.wordle_reward" not in catalogue:
        pytest.skip("ch07.wordle_reward is not in the catalogue yet")
    exercise = catalogue.get("ch07.wordle_reward")
    with transaction(sessions) as s:
        solved, _ = add_submission(s, exercise_id=exercise.id, max_score=exercise.manifest.max_score,
                                   notebook=exercise.solution_path.read_bytes())
        template, _ = add_submission(s, exercise_id=exercise.id, max_score=exercise.manifest.max_score,
                                     notebook=exercise.notebook_path.read_bytes())
    settings = svc.settings(sessions.kw["bind"].url.render_as_string(hide_password=False),
                            exercises_root=DEFAULT_EXERCISES_ROOT, reference_root=DEFAULT_REFERENCE_ROOT)
    _run_burst(settings, sessions)
    with sessions() as s:
        good, bad = s.get(Submission, solved.id), s.get(Submission, template.id)
        assert (good.status, good.score) == ("graded", exercise.manifest.max_score)
        assert bad.status in ("graded", "error") and bad.score == 0.0


def test_worker_grades_in_the_bwrap_sandbox(sessions, svc, add_submission):
    """The deployment default: two pool processes, each kernel in bwrap under its own sandbox user."""
    from grading.sandbox import probe

    found = probe()
    if not found.usable:
        pytest.skip(f"bwrap unusable here: {found.reason}")
    with transaction(sessions) as s:
        subs = [add_submission(s, notebook=svc.notebook(solved=bool(i % 2)))[0] for i in range(4)]
    settings = svc.settings(sessions.kw["bind"].url.render_as_string(hide_password=False), sandbox="bwrap",
                            worker_slots=2, short_reserved_slots=0)
    _run_burst(settings, sessions)
    with sessions() as s:
        got = [(s.get(Submission, x.id).status, s.get(Submission, x.id).score,
                s.get(Submission, x.id).result["sandbox"]) for x in subs]
    assert got == [("graded", 0.0, "bwrap"), ("graded", 3.0, "bwrap")] * 2
