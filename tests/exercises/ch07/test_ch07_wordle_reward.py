"""ch07.wordle_reward: the hidden answers agree with COURSE.md §2/§10, and the notebooks are well-formed."""
from __future__ import annotations

import json

import nbformat
import pytest

from grading.exercise import Catalogue

EX = Catalogue().get("ch07.wordle_reward")
REF = EX.reference()["checks"]


def _expect(check: str, args: list) -> object:
    for call in REF[check]["calls"]:
        if call["args"] == args:
            return call["expect"]
    raise AssertionError(f"no call with args {args!r} in check {check}")


G = lambda *w: " ".join(f"<guess>[{x}]</guess>" for x in w)  # noqa: E731

# (check, args, field, value) straight from COURSE.md §2 "The 7 tests" and §10 item 1
COURSE_SCORES = [
    ("public_cases", ["wordle", G("apple", "crane"), "crane", {"num_turns": 2, "formatted_turns": 2}], "score", 1.7),
    ("public_cases", ["wordle", G("apple", "crane"), "crane", {"num_turns": 2, "formatted_turns": 2}],
     "length_bonus", 0.5),
    ("public_cases", ["wordle", G("crown", "vivid"), "crane", None], "partial", 0.5),
    ("public_cases", ["wordle", G("crown", "vivid"), "crane", None], "score", 0.7),
    ("public_cases", ["wordle", G("vivid") + " <guess>vivid</guess>", "crane", {"num_turns": 2, "formatted_turns": 1}],
     "format", 0.5),
    ("public_cases", ["wordle", G("vivid") + " <guess>vivid</guess>", "crane", {"num_turns": 2, "formatted_turns": 1}],
     "score", 0.1),
    ("public_cases", ["wordle", "<guess>crane</guess>", "crane", None], "score", 0.0),
    ("public_cases", ["wordle", "<guess>crane</guess>", "crane", None], "num_guesses", 0),
    ("public_cases", ["wordle", G("slate", "crane"), "crane", {"num_turns": 1, "formatted_turns": 0}], "format", 0.0),
    ("public_cases", ["wordle", "", "crane", None], "score", 0.0),
    ("hidden_cases", ["wordle", "<think>c first</think>" + G("crane"), "crane", {"num_turns": 1, "formatted_turns": 1}],
     "score", 2.2),
    ("hidden_cases", ["wordle", G("slate", "crane", "brace"), "grace", {"num_turns": 3, "formatted_turns": 3}],
     "score", 1.0),
    ("hidden_cases", ["wordle", G("slate", "crane", "brace"), "grace", {"num_turns": 3, "formatted_turns": 3}],
     "partial", 0.8),
    ("hidden_cases", ["wordle", G("speed", "erase"), "geese", {"num_turns": 6, "formatted_turns": 2}],
     "score", 0.56667),
    ("hidden_cases", ["wordle", G("stare") + " <GUESS>oops</GUESS> " + G("crane"), "crane", None], "score", 1.46667),
]


@pytest.mark.parametrize("check,args,field,value", COURSE_SCORES)
def test_reward_values_match_course(check, args, field, value):
    assert _expect(check, args)[field] == pytest.approx(value, abs=1e-5)


@pytest.mark.parametrize("guess,answer,marks", [
    ("crown", "crane", "G G X X Y"), ("speed", "geese", "Y X G Y X"),
    ("lever", "eerie", "X G X Y Y"), ("allee", "apple", "G Y X X G"),
])
def test_feedback_values_match_course(guess, answer, marks):
    assert _expect("feedback_string", [guess, answer]) == marks


def test_partial_answer_course_case():
    assert _expect("partial_credit", [["allee"], "apple"]) == pytest.approx(0.5, abs=1e-12)


def test_scores_stay_in_range_and_parts_add_up():
    for check in ("public_cases", "hidden_cases", "turn_accounting", "last_guess"):
        for call in REF[check]["calls"]:
            e = call["expect"]
            assert 0.0 <= e["score"] <= 2.2 + 1e-12
            assert e["score"] == pytest.approx(e["correct"] + e["partial"] + e["length_bonus"] + 0.2 * e["format"])


def test_notebooks_carry_id_and_no_outputs():
    for path in (EX.notebook_path, EX.solution_path):
        nb = nbformat.read(path, as_version=4)
        assert nb.metadata["titangrade"]["exercise_id"] == EX.id
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    template = EX.notebook_path.read_text(encoding="utf-8")
    assert "NotImplementedError" in template
    for call in REF["hidden_cases"]["calls"]:  # hidden replies never appear in what learners get
        assert json.dumps(call["args"][1])[1:-1] not in template
