"""Function checks judge kernel-side call results; public inputs shown, hidden ones only counted."""
import pytest

from grading import checks
from grading.checks import CheckContext
from grading.codec import MISSING, Raised

SPEC = {
    "compare": "numeric", "rtol": 1e-9,
    "calls": [
        {"args": [2, 1], "expect": 0.5, "public": True, "label": "two greens"},
        {"args": [5, 0], "expect": 1.0},
        {"args": [3, 2], "expect": 0.8},
        {"args": [-1, 0], "raises": "ValueError"},
    ],
}


def judge(results, spec=SPEC, answer=None):
    ctx = CheckContext(lang="en", name="f", answer_name="partial", calls=results)
    return checks.get("function")(answer, spec, ctx)


def test_all_correct():
    out = judge([0.5, 1.0, 0.8, Raised("ValueError", "bad")])
    assert out.fraction == 1 and out.feedback == ""


def test_public_failure_shows_input_and_learner_output_never_expected():
    out = judge([0.6, 1.0, 0.8, Raised("ValueError", "bad")])
    assert out.fraction == pytest.approx(0.75)
    assert "two greens: partial(2, 1) returned 0.6" in out.feedback
    assert "0.5" not in out.feedback


def test_hidden_failures_are_counted_not_shown():
    out = judge([0.5, 0.9, 0.8, 0.0])
    assert out.fraction == pytest.approx(0.5)
    assert "2 of 3 hidden cases failed" in out.feedback
    assert "5" not in out.feedback.replace("0.5", "")


def test_must_raise_accepts_subclasses_and_rejects_values():
    sub = Raised("WordLengthError", "x", bases=("ValueError", "Exception"))
    assert judge([0.5, 1.0, 0.8, sub]).fraction == 1
    assert judge([0.5, 1.0, 0.8, Raised("TypeError", "x")]).fraction == pytest.approx(0.75)


def test_raising_where_a_value_is_expected_and_timeouts_fail_that_case():
    public_raises = judge([Raised("ZeroDivisionError", "division by zero"), 1.0, 0.8, Raised("ValueError", "")])
    assert "raised ZeroDivisionError: division by zero" in public_raises.feedback
    assert judge([0.5, Raised("__timeout__", "call exceeded 2 s"), 0.8, Raised("ValueError", "")]).fraction == 0.75


def test_missing_function_or_calls_not_run():
    assert "not defined" in judge(MISSING).feedback
    not_run = judge(None)
    assert not_run.fraction == 0 and "did not run" in not_run.feedback


def test_exact_compare():
    spec = {"compare": "exact", "calls": [{"args": ["crane"], "expect": ["C", "R"], "public": True}]}
    assert judge([["C", "R"]], spec).fraction == 1
    assert judge([["C", "R", "A"]], spec).fraction == 0


def test_public_timeout_reads_as_a_timeout():
    out = judge([Raised("__timeout__", "exceeded 2.0 s"), 1.0, 0.8, Raised("ValueError", "")])
    assert "partial(2, 1) raised a timeout (exceeded 2.0 s)" in out.feedback
