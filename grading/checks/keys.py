"""Which keys of a learner's dict feedback may name (issue 29 item 4).

A key is named only where naming it tells the learner nothing the notebook does not: a wrong or a missing
key when the notebook states it (a whole word of the template, a public case or a hint:
`CheckContext.stated`), an unexpected key of the learner's when the notebook states every expected key.
Otherwise it is only counted. Naming a learner's key that the notebook does not state would answer, for a
whole batch of guessed keys at once, which of them the hidden expected dict has ("wrong" ones) and which it
lacks ("unexpected" ones): a hidden key then reaches feedback without the learner ever having been told it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from grading.i18n import t

MAX_NAMED = 8  # keys listed in one note; the rest are counted
_WORD = "A-Za-z0-9_"


def stated(key: Any, text: str) -> bool:
    """Is `key` a string that occurs in `text` as a whole word (not inside a longer name)?"""
    if not isinstance(key, str) or not key or key not in text:
        return False
    return re.search(rf"(?<![{_WORD}]){re.escape(key)}(?![{_WORD}])", text) is not None


def differing(got: dict, expected: dict, same: Callable[[Any, Any], bool]) -> tuple[list, list, list]:
    """(wrong, missing, unexpected) keys: in both with a value `same` refuses, only expected, only the learner's."""
    wrong = [k for k in expected if k in got and not same(got[k], expected[k])]
    missing = [k for k in expected if k not in got]
    extra = [k for k in got if k not in expected]
    return wrong, missing, extra


def notes(
    wrong: list,
    missing: list,
    extra: list,
    *,
    expected: dict,
    stated_text: str,
    lang: str,
    counted: bool = True,
    at: str = "",
) -> list[str]:
    """One note per kind of difference, naming the keys that may be named (module docstring) and counting the
    rest; `counted=False` leaves out the "n of m" counts (a note added to feedback that already has them);
    `at` is where the dict sits in the learner's result (`[0]` for a list's first item)."""
    every_key_stated = all(stated(k, stated_text) for k in expected)
    out = []
    for kind, keys, nameable in (
        ("wrong", wrong, lambda k: stated(k, stated_text)),
        ("missing", missing, lambda k: stated(k, stated_text)),
        ("extra", extra, lambda k: every_key_stated),
    ):
        if not keys:
            continue
        named = [k for k in keys if nameable(k)]
        if not named:
            if counted:
                out.append(t(f"mapping_{kind}", lang, count=len(keys), total=len(expected)))
            continue
        shown = ", ".join(f"{at}[{_show(k)}]" if at else _show(k) for k in named[:MAX_NAMED])
        if len(keys) > min(len(named), MAX_NAMED):
            shown = t("keys_and_more", lang, keys=shown, count=len(keys) - min(len(named), MAX_NAMED))
        key = f"mapping_{kind}_keys" if counted else f"keys_{kind}"
        out.append(t(key, lang, count=len(keys), total=len(expected), keys=shown))
    return out


def _show(key: str) -> str:
    text = repr(key)
    return text if len(text) <= 60 else text[:57] + "..."
