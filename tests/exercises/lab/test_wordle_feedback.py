"""Feedback vectors, env messages and the canonical-format truth table (COURSE.md section 10, items 2-4)."""

import pytest

from exercises.lab.wordle.feedback import env_message, feedback, has_canonical_format, parse_guess


@pytest.mark.parametrize(
    ("guess", "answer", "expected"),
    [
        ("crown", "crane", "G G X X Y"),
        ("speed", "geese", "Y X G Y X"),
        ("lever", "eerie", "X G X Y Y"),
        ("allee", "apple", "G Y X X G"),
        ("crane", "crane", "G G G G G"),
        ("fjord", "crane", "X X X Y X"),
    ],
)
def test_feedback_vectors(guess, answer, expected):
    assert feedback(guess, answer) == expected


def test_feedback_rejects_length_mismatch():
    with pytest.raises(ValueError, match="differ in length"):
        feedback("cat", "crane")


@pytest.mark.parametrize("turn", range(1, 6))
def test_env_message_valid_guess(turn):
    assert env_message("crown", "crane", turn, []) == (
        f"\nC R O W N\nG G X X Y\nYou have {6 - turn} guesses left."
    )


def test_env_message_no_guess():
    assert env_message(None, "crane", 2, ["slate"]) == (
        "\nInvalid Move: No valid 5-letter guess found. Resubmit exactly as <guess>[word]</guess>."
        "\nYou have 4 guesses left."
    )


def test_env_message_repeated_guess():
    msg = env_message("SLATE", "crane", 3, ["slate", "crown"])
    assert msg.startswith("\nYou attempted an invalid move")
    assert "already guessed 'slate'" in msg
    assert msg.endswith("\nYou have 3 guesses left.")
    assert "G" not in msg.split("\n")[1].split()  # no feedback row for a repeat


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<guess>[crane]</guess>", True),
        ("I think... <guess> [Crane] </guess>", True),
        ("<guess>crane</guess>", False),
        ("<guess>[cran]</guess>", False),
        ("<GUESS>[crane]</GUESS>", False),
        ("<guess>[crane]</guess><guess>[slate]</guess>", False),
        ("<guess>[crane]</guess> and maybe <Guess", False),
        ("", False),
        ("crane", False),
    ],
)
def test_has_canonical_format_truth_table(reply, expected):
    assert has_canonical_format(reply) is expected


def test_parse_guess_takes_last_canonical_match():
    assert parse_guess("<guess>[crane]</guess> no, <guess>[SLATE]</guess>") == "slate"
    assert parse_guess("<guess>crane</guess>") is None
