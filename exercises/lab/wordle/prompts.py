"""The dataset's system prompt and the game's opening user message.

Reconstructed, not copied: COURSE.md documents only their gist (a system prompt asking to think step
by step and answer as ``<guess>[word]</guess>``, and TextArena's "[GAME] You are Playing Wordle..."
text). The wording below follows that gist; the reward and the agent loop do not depend on it.
"""

from __future__ import annotations

SYSTEM_PROMPT = (
    "You are a competitive game player. Read the game instructions carefully and always follow the "
    "required format.\n"
    "In each turn, think step by step, then give exactly one guess as <guess>[word]</guess>, "
    "for example <guess>[apple]</guess>."
)

USER_PROMPT = (
    "[GAME] You are Playing Wordle. A secret 5-letter English word has been chosen. "
    "You have 6 attempts to guess it.\n"
    "For each guess, write the word in square brackets inside guess tags, e.g. <guess>[apple]</guess>.\n"
    "After each guess you get one letter of feedback per position:\n"
    "  - G (green): the letter is in the word and in the correct position\n"
    "  - Y (yellow): the letter is in the word but in a different position\n"
    "  - X (wrong): the letter is not in the word\n"
    "Enjoy!"
)


def initial_messages() -> list[dict[str, str]]:
    """The recipe's ``raw_prompt``: [system, user]."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_PROMPT},
    ]
