"""Whose fault a timeout is (issue 24): the grader's where the host starved the run or the code that ran out
is the grader's own launcher; and an answer a timed-out cell never set says so instead of "not defined"."""

from __future__ import annotations

from typing import Any

from grading import harness
from grading.errors import GraderFault
from grading.i18n import t
from grading.steps.cpu_clock import CellClock
from grading.steps.grader_cells import GraderCell
from grading.steps.kernel_io import CellRun

STARVED = "the host kept the CPU from"  # a GraderFault's message: a limit passed while the run was held back
RETRIED = "this is not the learner's timeout, and grading is retried when the host is less busy"


def grader_timeout(cell: GraderCell, done: CellRun, clock: CellClock | None) -> None:
    """A grader cell that ran out of time is the grader's fault where the host starved it, or where the
    code that ran out is the grader's own launcher (a harness cell or a call to what it binds)."""
    if clock is not None and clock.starved:
        raise GraderFault(f"{STARVED} the grader's {cell.label} cell ({clock.describe()}); {RETRIED}", retryable=True)
    part = cell.part_at(len(done.steps))
    if cell.harness or (part is not None and part.harness):
        what = f"its call of {part.answer}" if part is not None else "it"
        limit = part.timeout_s if part is not None else cell.budget_s
        raise GraderFault(
            f"the grader-owned launcher ({cell.label}) ran out of time: {what} passed its {limit:g} s limit "
            f"(Limits.harness_timeout_s, sized from the reference run); {RETRIED}",
            retryable=True,
        )


# A launcher's ranks could not meet or talk: the host's network, not the learner's code (the launchers and the
# course runtime meet through a file store, so a port another process took is no longer one of them).
HOST_NETWORK = (
    "DistNetworkError",
    "Address already in use",
    "EADDRINUSE",
)  # not a peer gone: the learner may have crashed it


def launcher_raised(cell: GraderCell, done: CellRun, result: Any) -> None:
    """A grader-owned launcher that raised: the host's fault where its ranks could not connect (retried),
    else kept so that the answers it would have bound say what it raised, not "not defined"."""
    reply = done.reply or {}
    error = f"{reply.get('ename', 'Error')}: {reply.get('evalue', '')}"
    if any(mark in error for mark in HOST_NETWORK):
        raise GraderFault(
            f"the grader-owned launcher ({cell.label}) could not connect its ranks ({error[:200]}); {RETRIED}",
            retryable=True,
        )
    for name in cell.binds:
        result.launcher_errors.setdefault(name, error[:300])


def explain_unset(result: Any, learner: list, lang: str) -> None:
    """An answer that a cell which ran out of time (was killed, or never ran) would have set says so, instead
    of "`result` is not defined", which reads as if the learner forgot it. `result`: the run's Execution."""
    answers = (result.payloads.get("answers") or {}).get("answers")
    if not isinstance(answers, dict):
        return
    why: dict[str, str] = {}
    for report, cell in zip(result.cells, learner, strict=False):
        if report.status in ("timeout", "killed", "skipped") and report.message:
            for name in harness.bound_names(cell.source):
                why.setdefault(name, report.message)
    for name, value in answers.items():
        if value == {"__missing__": True} and name in why:
            message = t("answer_unset", lang, name=name, why=why[name])
            answers[name] = {"__raised__": {"type": "NotSet", "message": message}}
        elif value == {"__missing__": True} and name in result.launcher_errors:
            message = t("answer_launcher_raised", lang, name=name, error=result.launcher_errors[name])
            answers[name] = {"__raised__": {"type": "NotSet", "message": message}}
