"""The engine's messages by key (grading/messages.py holds them) and a manifest's own bilingual texts."""

from __future__ import annotations

from typing import Any

from grading.messages import ENGINE

MESSAGES: dict[str, dict[str, str]] = ENGINE.as_dict()  # plain data: what a learner may see (grader_cells.py)


def t(message_id: str, lang: str = "en", /, **params: Any) -> str:
    """The message `message_id` in `lang` (English fallback), formatted with `params`."""
    return ENGINE.text(message_id, lang, **params)


def pick(texts: Any, lang: str = "en") -> str:
    """A `{"en":..,"zh":..}` text from a manifest or reference (plain strings pass through)."""
    if texts is None:
        return ""
    if isinstance(texts, str):
        return texts
    if hasattr(texts, "get") and not isinstance(texts, dict):  # grading.exercise.Text
        return texts.get(lang)
    return (texts.get("zh") if lang.startswith("zh") and texts.get("zh") else texts.get("en", "")) or ""
