"""What every check kind shares: its verdict, its context, and the registry the kinds add themselves to.
The kinds (function.py, values.py, metric_trace.py) import this; `grading.checks` loads them and looks
them up (`get`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True, kw_only=True)
class CheckVerdict:
    """One check's judgement of one answer; scoring turns it into the check's CheckResult (points)."""

    fraction: float  # 0..1 of the check's points
    feedback: str = ""
    hints: tuple[str, ...] | None = None  # the hints of what failed (a function check's rules); None: the
    # check's own hint (its `feedback`) is shown when it does not pass
    counted: bool = True  # False: nothing in the check could be graded on this run (e.g. no reference band
    # for the run's device); its points are not counted, the other checks' share stands in (scoring.py)


@dataclass(frozen=True, kw_only=True)
class CheckContext:
    """What a check may need besides the answer: language, the check name, the reference directory."""

    lang: str = "en"
    name: str = ""
    answer_name: str = ""
    reference_dir: Path | None = None
    calls: Any = None  # function checks: decoded results of the calls, one per reference call
    stated: str = ""  # what the notebook tells the learner: feedback may name a key found here (keys.py)
    device: str = "cpu"  # the device kind the grader gave this run (what a run.json may claim to have used)
    extra: dict[str, Any] = field(default_factory=dict)


CheckFn = Callable[[Any, dict[str, Any], CheckContext], CheckVerdict]
REGISTRY: dict[str, CheckFn] = {}


def register(kind: str) -> Callable[[CheckFn], CheckFn]:
    def wrap(fn: CheckFn) -> CheckFn:
        REGISTRY[kind] = fn
        return fn

    return wrap
