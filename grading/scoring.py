"""Steps 6-7: run every manifest check on the extracted answers, then decide score and status."""
from __future__ import annotations

import logging
from typing import Any

from grading import checks as check_kinds
from grading.checks import CheckContext
from grading.codec import MISSING, Missing, Opaque, Raised, decode
from grading.errors import GraderFault
from grading.exercise import Exercise
from grading.i18n import pick, t
from grading.result import CheckResult, Status
from grading.steps.execute import Execution

PASS_EPS = 1e-9
log = logging.getLogger(__name__)


def _answer_for(check, execution: Execution, lang: str) -> tuple[Any, Any, str | None]:
    """(decoded answer, decoded call results, why-unavailable) for one check."""
    calls: Any = None
    answers = execution.payloads.get("answers")
    if answers is None:
        return MISSING, None, execution.extract_failures.get("answers") or t("function_not_run", lang, name=check.answer)
    answer = decode(answers.get("answers", {}).get(check.answer, {"__missing__": True}))
    if check.kind == "function":
        label = f"check {check.name}"
        payload = execution.payloads.get(label)
        if payload is None:
            return answer, None, execution.extract_failures.get(label)
        calls = decode(payload.get("calls", {}).get(check.name, {"__missing__": True}))
    return answer, calls, None


def score_checks(exercise: Exercise, execution: Execution, *, lang: str = "en",
                 reference: dict[str, Any] | None = None) -> list[CheckResult]:
    """One CheckResult per manifest check, in manifest order, against `reference` (the pipeline passes the
    answer file it already loaded). A broken reference is a GraderFault."""
    if reference is None:
        reference = exercise.reference()
    specs = reference.get("checks", {})
    results = []
    for check in exercise.manifest.checks:
        if check.name not in specs:
            raise GraderFault(f"reference for {exercise.id} has no check {check.name!r}", retryable=False)
        spec = specs[check.name]
        answer, calls, unavailable = _answer_for(check, execution, lang)
        ctx = CheckContext(lang=lang, name=check.name, answer_name=check.answer,
                           reference_dir=exercise.reference_dir, calls=calls)
        fraction, feedback = _judge(check, answer, spec, ctx, unavailable)
        score = round(check.points * min(max(fraction, 0.0), 1.0), 4)
        passed = fraction >= 1.0 - PASS_EPS
        if not passed and spec.get("feedback"):
            hint = pick(spec["feedback"], lang)
            feedback = "; ".join(x for x in (feedback, t("hint", lang, hint=hint)) if x)
        results.append(CheckResult(name=check.name, score=score, max_score=float(check.points), passed=passed,
                                   feedback=feedback or (t("passed", lang) if passed else ""),
                                   title=pick(check.title, lang) if check.title else ""))
    return results


def _judge(check, answer: Any, spec: dict, ctx: CheckContext, unavailable: str | None) -> tuple[float, str]:
    if unavailable is not None:
        return 0.0, unavailable
    if check.kind != "function":
        if isinstance(answer, Missing):
            return 0.0, t("answer_missing", ctx.lang, name=check.answer)
        if isinstance(answer, Raised) and check.kind != "metric_trace":
            return 0.0, t("answer_raised", ctx.lang, name=check.answer, error=f"{answer.type}: {answer.message}")
        if isinstance(answer, Opaque):
            return 0.0, t("answer_opaque", ctx.lang, name=check.answer, type=answer.type)
    try:
        outcome = check_kinds.get(check.kind)(answer, spec, ctx)
    except (KeyError, OSError) as exc:  # a field or trace file missing from the reference: our fault
        raise GraderFault(f"check {check.name!r} ({check.kind}) failed on its reference spec: "
                          f"{type(exc).__name__}: {exc}", retryable=False) from exc
    except Exception as exc:  # a learner value the comparison cannot handle (solutions prove the spec works)
        log.warning("check %s could not compare the answer: %r", check.name, exc)
        return 0.0, t("answer_uncomparable", ctx.lang, name=check.answer, error=type(exc).__name__)
    return outcome.fraction, outcome.feedback


def decide_status(execution: Execution, checks: list[CheckResult]) -> tuple[Status, str]:
    """graded when every learner cell ran cleanly and every answer could be read; error otherwise."""
    problems = [c.message for c in execution.cells if c.status != "ok" and c.message]
    problems += list(execution.extract_failures.values())
    seen: list[str] = []
    for p in problems + [m for m in execution.messages if m not in problems]:
        if p not in seen:
            seen.append(p)
    failed = any(c.status != "ok" for c in execution.cells) or bool(execution.extract_failures)
    return (Status.ERROR if failed else Status.GRADED), "; ".join(seen)


def total(checks: list[CheckResult]) -> float:
    return round(sum(c.score for c in checks), 4)
