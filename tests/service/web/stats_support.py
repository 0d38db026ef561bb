"""One course's rows for the statistics page tests (test_stats_pages.py over HTTP, test_stats_browser.py in
Chromium): real submission and job rows written through the models, as the intake and a worker leave them.

Course `COURSE`, exercise ch05.svc_sum (3 points: total_value 2, word_value 1), learners s01..s06:
s01 3/3 (both checks), s02 1/3 then 2/3 (best: total_value passed, word_value failed), s03 0/3 (both failed,
its run still queued), s04 only ch05.svc_long, s05 and s06 nothing. Finished runs: s01's and s02's."""

from __future__ import annotations

import datetime as dt

COURSE = "sts"
EXERCISE = "ch05.svc_sum"
LEARNERS = [f"s0{n}" for n in range(1, 7)]
# (learner, exercise, score, total_value passed, word_value passed, run finished: (wait s, grading s) or None)
ATTEMPTS = [
    ("s01", EXERCISE, 3.0, True, True, (2.0, 5.0)),
    ("s02", EXERCISE, 1.0, False, True, (4.0, 7.0)),
    ("s02", EXERCISE, 2.0, True, False, (6.0, 9.0)),
    ("s03", EXERCISE, 0.0, False, False, None),
    ("s04", "ch05.svc_long", 3.0, True, True, (1.0, 3.0)),
]


def seed(sessions) -> dict:
    """The rows above and an instructor's token; returns {"token", "ids": [submission id per attempt]}."""
    from service.auth.service import create_token, get_or_create_identity, set_membership
    from service.db import transaction, utcnow
    from service.queue import service as queue
    from service.submissions.models import Submission

    now = utcnow()
    ids = []
    with transaction(sessions) as s:
        token = create_token(s, user=f"{COURSE}_tess", role="instructor", course=COURSE)
        people = {}
        for name in LEARNERS:
            people[name] = who = get_or_create_identity(s, issuer="titangrade", subject=name)
            set_membership(s, identity=who, course=COURSE, role="learner")
        for n, (name, exercise_id, score, total_ok, word_ok, run) in enumerate(ATTEMPTS):
            sub = Submission(
                id=f"5757{n:028x}", identity_id=people[name].id, user=name, course=COURSE,
                exercise_id=exercise_id, attempt=1, notebook=b"{}", status="graded", score=score, max_score=3.0,
                created_at=now - dt.timedelta(hours=2, minutes=-n),
                result={"checks": [
                    {"name": "total_value", "passed": total_ok, "score": 2.0 * total_ok, "max_score": 2.0,
                     "feedback": "total is wrong" if not total_ok else ""},
                    {"name": "word_value", "passed": word_ok, "score": 1.0 * word_ok, "max_score": 1.0,
                     "feedback": "word is wrong" if not word_ok else ""},
                ]},
            )  # fmt: skip
            s.add(sub)
            s.flush()
            job = queue.enqueue(
                s, submission_id=sub.id, lane="short", priority=0, devices=0, world_size=1, max_attempts=3
            )
            if run is not None:
                wait_s, grading_s = run
                finished = now - dt.timedelta(hours=1, minutes=-n)
                job.status, job.finished_at = "done", finished
                job.claimed_at = finished - dt.timedelta(seconds=grading_s)
                job.created_at = job.claimed_at - dt.timedelta(seconds=wait_s)
                sub.graded_at = finished
            ids.append(sub.id)
    return {"token": token, "ids": ids}
