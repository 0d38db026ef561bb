"""Function checks: the kernel called the learner's function on the reference inputs; judge results here."""

from __future__ import annotations

from typing import Any

from grading.checks import keys
from grading.checks.base import CheckContext, CheckVerdict, register
from grading.checks.compare import count_close, describe, equal
from grading.codec import Missing, Raised, decode
from grading.i18n import pick, t

RULE_HINTS = "rule_hints"  # a function check's {rule id: hint} in the answer file (grading/authoring/rules.py)


def _call_text(name: str, call: dict[str, Any]) -> str:
    args = [describe(a) for a in decode(call.get("args", []))]
    kwargs = [f"{k}={describe(v)}" for k, v in decode(call.get("kwargs", {})).items()]
    return f"{name}({', '.join(args + kwargs)})"


def _judge(got: Any, call: dict[str, Any], spec: dict[str, Any], *, decoded: bool = False) -> bool:
    if "raises" in call:
        names = call["raises"] if isinstance(call["raises"], list) else [call["raises"]]
        return isinstance(got, Raised) and any(got.is_a(n) for n in names)
    if isinstance(got, (Raised, Missing)):
        return False
    expected = call["expect"] if decoded else decode(call["expect"])
    if spec.get("compare", "numeric") == "exact":
        return equal(got, expected)
    counted = count_close(got, expected, rtol=float(spec.get("rtol", 1e-9)), atol=float(spec.get("atol", 0.0)))
    return counted is not None and counted[0] == 0


@register("function")
def function(answer: Any, spec: dict[str, Any], ctx: CheckContext) -> CheckVerdict:
    calls = spec.get("calls", [])
    results = ctx.calls
    if isinstance(results, Missing) or isinstance(answer, Missing):
        return CheckVerdict(fraction=0.0, feedback=t("function_missing", ctx.lang, name=ctx.answer_name))
    if not isinstance(results, list) or len(results) != len(calls):
        return CheckVerdict(fraction=0.0, feedback=t("function_not_run", ctx.lang, name=ctx.answer_name))
    passed, notes, hidden_failed, hidden_total = 0, [], 0, 0
    failed: list[dict[str, Any]] = []
    for n, (call, got) in enumerate(zip(calls, results, strict=True), start=1):
        ok = _judge(got, call, spec)
        passed += ok
        if not ok:
            failed.append(call)
        if not call.get("public", False):
            hidden_total += 1
            hidden_failed += not ok
            continue
        if ok:
            continue
        label = call.get("label") or f"case {n}"
        text = _call_text(ctx.answer_name, call)
        if "raises" in call:
            expected = call["raises"] if isinstance(call["raises"], str) else " | ".join(call["raises"])
            notes.append(
                t("function_should_raise", ctx.lang, label=label, call=text, expected=expected, got=describe(got))
            )
        elif isinstance(got, Raised):
            notes.append(t("function_public_raised", ctx.lang, label=label, call=text, error=describe(got)))
        else:
            notes.append(t("function_public_fail", ctx.lang, label=label, call=text, got=describe(got)))
            notes += _key_notes(got, call, spec, ctx)
    if hidden_failed:
        notes.append(t("function_hidden_fail", ctx.lang, failed=hidden_failed, total=hidden_total))
    return CheckVerdict(
        fraction=passed / max(len(calls), 1), feedback="; ".join(notes), hints=_rule_hints(spec, failed, ctx.lang)
    )


def _key_notes(got: Any, call: dict[str, Any], spec: dict[str, Any], ctx: CheckContext) -> list[str]:
    """For a public call's dict result: which of the learner's keys are wrong, missing or unexpected (a public
    case's keys are the notebook's to show; grading/checks/keys.py decides what is named)."""
    expected = decode(call["expect"])
    pairs = [("", got, expected)]  # a dict, or a list of dicts (one per input: the items are named by position)
    if isinstance(got, (list, tuple)) and isinstance(expected, list) and len(got) == len(expected):
        pairs = [(f"[{i}]", g, e) for i, (g, e) in enumerate(zip(got, expected, strict=True))]
    out: list[str] = []
    for at, g, e in pairs:
        if isinstance(g, dict) and isinstance(e, dict):
            diff = keys.differing(g, e, lambda a, b: _judge(a, {"expect": b}, spec, decoded=True))
            out += keys.notes(*diff, expected=e, stated_text=ctx.stated, lang=ctx.lang, counted=False, at=at)
    return out


def _rule_hints(spec: dict[str, Any], failed: list[dict[str, Any]], lang: str) -> tuple[str, ...] | None:
    """The hints of the rules the failed calls name, in RULES order, so each speaks of a rule that failed; the
    check's own hint for a failed call that names none. None: the check declares no rules (its own hint)."""
    hints = spec.get(RULE_HINTS)
    if not isinstance(hints, dict) or not hints:
        return None
    named = {r for call in failed for r in call.get("rules", []) if r in hints}
    texts = [pick(hints[r], lang) for r in hints if r in named]
    if any(not any(r in hints for r in call.get("rules", [])) for call in failed):
        texts.append(pick(spec.get("feedback"), lang))
    return tuple(dict.fromkeys(x for x in texts if x))
