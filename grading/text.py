"""The one normaliser for strings that come from a kernel (docs/grading-engine.md, "The result boundary").

A learner's kernel can put any code point into an exception message, an output or a value that feedback
echoes: NUL (PostgreSQL refuses it in text), lone surrogates (no UTF-8 encoder takes them: both databases,
orjson and a terminal fail), terminal escape sequences, CR and bidi overrides (they rewrite or reorder what
a terminal or a page shows). `clean_text` makes a string safe to store, serialise, print and render once, at
the engine's result boundary; it is idempotent, so a last-defence pass at storage changes nothing.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"  # what a lone surrogate becomes (the Unicode replacement character)
# Anything the slow path has to look at: C0 controls but tab and newline, DEL, C1 controls, the bidi controls
# (embeddings, overrides, isolates, the marks, Arabic letter mark), line/paragraph separators, surrogates.
_SUSPECT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Whole terminal escape sequences, dropped (ANSI colours in tracebacks carry no meaning off a terminal):
# CSI (ESC [ params intermediates final), OSC/DCS/APC/PM/SOS strings with their terminator (BEL or ESC \),
# and two-character escapes. An ESC that starts none of these is escaped visibly below.
_ESCAPE_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)|[ -/]*[0-~])")
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean_text(text: str) -> str:
    """`text` as valid Unicode with no control, escape or bidi character left but newline and tab.

    Lone surrogates become U+FFFD (a valid surrogate pair left in a str is joined into its character),
    whole escape sequences are dropped, CRLF and lone CR become a newline, and the other controls and
    the bidi characters become visible escapes (`\\x00`, `\\x1b`, `\\u202e`), so a learner still reads
    what their code produced."""
    if not _SUSPECT.search(text):
        return text  # the common case: one scan, no copy
    if _SURROGATE.search(text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _UNSAFE.sub(_visible, text)


def clean_value(value: Any) -> Any:
    """`value` (JSON-shaped: dicts, lists, tuples, scalars) with every string, dict keys included, cleaned."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_value(v) for v in value]
    return value


def is_clean(text: str) -> bool:
    """True when `clean_text` would leave `text` as it is (what tests and guards assert)."""
    return clean_text(text) == text
