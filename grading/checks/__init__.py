"""Check kinds: each compares one decoded answer with its reference spec, in the grader's process.

A check function returns a `CheckVerdict` (fraction of the points, learner-facing feedback). Feedback
never quotes expected values; it names keys, positions, counts and the learner's own values.
"""

from __future__ import annotations

from grading.checks import function, metric_trace, values  # noqa: F401  (importing a kind registers it)
from grading.checks.base import REGISTRY, CheckContext, CheckFn, CheckVerdict, register

__all__ = ["REGISTRY", "CheckContext", "CheckFn", "CheckVerdict", "get", "register"]


def get(kind: str) -> CheckFn:
    """The check function of `kind` (KeyError for a kind nobody registered)."""
    return REGISTRY[kind]
