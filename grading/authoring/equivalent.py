"""`EQUIVALENT` in a master's grader cell: mutants declared equivalent to the solution, each with a reason.

A surviving mutant (grading/authoring/mutants.py) is either killed by a new case or declared here; an id
that no longer matches a generated mutant is stale, an authoring error (docs/exercise-format.md#mutants).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MUTANT_ID = re.compile(r"[a-z][a-z0-9_]*:[0-9a-f]{8}:[1-9][0-9]*")  # operator:sha1 of the line, 8 hex:n
MIN_REASON_WORDS = 3


@dataclass
class Equivalent:
    """A mutant declared equivalent to the solution: no correct test can tell them apart."""

    mutant: str  # its id, as `titangrade exercises mutants` prints it
    reason: str
    line: int


def parse_equivalents(path: Path, value: Any, at: int, line_of: Callable[[str], int]) -> list[Equivalent]:
    """EQUIVALENT = [{"mutant": id, "reason": why}]: a reason is required, an id declared once."""
    from grading.authoring.master import AuthoringError  # master imports this module at its top

    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise AuthoringError(
            path,
            at,
            "EQUIVALENT must be a list of dicts",
            'write EQUIVALENT = [{"mutant": "<id from titangrade exercises mutants>", "reason": "why"}]',
        )
    out: list[Equivalent] = []
    for entry in value:
        mutant = entry.get("mutant")
        line = line_of(str(mutant))
        if set(entry) != {"mutant", "reason"}:
            raise AuthoringError(
                path,
                line,
                f"EQUIVALENT entry {mutant!r} has keys {sorted(entry)}",
                'give exactly "mutant" (its id) and "reason" (why no correct test can tell it from the solution)',
            )
        if not isinstance(mutant, str) or not MUTANT_ID.fullmatch(mutant):
            raise AuthoringError(
                path,
                line,
                f"EQUIVALENT names {mutant!r}, which is not a mutant id",
                "copy the id (operator:8 hex:n) from `titangrade exercises mutants ID`",
            )
        reason = entry["reason"]
        if not isinstance(reason, str) or len(reason.split()) < MIN_REASON_WORDS:
            raise AuthoringError(
                path,
                line,
                f"EQUIVALENT mutant {mutant!r} gives no reason",
                'say in "reason", in a sentence, why no correct test can tell this mutant from the solution',
            )
        if any(e.mutant == mutant for e in out):
            raise AuthoringError(path, line, f"EQUIVALENT declares mutant {mutant!r} twice", "keep one entry")
        out.append(Equivalent(mutant, reason, line))
    return out
