"""A grade without a measured run time stores no grading time (the statistics once showed a median of 0.0 s)."""

from __future__ import annotations

import pytest

from grading.result import GradeResult, Status
from service.db import transaction
from service.grades.service import record_grade
from service.submissions.models import Submission


@pytest.mark.parametrize(("duration_s", "stored"), [(0.0, None), (2.5, 2.5)])
def test_an_unmeasured_run_stores_no_grading_time(sessions, add_submission, duration_s, stored):
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    result = GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0)
    result.duration_s = duration_s
    with transaction(sessions) as s:
        record_grade(s, submission_id=sub.id, result=result)
    with sessions() as s:
        assert s.get(Submission, sub.id).grading_s == stored
