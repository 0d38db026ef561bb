"""Guess parsing, G/Y/X feedback and the environment text appended after each turn (COURSE.md section 2).

Verified against COURSE.md: the canonical and open-tag regexes, the feedback vectors, the valid-guess
message layout and the "no valid guess" text. Reconstructed (the exact upstream wording was not
available): the body of the repeated-guess message, which keeps the documented "You attempted an
invalid move" opening and "already guessed '<word>'" phrase.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Tags are case-sensitive, brackets required, exactly five ASCII letters.
CANONICAL_GUESS = re.compile(r"<guess>\s*\[([A-Za-z]{5})\]\s*</guess>")
#: Any opening tag, case-insensitive; used to count attempted turns and to reject chatty replies.
OPEN_TAG = re.compile(r"<guess\b", re.IGNORECASE)

MAX_TURNS = 6
NO_GUESS_MESSAGE = "Invalid Move: No valid 5-letter guess found. Resubmit exactly as <guess>[word]</guess>."


def canonical_guesses(text: str) -> list[str]:
    """Every canonical guess in ``text``, lowercased, in order."""
    return [word.lower() for word in CANONICAL_GUESS.findall(text)]


def parse_guess(reply: str) -> str | None:
    """The guess a reply makes: its last canonical match (lowercased), or None."""
    guesses = canonical_guesses(reply)
    return guesses[-1] if guesses else None


def has_canonical_format(reply: str) -> bool:
    """True when the reply has exactly one canonical tag and exactly one ``<guess`` opening."""
    return len(CANONICAL_GUESS.findall(reply)) == 1 and len(OPEN_TAG.findall(reply)) == 1


def feedback(guess: str, answer: str) -> str:
    """Wordle feedback, e.g. crown vs crane -> "G G X X Y"; greens first, yellows take the first unused letter."""
    guess, answer = guess.lower(), answer.lower()
    if len(guess) != len(answer):
        raise ValueError(f"guess {guess!r} and answer {answer!r} differ in length; compare two 5-letter words")
    marks = ["X"] * len(guess)
    unused: list[str | None] = list(answer)
    for i, (g, a) in enumerate(zip(guess, answer, strict=True)):
        if g == a:
            marks[i] = "G"
            unused[i] = None
    for i, g in enumerate(guess):
        if marks[i] == "G":
            continue
        if g in unused:
            marks[i] = "Y"
            unused[unused.index(g)] = None
    return " ".join(marks)


def guesses_left_line(turn: int, max_turns: int = MAX_TURNS) -> str:
    """The line that closes every environment message: "You have N guesses left." (N = max_turns - turn)."""
    return f"You have {max_turns - turn} guesses left."


def env_message(
    guess: str | None,
    answer: str,
    turn: int,
    previous_guesses: Sequence[str] = (),
    *,
    max_turns: int = MAX_TURNS,
) -> str:
    """The exact text appended after turn ``turn`` (1-based, already counted) for ``guess``.

    A valid new guess gives "\\nC R O W N\\nG G X X Y\\nYou have 5 guesses left."; a missing guess or a
    repeat gives the invalid-move text instead of feedback, and still spends the turn.
    """
    left = guesses_left_line(turn, max_turns)
    if guess is None:
        return f"\n{NO_GUESS_MESSAGE}\n{left}"
    guess = guess.lower()
    if guess in {g.lower() for g in previous_guesses}:
        return (
            f"\nYou attempted an invalid move. Reason: You have already guessed '{guess}' before. "
            f"Please try a different word.\n{left}"
        )
    spaced = " ".join(guess.upper())
    return f"\n{spaced}\n{feedback(guess, answer)}\n{left}"
