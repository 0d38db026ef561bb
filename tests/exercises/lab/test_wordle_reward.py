"""compute_score: the recipe's seven public tests and COURSE.md section 10 item 1's hidden cases."""

import math

import numpy as np
import pytest

from exercises.lab.wordle.reward import _partial_answer, compute_score


def g(word: str) -> str:
    return f"<guess>[{word}]</guess>"


def test_public_1_correct_in_two_turns():
    out = compute_score(g("apple") + g("crane"), "crane", {"num_turns": 2, "formatted_turns": 2})
    assert out["correct"] == 1.0 and out["partial"] == 0.0
    assert out["length_bonus"] == pytest.approx(0.5)
    assert out["score"] == pytest.approx(1.7, abs=1e-9)
    assert out["num_guesses"] == 2


def test_public_2_partial_is_best_guess():
    out = compute_score(g("crown") + g("vivid"), "crane", {"num_turns": 2, "formatted_turns": 2})
    assert out["partial"] == pytest.approx(0.5, abs=1e-9)
    assert out["score"] == pytest.approx(0.7, abs=1e-9)


def test_public_3_partial_answer_duplicates():
    assert _partial_answer(["allee"], "apple") == pytest.approx(0.5, abs=1e-9)


def test_public_4_one_missing_formatted_turn():
    out = compute_score(g("vivid"), "crane", {"num_turns": 2, "formatted_turns": 1})
    assert out["format"] == pytest.approx(0.5)
    assert out["score"] == pytest.approx(0.1, abs=1e-9)


def test_public_5_missing_brackets_scores_nothing():
    out = compute_score("<guess>crane</guess>", "crane")
    assert out == {"score": 0.0, "correct": 0.0, "partial": 0.0, "length_bonus": 0.0, "format": 0.0,
                   "num_guesses": 0}


def test_public_6_two_tags_no_formatted_turn():
    out = compute_score(g("crane") + g("slate"), "brick", {"num_turns": 1, "formatted_turns": 0})
    assert out["format"] == 0.0


def test_public_7_empty_text():
    out = compute_score("", "crane")
    assert out["score"] == 0.0 and out["num_guesses"] == 0


@pytest.mark.parametrize(
    ("text", "answer", "extra", "expected"),
    [
        (g("crane"), "crane", {"num_turns": 1, "formatted_turns": 1}, 2.2),
        (g("slate") + g("crane") + g("brace"), "grace", {"num_turns": 3, "formatted_turns": 3}, 1.0),
        (g("speed") + g("erase"), "geese", {"num_turns": 6, "formatted_turns": 2}, 0.5 + 0.2 * 2 / 6),
        (g("stare") + "<GUESS>oops</GUESS>" + g("crane"), "crane", None, 1 + 1 / 3 + 0.2 * 2 / 3),
    ],
    ids=["first-guess", "slate-crane-brace", "speed-erase", "no-extra-info"],
)
def test_hidden_cases(text, answer, extra, expected):
    assert compute_score(text, answer, extra)["score"] == pytest.approx(expected, abs=1e-9)


def test_hidden_case_values_match_course_rounding():
    assert round(compute_score(g("speed") + g("erase"), "geese",
                               {"num_turns": 6, "formatted_turns": 2})["score"], 5) == 0.56667
    assert round(compute_score(g("stare") + "<GUESS>oops</GUESS>" + g("crane"), "crane")["score"],
                 5) == 1.46667
    assert compute_score(g("slate") + g("crane") + g("brace"), "grace",
                         {"num_turns": 3, "formatted_turns": 3})["partial"] == pytest.approx(0.8)


def test_correct_is_the_last_guess_only():
    out = compute_score(g("crane") + g("slate"), "crane", {"num_turns": 2, "formatted_turns": 2})
    assert out["correct"] == 0.0
    assert out["partial"] == pytest.approx(1.0)  # answer guessed but not last: partial reaches 1.0


def test_ground_truth_normalised_and_guess_lowercased():
    assert compute_score("<guess>[CRANE]</guess>", "  Crane ", {"num_turns": 1})["correct"] == 1.0


@pytest.mark.parametrize("bad", [True, False, 0, -2, "3", None, 2.5])
def test_num_turns_falls_back_when_not_positive_int(bad):
    out = compute_score(g("crane") + "<guess>x", "crane", {"num_turns": bad})
    assert out["length_bonus"] == pytest.approx(0.5)  # max(2 open tags, 1 guess)


def test_int_like_numpy_values_are_accepted():
    out = compute_score(g("crane"), "crane", {"num_turns": np.int64(4), "formatted_turns": np.int32(9)})
    assert out["length_bonus"] == pytest.approx(0.25)
    assert out["format"] == 1.0  # formatted capped at num_turns


def test_score_range():
    for text in ["", g("zzzzz"), g("crane") * 7]:
        s = compute_score(text, "crane")["score"]
        assert 0.0 <= s <= 2.2 and not math.isnan(s)
