"""The recipe's ``compute_score`` (``wordle_reward.py``), exactly as COURSE.md section 2 specifies."""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

from exercises.lab.wordle.feedback import OPEN_TAG, canonical_guesses


def _partial_answer(guesses: Iterable[str], answer: str) -> float:
    """Best 0.2*greens + 0.1*yellows over the guesses; wrong-length guesses are skipped."""
    answer = answer.lower().strip()
    best = 0.0
    for guess in guesses:
        guess = guess.lower()
        if len(guess) != len(answer):
            continue
        unused: list[str | None] = list(answer)
        greens = 0
        for i, (g, a) in enumerate(zip(guess, answer, strict=True)):
            if g == a:
                greens += 1
                unused[i] = None
        yellows = 0
        for i, g in enumerate(guess):
            if guess[i] == answer[i]:
                continue
            if g in unused:
                yellows += 1
                unused[unused.index(g)] = None
        best = max(best, 0.2 * greens + 0.1 * yellows)
    return best


def _int_like(value: Any) -> int | None:
    """``value`` as an int when it is an integer (numpy scalars included, bools excluded), else None."""
    if isinstance(value, bool) or value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, numbers.Number):  # 0-d arrays / tensors
        try:
            value = value.item()
        except (TypeError, ValueError):
            return None
        if isinstance(value, bool):
            return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def compute_score(solution_str: str, ground_truth: str, extra_info: dict | None = None) -> dict:
    """score = correct + partial + length_bonus + 0.2*format, in [0, 2.2]; components returned alongside."""
    extra_info = extra_info or {}
    answer = ground_truth.lower().strip()
    guesses = canonical_guesses(solution_str)
    open_tags = len(OPEN_TAG.findall(solution_str))

    correct = 1.0 if guesses and guesses[-1] == answer else 0.0
    partial = 0.0 if correct else _partial_answer(guesses, answer)

    turns = _int_like(extra_info.get("num_turns"))
    num_turns = turns if turns is not None and turns > 0 else max(open_tags, len(guesses))

    length_bonus = 1.0 / max(num_turns, 1) if correct else 0.0

    formatted = _int_like(extra_info.get("formatted_turns"))
    formatted = min(formatted if formatted is not None and formatted >= 0 else len(guesses), num_turns)
    format_score = min(formatted / num_turns, 1.0) if num_turns > 0 else 0.0

    score = correct + partial + length_bonus + 0.2 * format_score
    return {
        "score": score,
        "correct": correct,
        "partial": partial,
        "length_bonus": length_bonus,
        "format": format_score,
        "num_guesses": len(guesses),
    }
