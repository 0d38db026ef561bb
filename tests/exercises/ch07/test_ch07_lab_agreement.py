"""ch07 answers agree with the course runtime (exercises.lab.wordle) on every graded input.

The answer files are computed from the exercises' own solutions; the lab was written independently, so
agreement on all hidden and public calls cross-checks both against COURSE.md §2.
"""
from __future__ import annotations

from importlib import import_module

import pytest

from grading.exercise import Catalogue

# the package re-exports functions under the same names as its modules, so import the modules explicitly
lab_loop = import_module("exercises.lab.wordle.agent_loop")
lab_fb = import_module("exercises.lab.wordle.feedback")
lab_reward = import_module("exercises.lab.wordle.reward")

CAT = Catalogue()
REWARD = CAT.get("ch07.wordle_reward").reference()["checks"]
LOOP = CAT.get("ch07.agent_loop").reference()["checks"]


def _calls(ref, *checks):
    return [(c, call) for c in checks for call in ref[c]["calls"]]


@pytest.mark.parametrize("check,call", _calls(REWARD, "public_cases", "hidden_cases", "turn_accounting", "last_guess"))
def test_compute_score_matches_lab(check, call):
    _, text, truth, extra = call["args"]
    got = lab_reward.compute_score(text, truth, extra)
    assert got == pytest.approx(call["expect"], abs=1e-12)


@pytest.mark.parametrize("check,call", _calls(REWARD, "feedback_string"))
def test_feedback_matches_lab(check, call):
    assert lab_fb.feedback(*call["args"]) == call["expect"]


@pytest.mark.parametrize("check,call", _calls(LOOP, "format_truth_table"))
def test_format_truth_table_matches_lab(check, call):
    assert lab_fb.has_canonical_format(*call["args"]) == call["expect"]


@pytest.mark.parametrize("check,call", _calls(LOOP, "env_messages", "invalid_moves"))
def test_env_message_matches_lab(check, call):
    reply, answer, turn, previous = call["args"]
    assert lab_fb.env_message(lab_fb.parse_guess(reply), answer, turn, previous) == call["expect"]


@pytest.mark.parametrize("check,call", _calls(LOOP, "response_split"))
def test_response_split_matches_lab(check, call):
    segments, *cap = call["args"]
    lab_segments = [(ids, 1 if role == "assistant" else 0) for role, ids in segments]
    assert list(lab_loop.build_response(lab_segments, *cap)) == call["expect"]


def test_course_env_message_example():
    call = LOOP["env_messages"]["calls"][0]
    assert call["args"][:3] == ["<guess>[crown]</guess>", "crane", 1]
    assert call["expect"] == "\nC R O W N\nG G X X Y\nYou have 5 guesses left."


def test_response_cap_is_4096_by_default():
    long = [call for call in LOOP["response_split"]["calls"] if len(call["args"]) == 1]
    assert long and all(len(c["expect"][0]) <= 4096 for c in long)
    assert any(len(c["expect"][0]) == 4096 and len(c["expect"][1]) == 4096 for c in long)
