"""Value checks: exact, numeric, mapping, shape, sequence, set."""

from __future__ import annotations

from typing import Any

import numpy as np

from grading.checks.base import CheckContext, CheckVerdict, register
from grading.checks.compare import count_close, equal
from grading.codec import _hashable, decode
from grading.i18n import t


@register("exact")
def exact(answer: Any, spec: dict[str, Any], ctx: CheckContext) -> CheckVerdict:
    ok = equal(answer, decode(spec["expected"]))
    return CheckVerdict(fraction=1.0 if ok else 0.0, feedback="" if ok else t("wrong_value", ctx.lang))


def _tolerances(spec: dict[str, Any]) -> tuple[float, float]:
    return float(spec.get("rtol", 1e-9)), float(spec.get("atol", 0.0))


@register("numeric")
def numeric(answer: Any, spec: dict[str, Any], ctx: CheckContext) -> CheckVerdict:
    rtol, atol = _tolerances(spec)
    counted = count_close(answer, decode(spec["expected"]), rtol=rtol, atol=atol)
    if counted is None:
        return CheckVerdict(fraction=0.0, feedback=t("structure_differs", ctx.lang))
    bad, total = counted
    if bad:
        return CheckVerdict(
            fraction=0.0, feedback=t("numeric_off", ctx.lang, count=bad, total=total, rtol=rtol, atol=atol)
        )
    return CheckVerdict(fraction=1.0)


@register("mapping")
def mapping(answer: Any, spec: dict[str, Any], ctx: CheckContext) -> CheckVerdict:
    expected = decode(spec["expected"])
    if not isinstance(answer, dict):
        return CheckVerdict(
            fraction=0.0, feedback=t("wrong_type", ctx.lang, expected="dict", got=type(answer).__name__)
        )
    tolerant = "rtol" in spec or "atol" in spec
    rtol, atol = _tolerances(spec)
    wrong, missing = [], []
    for key, value in expected.items():
        if key not in answer:
            missing.append(key)
        elif tolerant:
            counted = count_close(answer[key], value, rtol=rtol, atol=atol)
            if counted is None or counted[0]:
                wrong.append(key)
        elif not equal(answer[key], value):
            wrong.append(key)
    extra = [k for k in answer if k not in expected] if spec.get("extra_keys", "penalize") == "penalize" else []
    right = len(expected) - len(wrong) - len(missing)
    fraction = max(0.0, right - len(extra)) / max(len(expected), 1)
    parts = []  # counts only: naming keys would reveal hidden keys (and, with retries, their values)
    for key, items in (("mapping_wrong", wrong), ("mapping_missing", missing), ("mapping_extra", extra)):
        if items:
            parts.append(t(key, ctx.lang, count=len(items), total=len(expected)))
    return CheckVerdict(fraction=fraction, feedback="; ".join(parts))


@register("shape")
def shape(answer: Any, spec: dict[str, Any], ctx: CheckContext) -> CheckVerdict:
    expected = [int(x) for x in decode(spec["expected"])]
    if isinstance(answer, np.ndarray):
        got: Any = list(answer.shape)
    elif isinstance(answer, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in answer):
        got = list(answer)
    else:
        return CheckVerdict(
            fraction=0.0,
            feedback=t("wrong_type", ctx.lang, expected="shape (tuple of ints) or tensor", got=type(answer).__name__),
        )
    ok = got == expected
    return CheckVerdict(fraction=1.0 if ok else 0.0, feedback="" if ok else t("shape_wrong", ctx.lang, got=tuple(got)))


@register("sequence")
def sequence(answer: Any, spec: dict[str, Any], ctx: CheckContext) -> CheckVerdict:
    expected = list(decode(spec["expected"]))
    if isinstance(answer, np.ndarray):
        answer = answer.tolist()
    if not isinstance(answer, (list, tuple)):
        return CheckVerdict(
            fraction=0.0, feedback=t("wrong_type", ctx.lang, expected="list", got=type(answer).__name__)
        )
    got = list(answer)
    partial = spec.get("partial", True)
    wrong = [i for i, e in enumerate(expected) if i >= len(got) or not equal(got[i], e)]
    notes = []
    if len(got) != len(expected):
        notes.append(t("sequence_length", ctx.lang, got=len(got), expected=len(expected)))
    if wrong:
        shown = ", ".join(map(str, wrong[:10])) + (", ..." if len(wrong) > 10 else "")
        notes.append(t("sequence_wrong", ctx.lang, count=len(wrong), total=len(expected), positions=shown))
    right = len(expected) - len(wrong) - max(0, len(got) - len(expected))
    fraction = max(0.0, right) / max(len(expected), 1) if partial else float(not notes)
    return CheckVerdict(fraction=fraction, feedback="; ".join(notes))


@register("set")
def set_(answer: Any, spec: dict[str, Any], ctx: CheckContext) -> CheckVerdict:
    expected = [_norm(x) for x in decode(spec["expected"])]
    if isinstance(answer, np.ndarray):
        answer = answer.tolist()
    if not isinstance(answer, (list, tuple, set, frozenset)):
        return CheckVerdict(
            fraction=0.0, feedback=t("wrong_type", ctx.lang, expected="set or list", got=type(answer).__name__)
        )
    got = {_norm(x) for x in answer}
    want = set(expected)
    missing, extra = want - got, got - want
    if not missing and not extra:
        return CheckVerdict(fraction=1.0)
    fraction = max(0.0, len(want & got) - len(extra)) / max(len(want), 1)
    # counts only: naming the extras would tell which submitted guesses are not in the hidden set
    return CheckVerdict(fraction=fraction, feedback=t("set_result", ctx.lang, missing=len(missing), extra=len(extra)))


def _norm(value: Any) -> Any:
    """A hashable stand-in so lists, dicts and arrays can be set members."""
    return _hashable(value)
