"""validate's verdict on one graded mistake: each way a declared mistake can disagree with the engine."""

from __future__ import annotations

import pytest

from grading.authoring.master import Mistake
from grading.authoring.validate import _mistake_problems
from grading.result import CheckResult, GradeResult, Status

MISTAKE = Mistake(name="off", status="graded", score=7.0, fails={"b": "square"}, patch=[], line=40)


def _result(status=Status.GRADED, a=(4.0, ""), b=(3.0, "1 of 2 hidden cases failed; hint: square each")):
    checks = [
        CheckResult(name="a", score=a[0], max_score=4.0, passed=a[0] == 4.0, feedback=a[1]),
        CheckResult(name="b", score=b[0], max_score=6.0, passed=b[0] == 6.0, feedback=b[1]),
    ]
    return GradeResult(exercise_id="ch09.x", status=status, score=a[0] + b[0], max_score=10.0, checks=checks)


def test_a_mistake_graded_as_declared_has_no_problem():
    assert _mistake_problems(MISTAKE, _result(), 10.0) == []


@pytest.mark.parametrize(
    ("result", "problem", "fix"),
    [
        (_result(b=(6.0, "passed")), "does not change the score", "make the patch break"),
        (_result(status=Status.ERROR), "ends error, declared graded", '"status": "error"'),
        (
            _result(a=(2.0, "wrong"), b=(3.0, "square")),
            "scores 5, declared 7 (lost: a 2.0/4.0; b 3.0/6.0)",
            '"score": 5',
        ),
        (_result(a=(1.0, "x"), b=(6.0, "passed")), "must fail check 'b', but it passes", "change the patch"),
        (_result(b=(3.0, "hidden cases failed")), "the feedback of 'b' lacks 'square'", "quote a phrase"),
    ],
)
def test_each_disagreement_is_named_with_its_fix(result, problem, fix):
    problems = _mistake_problems(MISTAKE, result, 10.0)
    assert any(problem in p and fix in f for p, f in problems), problems
