"""Value checks: exact, numeric, mapping, shape, sequence, set."""

from __future__ import annotations

from typing import Any

import numpy as np

from grading.checks import keys
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
    expected = decode(spec["expected"])
    counted = count_close(answer, expected, rtol=rtol, atol=atol)
    if counted is None:
        feedback = t("structure_differs", ctx.lang)
        return CheckVerdict(fraction=0.0, feedback="; ".join([feedback, *_key_notes(answer, expected, spec, ctx)]))
    bad, total = counted
    if bad:
        feedback = t("numeric_off", ctx.lang, count=bad, total=total, rtol=rtol, atol=atol)
        return CheckVerdict(fraction=0.0, feedback="; ".join([feedback, *_key_notes(answer, expected, spec, ctx)]))
    return CheckVerdict(fraction=1.0)


def _close(got: Any, expected: Any, *, rtol: float, atol: float) -> bool:
    counted = count_close(got, expected, rtol=rtol, atol=atol)
    return counted is not None and not counted[0]


def _key_notes(answer: Any, expected: Any, spec: dict[str, Any], ctx: CheckContext) -> list[str]:
    """For a dict answer: which of its keys are wrong, missing or unexpected, where they may be named."""
    if not (isinstance(answer, dict) and isinstance(expected, dict)):
        return []
    rtol, atol = _tolerances(spec)
    diff = keys.differing(answer, expected, lambda g, e: _close(g, e, rtol=rtol, atol=atol))
    return keys.notes(*diff, expected=expected, stated_text=ctx.stated, lang=ctx.lang, counted=False)


@register("mapping")
def mapping(answer: Any, spec: dict[str, Any], ctx: CheckContext) -> CheckVerdict:
    expected = decode(spec["expected"])
    if not isinstance(answer, dict):
        return CheckVerdict(
            fraction=0.0, feedback=t("wrong_type", ctx.lang, expected="dict", got=type(answer).__name__)
        )
    tolerant = "rtol" in spec or "atol" in spec
    rtol, atol = _tolerances(spec)

    def same(got: Any, want: Any) -> bool:
        return _close(got, want, rtol=rtol, atol=atol) if tolerant else equal(got, want)

    wrong, missing, extra = keys.differing(answer, expected, same)
    extra = extra if spec.get("extra_keys", "penalize") == "penalize" else []
    right = len(expected) - len(wrong) - len(missing)
    fraction = max(0.0, right - len(extra)) / max(len(expected), 1)
    # a key is named only where the notebook states it; otherwise counted (grading/checks/keys.py)
    parts = keys.notes(wrong, missing, extra, expected=expected, stated_text=ctx.stated, lang=ctx.lang)
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
