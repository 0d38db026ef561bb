"""Steps 6-7: run every manifest check on the extracted answers, then decide score and status.

Kernel data is decoded here, strictly and under one size budget per run (grading.codec.AnswerDecoder):
a value that cannot be decoded or compared fails its check, and never becomes a grader fault.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from grading import checks as check_kinds
from grading.checks import CheckContext
from grading.codec import MISSING, AnswerDecoder, Missing, Opaque, Raised, TooLarge, Undecodable
from grading.errors import GraderFault
from grading.exercise import Exercise
from grading.i18n import pick, t
from grading.result import CheckResult, Status
from grading.steps import grader_cells
from grading.steps.execute import Execution
from grading.steps.grader_cells import GraderPlan

PASS_EPS = 1e-9
ANSWER_LIMIT = "answer limit"
MAX_RUN_PROBLEMS = 12  # distinct problems listed in a result's message; the rest are counted
log = logging.getLogger(__name__)
_FIRST_NUMBER = re.compile(r"\d+")


class _Answers:
    """Decodes each answer once, on first use, from the answers payload (never all call results at once)."""

    def __init__(self, execution: Execution, decoder: AnswerDecoder) -> None:
        self.execution = execution
        self.decoder = decoder
        self.values: dict[str, Any] = {}

    def answer(self, name: str) -> Any:
        if name not in self.values:
            payload = self.execution.payloads.get("answers") or {}
            answers = payload.get("answers")
            if not isinstance(answers, dict):
                self.values[name] = Undecodable("the answers are not a mapping")
            else:
                self.values[name] = self.decoder.decode(answers[name]) if name in answers else MISSING
        return self.values[name]

    def calls(self, check, plan: GraderPlan, lang: str) -> tuple[Any, str | None]:
        """(decoded call results in reference order, or MISSING; why-unavailable)."""
        results: dict[int, Any] = {}
        for label, indices in plan.parts_of(check.name):
            payload = self.execution.payloads.get(label)
            if payload is None:
                return None, (
                    self.execution.extract_failures.get(label) or t("function_not_run", lang, name=check.answer)
                )
            calls = payload.get("calls")
            wire = calls.get(check.name, {"__missing__": True}) if isinstance(calls, dict) else None
            if wire == {"__missing__": True}:
                return MISSING, None
            if not isinstance(wire, list) or len(wire) != len(indices):
                return [Undecodable("call results do not match the calls made")], None
            for index, item in zip(indices, wire, strict=True):
                results[index] = self.decoder.decode(item)
        return [results[i] for i in sorted(results)], None


def score_checks(
    exercise: Exercise,
    execution: Execution,
    *,
    lang: str = "en",
    reference: dict[str, Any] | None = None,
    plan: GraderPlan | None = None,
    device: str = "cpu",
) -> list[CheckResult]:
    """One CheckResult per manifest check, in manifest order, against `reference` (the pipeline passes the
    answer file it already loaded). A broken reference is a GraderFault. `plan` is the run's grader-cell
    plan (which cell made which calls); by default the exercise's."""
    if reference is None:
        reference = exercise.reference()
    plan = plan or grader_cells.plan(exercise, reference=reference)
    specs = reference.get("checks", {})
    decoder = AnswerDecoder()
    answers = _Answers(execution, decoder)
    results: list[CheckResult] = []
    uncounted: set[str] = set()
    for check in exercise.manifest.checks:
        if check.name not in specs:
            raise GraderFault(f"reference for {exercise.id} has no check {check.name!r}", retryable=False)
        spec = specs[check.name]
        if execution.payloads.get("answers") is None:
            answer, calls = MISSING, None
            unavailable = execution.extract_failures.get("answers") or t("function_not_run", lang, name=check.answer)
        else:
            answer, calls, unavailable = answers.answer(check.answer), None, None
            if check.kind == "function":
                calls, unavailable = answers.calls(check, plan, lang)
        ctx = CheckContext(
            lang=lang,
            name=check.name,
            answer_name=check.answer,
            reference_dir=exercise.reference_dir,
            calls=calls,
            stated=plan.stated_text,
            device=device,
        )
        fraction, feedback, hints = _judge(check, answer, spec, ctx, unavailable, execution)
        del calls
        if fraction is None:  # nothing in it could be graded on this run: not counted (prorated below)
            uncounted.add(check.name)
            fraction, hints = 0.0, ()
        score = round(check.points * min(max(fraction, 0.0), 1.0), 4)
        passed = fraction >= 1.0 - PASS_EPS
        if hints is None:  # the check's own hint, unless the check named the hints of what failed (rules)
            hints = (pick(spec["feedback"], lang),) if spec.get("feedback") else ()
        if not passed and hints:
            feedback = "; ".join(x for x in (feedback, *(t("hint", lang, hint=h) for h in hints if h)) if x)
        results.append(
            CheckResult(
                name=check.name,
                score=score,
                max_score=float(check.points),
                passed=passed,
                feedback=feedback or (t("passed", lang) if passed else ""),
                title=pick(check.title, lang) if check.title else "",
            )
        )
    return _prorate(results, uncounted)


def _prorate(results: list[CheckResult], uncounted: set[str]) -> list[CheckResult]:
    """A check that could not be graded on this run (no reference band for its device) is not counted: it
    takes the learner's rate on the checks that were graded, so the exercise keeps its points (the LMS line
    item's maximum is fixed) and a missing reference never costs nor gifts the learner anything."""
    if not uncounted:
        return results
    graded = [c for c in results if c.name not in uncounted]
    possible = sum(c.max_score for c in graded)
    rate = sum(c.score for c in graded) / possible if possible else 0.0
    for c in results:
        if c.name in uncounted:
            c.score = round(c.max_score * rate, 4)
    return results


def _unreadable(check, answer: Any, calls: Any, ctx: CheckContext, execution: Execution) -> str | None:
    """Feedback when the learner's value (or one call result) could not be decoded; None if all decoded."""
    values = [answer, *(calls if isinstance(calls, list) else [calls])]
    if any(isinstance(v, TooLarge) for v in values):
        limit = next(v for v in values if isinstance(v, TooLarge)).limit_bytes
        execution.hit(ANSWER_LIMIT)
        note = t("answers_too_large", ctx.lang, limit_mb=round(limit / 2**20))
        if note not in execution.messages:
            execution.messages.append(note)
        return t("answer_too_large", ctx.lang, name=check.answer, limit_mb=round(limit / 2**20))
    bad = next((v for v in values if isinstance(v, Undecodable)), None)
    if bad is not None:
        return t("answer_uncomparable", ctx.lang, name=check.answer, error=bad.reason)
    return None


def _judge(
    check, answer: Any, spec: dict, ctx: CheckContext, unavailable: str | None, execution: Execution
) -> tuple[float | None, str, tuple[str, ...] | None]:
    """(fraction, or None where the check could not be graded on this run; feedback; the hints of what
    failed: None for the check's own hint)."""
    if unavailable is not None:
        return 0.0, unavailable, None
    unreadable = _unreadable(check, answer if check.kind != "function" else None, ctx.calls, ctx, execution)
    if unreadable is not None:
        return 0.0, unreadable, None
    if check.kind != "function":
        if isinstance(answer, Missing):
            return 0.0, t("answer_missing", ctx.lang, name=check.answer), None
        if isinstance(answer, Raised) and check.kind != "metric_trace":
            return (
                0.0,
                t("answer_raised", ctx.lang, name=check.answer, error=f"{answer.type}: {answer.message}"[:300]),
                None,
            )
        if isinstance(answer, Opaque):
            return 0.0, t("answer_opaque", ctx.lang, name=check.answer, type=answer.type[:200]), None
    try:
        outcome = check_kinds.get(check.kind)(answer, spec, ctx)
    except GraderFault:  # the check found its reference spec broken
        raise
    except (KeyError, OSError) as exc:  # a field or trace file missing from the reference: our fault
        raise GraderFault(
            f"check {check.name!r} ({check.kind}) failed on its reference spec: {type(exc).__name__}: {exc}",
            retryable=False,
        ) from exc
    except Exception as exc:  # a learner value the comparison cannot handle (solutions prove the spec works)
        log.warning("check %s could not compare the answer: %r", check.name, exc)
        return 0.0, t("answer_uncomparable", ctx.lang, name=check.answer, error=type(exc).__name__), None
    return (outcome.fraction if outcome.counted else None), outcome.feedback, outcome.hints


def dedupe(messages: list[str], *, limit: int = MAX_RUN_PROBLEMS, lang: str = "en") -> list[str]:
    """Distinct problems in first-seen order, at most `limit` listed. Repeats are counted ("... (x3)"), and
    messages that differ only in their first number (the cell index) share the first one's line."""
    groups: dict[str, list[str]] = {}
    for m in messages:
        if m:
            groups.setdefault(_FIRST_NUMBER.sub("#", m, count=1), []).append(m)
    shown = []
    for ms in groups.values():
        if len(ms) == 1:
            shown.append(ms[0])
        elif len(set(ms)) == 1:
            shown.append(t("repeated", lang, message=ms[0], count=len(ms)))
        else:
            shown.append(t("alike_cells", lang, message=ms[0], count=len(ms) - 1))
    if len(shown) > limit:
        shown = [*shown[:limit], t("more_problems", lang, count=len(shown) - limit)]
    return shown


def decide_status(execution: Execution, checks: list[CheckResult], *, lang: str = "en") -> tuple[Status, str]:
    """graded when every learner cell ran cleanly and every answer could be read; error otherwise."""
    problems = [c.message for c in execution.cells if c.status != "ok" and c.message]
    problems += list(execution.extract_failures.values())
    seen = set(problems)
    problems += [m for m in execution.messages if m not in seen]
    failed = (
        any(c.status != "ok" for c in execution.cells)
        or bool(execution.extract_failures)
        or ANSWER_LIMIT in execution.limits_hit
    )
    return (Status.ERROR if failed else Status.GRADED), "; ".join(dedupe(problems, lang=lang))


def total(checks: list[CheckResult]) -> float:
    return round(sum(c.score for c in checks), 4)
