"""The result of grading one notebook, and its export formats.

status:
- graded: everything ran; the score is final.
- error: the learner's code failed somewhere (exception, timeout, limit, kernel death caused by the
  notebook); the score counts what could still be checked.
- not_gradable: our fault (kernel failed to start, sandbox or internal error). Never a learner's 0.
"""

from __future__ import annotations

import enum
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from grading.text import clean_text, clean_value

ENGINE_VERSION = "1"
SCRUB_FRAGMENT = 6  # characters: shorter fragments of a secret are too common to remove
# The shapes of any run's extractor name and nonce (`_tg_` + hex, 32 hex digits): an earlier run's, replayed
# from disk, is scrubbed as well as this run's (a 16+ hex-digit run in feedback is no loss).
_GRADER_NAMES = re.compile(r"_tg_[0-9a-f]{4,}|[0-9a-f]{16,}")


class _Scrubber:
    """Replaces every needle, and every SCRUB_FRAGMENT-character window of one (the whole needle when shorter)
    that does not occur in the public text, by one `replacement` per covered run.

    Windows are looked up in sets, and a window is tested against the public text only once it is found in
    a string being scrubbed (memoised): feedback strings are short, while hidden inputs and the public text
    can be long, so testing every window of every needle up front cost seconds (`window in public` is a
    scan of the public text)."""

    def __init__(self, needles, public: str, replacement: str) -> None:
        self.windows: dict[int, set[str]] = {}
        for n in needles:
            if n:
                k = min(SCRUB_FRAGMENT, len(n))
                self.windows.setdefault(k, set()).update(n[i : i + k] for i in range(len(n) - k + 1))
        self.public, self.replacement = public, replacement
        self._secret: dict[str, bool] = {}

    def _is_secret(self, window: str) -> bool:
        known = self._secret.get(window)
        if known is None:
            known = self._secret[window] = window not in self.public
        return known

    def __call__(self, text: str) -> str:
        covered = bytearray(len(text))
        for k, found in self.windows.items():
            for i in range(len(text) - k + 1):
                w = text[i : i + k]
                if w in found and self._is_secret(w):
                    covered[i : i + k] = b"\x01" * k
        if not any(covered):
            return text
        out, i = [], 0
        while i < len(text):
            if covered[i]:
                while i < len(text) and covered[i]:
                    i += 1
                out.append(self.replacement)
            else:
                out.append(text[i])
                i += 1
        return "".join(out)


class Status(str, enum.Enum):  # noqa: UP042  (StrEnum would change str(Status.X) from 'Status.X' to its value)
    GRADED = "graded"
    ERROR = "error"
    NOT_GRADABLE = "not_gradable"


@dataclass(slots=True, kw_only=True)
class CheckResult:
    """One check's outcome. `feedback` is learner-facing text in the requested language."""

    name: str
    score: float
    max_score: float
    passed: bool
    feedback: str = ""
    title: str = ""  # the manifest's check title in the requested language

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True, kw_only=True)
class CellReport:
    """What happened to one learner cell (index counts code cells of the submitted notebook). `outputs` are
    what the grader's kernel printed for it (grading/steps/graded_outputs.py: plain text, bounded; each
    {"kind": stdout|stderr|result|display|error, "text", optional "mimes"}); None: not recorded."""

    index: int
    status: str  # ok | error | timeout | killed | skipped
    message: str = ""
    duration_s: float = 0.0
    outputs: list[dict[str, Any]] | None = None
    outputs_cut: bool = False  # some of this cell's outputs were left out (the run's or the result's bounds)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(slots=True, kw_only=True)
class GradeResult:
    exercise_id: str
    status: Status
    score: float
    max_score: float
    checks: list[CheckResult] = field(default_factory=list)
    message: str = ""  # why status is error / not_gradable, learner-facing
    cells: list[CellReport] = field(default_factory=list)
    limits_hit: list[str] = field(default_factory=list)  # e.g. "time limit", "memory limit", "output limit"
    sandbox: str = ""  # sandbox mode that ran the kernel, e.g. "bwrap" or "unsafe-local"
    device: str = "cpu"  # the device kind the job was granted: "npu", "cuda", or "cpu" (ranks on the CPU)
    device_count: int = 0  # accelerators granted (0 on the CPU)
    dtype: str | None = None  # the training run's parameter dtype, as its run.json says
    duration_s: float = 0.0
    engine_version: str = ENGINE_VERSION
    trace: list[dict[str, Any]] = field(default_factory=list)  # a training run's metrics per step (plots)
    profile: str | None = None  # the training profile the run says it used (which reference band to plot)

    def normalise(self) -> None:
        """Clean every string of this result in place (grading/text.py): the engine's result boundary, where
        what a kernel sent becomes safe to store, serialise, print and render."""
        self.exercise_id, self.message = clean_text(self.exercise_id), clean_text(self.message)
        self.sandbox, self.device = clean_text(self.sandbox), clean_text(self.device)
        self.limits_hit = [clean_text(x) for x in self.limits_hit]
        for c in self.checks:
            c.name, c.feedback, c.title = clean_text(c.name), clean_text(c.feedback), clean_text(c.title)
        for cell in self.cells:
            cell.status, cell.message = clean_text(cell.status), clean_text(cell.message)
            if cell.outputs is not None:
                cell.outputs = clean_value(cell.outputs)
        self.trace = clean_value(self.trace)
        self.profile = clean_text(self.profile) if self.profile is not None else None
        self.dtype = clean_text(self.dtype) if self.dtype is not None else None

    def scrub(self, needles: tuple[str, ...] | list[str], replacement: str, *, public: str = "") -> None:
        """Remove every needle, and every fragment of one that is SCRUB_FRAGMENT characters or longer and
        not in `public`, from every string of this result, in place (a cut-off echo leaks its fragments)."""
        # a normalised result holds a hidden string's clean form (an escape where it had a control character)
        scrub = _Scrubber([*needles, *(clean_text(n) for n in needles)], public, replacement)

        def clean(text: str) -> str:
            return _GRADER_NAMES.sub(replacement, scrub(text))

        self.message = clean(self.message)
        self.limits_hit = [clean(x) for x in self.limits_hit]
        for c in self.checks:
            c.feedback, c.title, c.name = clean(c.feedback), clean(c.title), clean(c.name)
        for cell in self.cells:
            cell.message, cell.status = clean(cell.message), clean(cell.status)
            for out in cell.outputs or []:  # the learner's own prints: a replayed hidden input goes too
                out["text"] = clean(str(out.get("text", "")))
                if "mimes" in out:
                    out["mimes"] = [clean(str(m)) for m in out["mimes"]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "exercise_id": self.exercise_id,
            "status": self.status.value,
            "score": self.score,
            "max_score": self.max_score,
            "checks": [c.to_dict() for c in self.checks],
            "message": self.message,
            "cells": [c.to_dict() for c in self.cells],
            "limits_hit": list(self.limits_hit),
            "sandbox": self.sandbox,
            "device": self.device,
            "device_count": self.device_count,
            "dtype": self.dtype,
            "duration_s": self.duration_s,
            "engine_version": self.engine_version,
            "trace": list(self.trace),
            "profile": self.profile,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GradeResult:
        return cls(
            exercise_id=data["exercise_id"],
            status=Status(data["status"]),
            score=float(data["score"]),
            max_score=float(data["max_score"]),
            checks=[CheckResult(**c) for c in data.get("checks", [])],
            message=data.get("message", ""),
            cells=[CellReport(**c) for c in data.get("cells", [])],
            limits_hit=list(data.get("limits_hit", [])),
            sandbox=data.get("sandbox", ""),
            device=data.get("device", "cpu"),
            device_count=int(data.get("device_count", 0)),
            dtype=data.get("dtype"),
            duration_s=float(data.get("duration_s", 0.0)),
            engine_version=data.get("engine_version", ENGINE_VERSION),
        )

    def to_gradescope(self) -> dict[str, Any]:
        """Gradescope's results.json shape (score, execution_time, output, tests[])."""
        return {
            "score": self.score,
            "execution_time": round(self.duration_s, 3),
            "output": self.message or f"status: {self.status.value}",
            "visibility": "visible",
            "stdout_visibility": "hidden",
            "extra_data": {
                "status": self.status.value,
                "exercise_id": self.exercise_id,
                "limits_hit": list(self.limits_hit),
            },
            "tests": [
                {
                    "name": c.name,
                    "number": str(i + 1),
                    "score": c.score,
                    "max_score": c.max_score,
                    "status": "passed" if c.passed else "failed",
                    "output": c.feedback,
                    "visibility": "visible",
                }
                for i, c in enumerate(self.checks)
            ],
        }
