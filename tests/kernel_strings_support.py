"""What the hostile-string tests share (tests/ is on sys.path): every string in a JSON-shaped value."""

from __future__ import annotations


def strings_in(value) -> list[str]:
    """Every string in `value` (dicts, lists, scalars), dict keys included: what a check of cleanness reads."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in (*strings_in(k), *strings_in(v))]
    if isinstance(value, list):
        return [t for v in value for t in strings_in(v)]
    return []
