"""Superseded attempts: a new attempt replaces the learner's still-queued ones (course setting, on by default
for training exercises), never a running one or the latest, and shows as `superseded` in API and gradebook."""

from __future__ import annotations

import json
import threading

from sqlalchemy import select

from service.db import transaction
from service.queue import service as queue
from service.queue.models import Job

URL = "/api/v1/submissions"


def _submit(api, svc, user="alice", exercise="ch05.svc_long"):
    resp = api.post(
        URL,
        files={"notebook": ("s.ipynb", svc.notebook(exercise), "application/x-ipynb+json")},
        headers=svc.auth(api.tokens[user]),
    )
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def _get(api, svc, sid, user="alice"):
    return api.get(f"{URL}/{sid}", headers=svc.auth(api.tokens[user])).json()


def _claim(api, lanes=("short", "long")):
    with transaction(api.app_state.sessions) as s:
        return queue.claim(s, worker_id="w", lanes=lanes, free_devices=0, max_world_size=8, lease_s=30)


def test_a_new_training_attempt_supersedes_the_queued_ones_but_never_the_latest(api, svc):
    first, second, third = (_submit(api, svc) for _ in range(3))
    bob = _submit(api, svc, user="bob")
    got = {sid: _get(api, svc, sid) for sid in (first, second, third)}
    assert [got[s]["status"] for s in (first, second, third)] == ["superseded", "superseded", "queued"]
    assert (got[first]["superseded_by"], got[second]["superseded_by"]) == (second, third)
    assert "superseded by your attempt 2" in got[first]["message"] and got[first]["score"] is None
    assert _get(api, svc, bob, user="bob")["status"] == "queued"  # another learner's attempt is untouched
    with api.app_state.sessions() as s:
        statuses = {j.submission_id: j.status for j in s.query(Job)}
    assert (statuses[first], statuses[second], statuses[third], statuses[bob]) == (
        "cancelled",
        "cancelled",
        "queued",
        "queued",
    )
    # the SSE stream of a superseded attempt ends with done/superseded
    with api.stream("GET", f"{URL}/{first}/events", headers=svc.auth(api.tokens["alice"])) as resp:
        frames = [json.loads(line[6:]) for line in resp.iter_lines() if line.startswith("data: ")]
    assert frames[-1] == {"event": "done", "status": "superseded", "score": None, "superseded_by": second, "run": 1}
    book = api.get("/api/v1/courses/c1/gradebook", headers=svc.auth(api.tokens["teacher"])).json()["rows"]
    row = next(r for r in book if r["user"] == "alice" and r["exercise_id"] == "ch05.svc_long")
    assert (row["attempts"], row["superseded"], row["submission_id"], row["status"]) == (3, 2, third, "queued")
    sheet = api.get("/api/v1/courses/c1/gradebook?format=csv", headers=svc.auth(api.tokens["teacher"])).text
    assert sheet.splitlines()[0].split(",")[8] == "superseded"  # after user, issuer, subject, ...


def test_a_running_attempt_is_never_superseded(api, svc):
    first = _submit(api, svc)
    held = _claim(api)
    assert held.submission_id == first
    second = _submit(api, svc)
    assert (_get(api, svc, first)["status"], _get(api, svc, second)["status"]) == ("running", "queued")
    with api.app_state.sessions() as s:
        assert s.get(Job, held.job_id).status == "running"


def test_a_claim_in_flight_wins_over_a_concurrent_supersede(sessions, add_submission):
    """The claim's transaction holds the row; the cancel waits for it and then finds the job running."""
    with transaction(sessions) as s:
        sub, _ = add_submission(s, lane="long")
    claimed, go_cancel, cancelled = threading.Event(), threading.Event(), []

    def claimer():
        with transaction(sessions) as s:
            queue.claim(s, worker_id="w", lanes=("long",), free_devices=0, max_world_size=8, lease_s=30)
            claimed.set()
            go_cancel.wait(5)
            threading.Event().wait(0.3)  # the cancel is now waiting for this transaction

    def canceller():
        claimed.wait(5)
        go_cancel.set()
        with transaction(sessions) as s:
            cancelled.extend(queue.cancel_queued(s, submission_ids=[sub.id], reason="superseded"))

    threads = [threading.Thread(target=claimer), threading.Thread(target=canceller)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert cancelled == []
    with sessions() as s:
        assert s.scalar(select(Job.status).where(Job.submission_id == sub.id)) == "running"


def test_light_exercises_are_kept_unless_the_course_says_all(api, svc):
    teacher = svc.auth(api.tokens["teacher"])
    assert api.get("/api/v1/courses/c1/settings", headers=teacher).json() == {
        "course": "c1",
        "supersede": "training",
        "supersede_is_default": True,
        "timezone": "UTC",
    }
    first = _submit(api, svc, exercise="ch05.svc_sum")
    _submit(api, svc, exercise="ch05.svc_sum")
    assert _get(api, svc, first)["status"] == "queued"
    put = api.put("/api/v1/courses/c1/settings", json={"supersede": "all"}, headers=teacher)
    assert put.status_code == 200 and put.json()["supersede_is_default"] is False
    third = _submit(api, svc, exercise="ch05.svc_sum")
    assert _get(api, svc, first)["status"] == "superseded" and _get(api, svc, third)["status"] == "queued"
    assert api.put("/api/v1/courses/c1/settings", json={"supersede": "off"}, headers=teacher).status_code == 200
    long_first = _submit(api, svc)
    _submit(api, svc)
    assert _get(api, svc, long_first)["status"] == "queued"  # off: training attempts are kept too
    bad = api.put("/api/v1/courses/c1/settings", json={"supersede": "sometimes"}, headers=teacher)
    assert bad.status_code == 422
    learner = api.put("/api/v1/courses/c1/settings", json={"supersede": "all"}, headers=svc.auth(api.tokens["alice"]))
    assert learner.status_code == 403
    other = api.put("/api/v1/courses/c2/settings", json={"supersede": "all"}, headers=teacher)
    assert other.status_code == 403


def test_regrades_are_never_superseded(api, svc):
    first = _submit(api, svc)
    held = _claim(api)
    with transaction(api.app_state.sessions) as s:
        assert queue.complete(s, job=held)
    regrade = api.post(f"{URL}/{first}/regrade", headers=svc.auth(api.tokens["teacher"]))
    assert regrade.status_code == 202 and regrade.json()["queued"] == 1
    _submit(api, svc)
    assert _get(api, svc, first)["status"] == "queued"  # its regrade job still waits


def test_superseded_attempts_do_not_use_up_the_attempt_limit(api, svc):
    api.app_state.settings = api.app_state.settings.model_copy(update={"max_attempts_per_exercise": 2})
    ids = [_submit(api, svc) for _ in range(3)]  # two superseded, so the third is allowed
    assert [_get(api, svc, s)["status"] for s in ids] == ["superseded", "superseded", "queued"]
    assert [_get(api, svc, s)["attempt"] for s in ids] == [1, 2, 3]


def test_an_instructor_can_still_grade_a_superseded_attempt(api, svc):
    first = _submit(api, svc)
    _submit(api, svc)
    assert _get(api, svc, first)["superseded_by"] is not None
    regrade = api.post(f"{URL}/{first}/regrade", headers=svc.auth(api.tokens["teacher"]))
    assert regrade.status_code == 202 and regrade.json()["submission_ids"] == [first]
    again = _get(api, svc, first)
    assert (again["status"], again["superseded_by"]) == ("queued", None)


def test_not_gradable_attempts_do_not_use_up_the_attempt_limit(api, svc):
    """A grader fault is never the learner's loss: an attempt the grader could not grade gives its place back."""
    from service.states import SubmissionStatus
    from service.submissions.models import Submission

    api.app_state.settings = api.app_state.settings.model_copy(update={"max_attempts_per_exercise": 1})
    first = _submit(api, svc, exercise="ch05.svc_sum")
    refused = api.post(
        URL,
        files={"notebook": ("s.ipynb", svc.notebook("ch05.svc_sum"), "application/x-ipynb+json")},
        headers=svc.auth(api.tokens["alice"]),
    )
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "attempt_limit"
    with transaction(api.app_state.sessions) as s:
        s.get(Submission, first).status = SubmissionStatus.NOT_GRADABLE
    second = _submit(api, svc, exercise="ch05.svc_sum")
    assert _get(api, svc, second)["attempt"] == 2
