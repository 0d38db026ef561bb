"""Hostile notebooks aimed at the grader itself (tests/fixtures/notebooks/hostile/build.py), graded end to
end on the real ch07.wordle_reward exercise with real kernels: forged answer markers, decoding
allocations, payload floods, hidden-input and grader-cell leaks, deep nesting and cell floods.

Each attack would have ended not_gradable, leaked, or been accepted on main; here each fails only
the attacker's own checks, with a reason, and nothing hidden reaches any field of the result.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from grading.errors import InvalidSubmission
from grading.exercise import Catalogue
from grading.i18n import MESSAGES
from grading.pipeline import PROGRESS_BURST, PROGRESS_PER_S, grade_notebook, load_submission
from grading.result import Status
from service.cli import main

HOSTILE = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks" / "hostile"
EXERCISE = "ch07.wordle_reward"
_cache: dict[str, tuple] = {}


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue()


@pytest.fixture(scope="module")
def graded(catalogue, engine_sandbox):
    def grade(name: str):
        if name not in _cache:
            events: list[dict] = []
            result = grade_notebook((HOSTILE / f"{name}.ipynb").read_bytes(), catalogue=catalogue,
                                    sandbox=engine_sandbox, progress=lambda e: events.append(e.to_json()))
            _cache[name] = (result, events)
        return _cache[name]
    return grade


def scores(result) -> dict[str, float]:
    return {c.name: c.score for c in result.checks}


def feedback(result, check: str) -> str:
    return next(c.feedback for c in result.checks if c.name == check)


def hidden_strings(catalogue) -> list[str]:
    """Strings of hidden cases (inputs and expected values) that appear nowhere a learner may look (public
    calls, feedback hints, the manifest, the engine's messages, the template learners are given)."""
    exercise = catalogue.get(EXERCISE)
    checks = exercise.reference()["checks"]
    public = json.dumps([[c.get("args"), c.get("label")] for spec in checks.values() for c in spec["calls"]
                         if c.get("public")] + [spec.get("feedback") for spec in checks.values()]
                        + [exercise.manifest.model_dump(mode="json"), MESSAGES], ensure_ascii=False)
    # the released template is the learner's: its words (a result key its self-check prints) are not secret
    public += "\n".join("".join(c["source"]) for c in json.loads(exercise.notebook_path.read_text())["cells"])
    found = []
    for spec in checks.values():
        for call in spec["calls"]:
            if call.get("public"):
                continue
            stack = [call.get("args"), call.get("kwargs"), call.get("expect")]
            while stack:
                v = stack.pop()
                if isinstance(v, str) and len(v) >= 8 and v not in public:
                    found.append(v)
                elif isinstance(v, (list, tuple)):
                    stack.extend(v)
                elif isinstance(v, dict):
                    stack.extend(v.keys())
                    stack.extend(v.values())
    return found


# --- intake: refused before a kernel starts ------------------------------------------------------------

@pytest.mark.parametrize("name,code,says", [
    ("deep_brackets", "invalid_json", "deeper than 64 levels"),
    ("deep_list", "invalid_json", "deeper than 64 levels"),
    ("many_cells", "too_many_cells", "limit of 300 code cells"),
])
def test_nesting_and_cell_floods_are_refused_at_intake(catalogue, capsys, name, code, says):
    raw = (HOSTILE / f"{name}.ipynb").read_bytes()
    with pytest.raises(InvalidSubmission) as err:
        load_submission(raw, exercise_id=None, catalogue=catalogue)
    assert err.value.code == code and says in err.value.message  # the HTTP status is the service's
    assert main(["grade", str(HOSTILE / f"{name}.ipynb"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == code


# --- decoding: the learner's values fail their own checks, never the grader ------------------------------

@pytest.mark.slow
def test_marker_keys_on_hidden_inputs_fail_only_those_cases(graded, catalogue):
    result, _ = graded("marker_keys")
    # every hidden case fails, however many the reference holds (issue 12 added cases to this check)
    hidden = [c for c in catalogue.get(EXERCISE).reference()["checks"]["hidden_cases"]["calls"] if not c.get("public")]
    assert result.status is Status.GRADED, result.message
    got = scores(result)
    assert got["public_cases"] == 2 and got["hidden_cases"] == 0
    assert got["partial_credit"] == 1.5 and got["feedback_string"] == 1.5
    assert len(hidden) >= 7 and f"{len(hidden)} of {len(hidden)} hidden cases failed" in feedback(result, "hidden_cases")


@pytest.mark.slow
def test_forged_payload_values_are_uncomparable_not_a_grader_fault(graded):
    result, _ = graded("forged_payload")
    assert result.status is not Status.NOT_GRADABLE and result.score == 0
    for check in result.checks:
        assert "returned a value that could not be compared" in check.feedback, (check.name, check.feedback)
    assert all(c.status == "ok" for c in result.cells)


@pytest.mark.slow
def test_huge_results_hit_the_answer_limit_and_cost_only_their_checks(graded):
    result, _ = graded("huge_results")
    assert result.status is Status.ERROR and "answer limit" in result.limits_hit
    got = scores(result)
    assert got["public_cases"] == 2 and got["partial_credit"] == 1.5 and got["feedback_string"] == 1.5
    assert got["hidden_cases"] == 0 and "too large to check" in feedback(result, "hidden_cases")
    assert "16 MB answer limit" in result.message


@pytest.mark.slow
def test_payload_flood_is_dropped_on_arrival_and_reported(graded):
    result, _ = graded("payload_flood")
    assert result.status is Status.ERROR and "answer limit" in result.limits_hit and result.score == 0
    assert result.message.count("answer limit") == 1  # one line, counted, not one per extraction cell


# --- leaks: nothing hidden and nothing of the grader's cells in any field --------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", ["record_hidden", "transformer_capture"])
def test_no_hidden_case_or_grader_cell_reaches_the_result(graded, catalogue, name):
    result, _ = graded(name)
    dumped = json.dumps(result.to_dict(), ensure_ascii=False)
    secrets = hidden_strings(catalogue)
    assert len(secrets) >= 10
    assert [s for s in secrets if s in dumped] == []
    assert not re.search(r"_tg_[0-9a-f]{4}", dumped) and not re.search(r"[0-9a-f]{8}", dumped)
    assert result.status is not Status.NOT_GRADABLE


@pytest.mark.slow
def test_public_echoes_still_show_the_learners_public_values(graded):
    result, _ = graded("record_hidden")  # replays only what public calls recorded: public, so shown
    assert "<guess>[apple]</guess> <guess>[crane]</guess>" in feedback(result, "feedback_string")


# --- cell floods under the cap: one line per kind of problem, throttled progress -------------------------

@pytest.mark.slow
def test_many_failing_cells_give_one_counted_line_and_throttled_progress(graded):
    result, events = graded("repeated_errors")
    assert result.status is Status.ERROR and len(result.cells) == 300
    assert result.score == result.max_score  # the solution cells still earn everything
    assert "ValueError: the same mistake (and 2" in result.message and len(result.message) < 400
    cells = [e for e in events if e["event"] == "cell"]
    assert len(cells) <= PROGRESS_BURST + PROGRESS_PER_S * result.duration_s + 1 < 300
    assert events[-1]["event"] == "done"


@pytest.mark.slow
def test_a_deeply_nested_kernel_message_is_the_learners_error(graded):
    result, _ = graded("deep_message")
    assert result.status is Status.ERROR and scores(result)["public_cases"] == 2
