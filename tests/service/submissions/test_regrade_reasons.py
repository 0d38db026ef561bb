"""Why a regrade skips a submission (service/submissions/service.regrade_plan), on SQLite and PostgreSQL:
a run still queued or running, or an exercise no longer in the catalogue; the rest are queued."""

from __future__ import annotations

from service.db import transaction
from service.submissions import service as submissions
from service.submissions.models import Submission


def test_each_skip_names_its_reason_and_the_rest_are_queued(sessions, add_submission, test_catalogue):
    with transaction(sessions) as s:
        queued, _ = add_submission(s, user="ann")
        running, job = add_submission(s, user="ben")
        job.status = "running"
        retired, old = add_submission(s, user="cat", exercise_id="ch09.retired")
        old.status = "done"
        ready, done = add_submission(s, user="dan")
        done.status = "done"
        ids = [queued.id, running.id, retired.id, ready.id]
    with transaction(sessions) as s:
        subs = [s.get(Submission, i) for i in ids]
        plan, skipped = submissions.regrade_plan(s, subs=subs, catalogue=test_catalogue)
        assert [p.id for p in plan] == [ready.id]
        got = [(k.submission_id, k.reason, k.job_status) for k in skipped]
        assert got == [(queued.id, "already_pending", "queued"), (running.id, "already_pending", "running"),
                       (retired.id, "exercise_removed", None)]  # fmt: skip
        assert "no longer in the catalogue" in skipped[2].message
        made, skipped_again = submissions.regrade(s, subs=subs, priority=100, max_attempts=3, catalogue=test_catalogue)
    assert made == [ready.id] and len(skipped_again) == 3
    with sessions() as s:
        assert s.get(Submission, ready.id).run == 2 and s.get(Submission, retired.id).run == 1
