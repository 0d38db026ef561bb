"""Spreadsheet-safe cells for the gradebook CSV: a cell a spreadsheet would read as a formula
(`=HYPERLINK(...)` as a learner's display name, an LMS's subject `@SUM(...)`) is written as text.

OWASP's CSV injection rule: a string cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return
gets a leading single quote, which spreadsheets show as text and do not evaluate. Numbers stay numbers
(a negative score is a number, not a formula), so sums and sorting in the sheet still work.
"""

from __future__ import annotations

# and the full-width forms, which spreadsheets under East Asian input methods take for the ASCII ones
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def guard_cell(value: object) -> object:
    """`value` as it may go into a CSV cell: strings that start like a formula are quoted as text."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def guard_row(row: dict) -> dict:
    """Every cell of a CSV row guarded (strings from learners, LMSs and the catalogue alike)."""
    return {key: guard_cell(value) for key, value in row.items()}
