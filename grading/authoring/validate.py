"""`titangrade exercises validate`: grade what an author is about to publish, with the real engine.

The solution must get full marks, the template 0, and every declared mistake its declared score while
failing the checks it names (their feedback containing the declared phrase). nbgrader's `validate`
and Otter's `assign` tests set the bar; this also catches a mistake that does not change the score.

A run that hit a time limit (a cell, the run, a call such as a grader-owned 2-rank launcher) or that the
grader could not grade says how fast the host was, not what the notebook does: it is graded again (up
to `retries` more times) before its verdict counts, and a verdict that still rests on the clock says so.
`repeat` grades every notebook that many times and reports any difference between the runs.

A notebook that was still not gradable after its retries (no free sandbox user or control group, a kernel
that would not start: a grader fault, never the notebook's doing) gets no verdict at all: it is listed in
`Row.not_graded`, not in `Row.problems`, because the answer is to grade it again, not to edit the exercise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grading.authoring.build import Outputs
from grading.authoring.master import AuthoringError
from grading.exercise import Catalogue
from grading.pipeline import grade_notebook
from grading.result import GradeResult
from grading.sandbox import Sandbox

SCORE_TOLERANCE = 1e-3  # mistakes declare scores to 4 decimals; the engine rounds each check to 4
RERUN = "`titangrade exercises validate ID`, or --retries N"
TIMING_RETRIES = 2  # a timed-out run is graded again this many times before its verdict counts
_TIMEOUT_FEEDBACK = "a timeout ("  # a check call that ran out of its time (grading/checks/compare.py)


@dataclass
class Row:
    """One exercise's validation: what each notebook scored, and every problem found."""

    exercise_id: str
    max_score: float
    solution: float | None = None
    template: float | None = None
    mistakes_ok: int = 0
    mistakes: int = 0
    problems: list[AuthoringError] = field(default_factory=list)  # the exercise's: each names a fix
    not_graded: list[str] = field(default_factory=list)  # "label: reason" of notebooks the host or grader failed

    @property
    def ok(self) -> bool:
        return not self.problems and not self.not_graded


def _feedback(result: GradeResult) -> str:
    return "; ".join(f"{c.name} {c.score}/{c.max_score}" for c in result.checks if c.score < c.max_score)


def clock_bound(result: GradeResult) -> str:
    """Why this result may be the host's speed rather than the notebook's doing ("" if it is not): a
    time limit hit by a cell, the run or a check's call, or a grader-side failure (not gradable)."""
    if result.status.value == "not_gradable":
        return f"not gradable ({result.message[:200]})"
    why = [limit for limit in result.limits_hit if "time" in limit]  # incl. pipeline.CALL_TIME_LIMIT
    why += [f"cell {c.index} {c.status}" for c in result.cells if c.status in ("timeout", "hung")]
    why += [f"check {c.name} timed out" for c in result.checks if _TIMEOUT_FEEDBACK in c.feedback]
    return ", ".join(dict.fromkeys(why))


def verdict(result: GradeResult) -> tuple:
    """What validate judges a run by; two runs of one notebook must agree on it."""
    return (result.status.value, round(result.score, 4), tuple((c.name, c.score, c.passed) for c in result.checks))


@dataclass
class Graded:
    """One notebook's graded runs: the result judged, and notes on runs that disagreed or hit the clock."""

    result: GradeResult
    notes: list[str] = field(default_factory=list)
    clock_only: bool = False  # every run hit the clock: no verdict on the notebook itself
    disagreement: str = ""  # the scores of settled runs that disagreed (--repeat), e.g. "7, 4"

    @property
    def note(self) -> str:
        return f" [{'; '.join(self.notes)}]" if self.notes else ""

    @property
    def host_fault(self) -> str:
        """Why no run of this notebook was graded at all ("" if one was): the grader's or the host's fault."""
        return (self.result.message or "not gradable") if self.result.status.value == "not_gradable" else ""


def grade_runs(
    label: str,
    data: bytes,
    *,
    exercise_id: str,
    catalogue: Catalogue,
    sandbox: Sandbox,
    say: Callable[[str], None] = print,
    retries: int = TIMING_RETRIES,
    repeat: int = 1,
    grade_fn: Callable[..., GradeResult] = grade_notebook,
) -> Graded:
    """Grade one notebook: again while a run hit the clock (up to `retries`), then up to `repeat` runs in all;
    validate and the mutants (grading/authoring/mutation.py) judge the runs the same way."""

    def once(label: str) -> GradeResult:
        say(f"    grading {label} ...")
        result = grade_fn(data, exercise_id=exercise_id, catalogue=catalogue, sandbox=sandbox)
        timed = clock_bound(result)
        say(
            f"    {label}: {result.status.value}, {result.score:g}/{result.max_score:g} "
            f"({result.duration_s or 0:.1f} s){' -- ' + timed if timed else ''}"
        )
        return result

    runs = [once(label)]
    while clock_bound(runs[-1]) and len(runs) <= retries:  # the clock's verdict, not the notebook's
        runs.append(once(f"{label} again"))
    while len(runs) < repeat:
        runs.append(once(f"{label} (run {len(runs) + 1} of {repeat})"))
    settled = [r for r in runs if not clock_bound(r)]
    graded = Graded(settled[0] if settled else runs[-1])
    timed = [clock_bound(r) for r in runs if clock_bound(r)]
    if timed and settled:
        graded.notes.append(f"{len(timed)} of {len(runs)} runs hit the clock and were set aside: {timed[0]}")
    elif timed:
        graded.clock_only = True
        graded.notes.append(
            f"every run ({len(runs)}) hit the clock: {timed[-1]}; on a busy or slow host that is the host's "
            "verdict, so rerun validate on a quiet machine before changing the declaration"
        )
    if len({verdict(r) for r in settled}) > 1:
        graded.disagreement = ", ".join(f"{r.score:g}" for r in settled)
    return graded


def validate(
    out: Outputs,
    *,
    catalogue: Catalogue,
    sandbox: Sandbox,
    say: Callable[[str], None] = print,
    retries: int = TIMING_RETRIES,
    repeat: int = 1,
    grade_fn: Callable[..., GradeResult] = grade_notebook,
) -> Row:
    """Grade the solution, the template and each mistake of one built exercise (files already written)."""
    ex, master = out.exercise, out.master
    row = Row(ex.id, ex.manifest.max_score, mistakes=len(master.mistakes))

    def grade(label: str, data: bytes) -> Graded:
        graded = grade_runs(
            label, data, exercise_id=ex.id, catalogue=catalogue, sandbox=sandbox, say=say, retries=retries,
            repeat=repeat, grade_fn=grade_fn,
        )  # fmt: skip
        if graded.disagreement:
            row.problems.append(
                AuthoringError(
                    master.path,
                    1,
                    f"{label} is graded differently on repeated runs (scores {graded.disagreement}): the verdict "
                    "depends on something other than the code",
                    "look for unseeded randomness, set or dict order, or a check near a time limit",
                )
            )
        return graded

    def judged(label: str, graded: Graded) -> bool:
        """False (and the notebook listed as not graded) when no run of it was graded: no verdict to judge."""
        if graded.host_fault:
            row.not_graded.append(f"{label}: {graded.host_fault}")
        return not graded.host_fault

    sol = grade("solution.ipynb", out.files[ex.solution_path])
    if judged("solution.ipynb", sol):
        row.solution = sol.result.score
        row.problems += _solution_problems(sol, ex.manifest.max_score, master.path)
    tmpl = grade(ex.notebook_path.name, out.files[ex.notebook_path])
    if judged(ex.notebook_path.name, tmpl):
        row.template = tmpl.result.score
        if tmpl.result.score != 0:
            passing = ", ".join(c.name for c in tmpl.result.checks if c.score > 0)
            row.problems.append(
                AuthoringError(
                    master.path,
                    1,
                    f"the template scores {tmpl.result.score:g} (checks {passing} give credit without any work)",
                    "move the code those checks read into a `### BEGIN SOLUTION` region so the stub replaces it",
                )
            )
    for m in master.mistakes:
        label = f"mistake_{m.name}.ipynb"
        res = grade(label, out.files[out.fixtures_dir / label])
        if not judged(label, res):
            continue
        problems = _mistake_problems(m, res.result, ex.manifest.max_score)
        if res.clock_only:  # the declaration may be right: the fix is a quieter host, not a new score
            problems = [(p, _quiet(f)) for p, f in problems]
        row.problems += [AuthoringError(master.path, m.line, p + res.note, f) for p, f in problems]
        row.mistakes_ok += not problems
    return row


def _solution_problems(sol: Graded, max_score: float, master: Path) -> list[AuthoringError]:
    result = sol.result
    if result.status.value == "graded" and abs(result.score - max_score) <= SCORE_TOLERANCE:
        return []
    fix = "fix the solution regions, or the expected values in CHECKS for the checks that lost points"
    return [
        AuthoringError(
            master,
            1,
            f"the solution scores {result.score:g}/{max_score:g} "
            f"({result.status.value}{': ' + result.message if result.message else ''}; "
            f"lost: {_feedback(result)}){sol.note}",
            _quiet(fix, sol.clock_only),
        )
    ]


def _quiet(fix: str, clock_only: bool = True) -> str:
    """The fix for a verdict that only the clock gave: a quieter host first, the declaration only after."""
    if not clock_only:
        return fix
    return f"grade it again on a quiet machine ({RERUN}); only if a run that beats the clock disagrees too: {fix}"


def _mistake_problems(m, res: GradeResult, max_score: float) -> list[tuple[str, str]]:
    if abs(res.score - max_score) <= SCORE_TOLERANCE:
        return [
            (
                f"mistake {m.name!r} does not change the score (it gets full marks)",
                "make the patch break what the checks in `fails` test, or add a hidden case that catches it",
            )
        ]
    out = []
    if res.status.value != m.status:
        out.append(
            (
                f"mistake {m.name!r} ends {res.status.value}, declared {m.status}",
                f'set "status": "{res.status.value}" if that is intended',
            )
        )
    if abs(res.score - m.score) > SCORE_TOLERANCE:
        out.append(
            (
                f"mistake {m.name!r} scores {res.score:g}, declared {m.score:g} (lost: {_feedback(res)})",
                f'set "score": {res.score:g} if the lost checks are the intended ones',
            )
        )
    by_name = {c.name: c for c in res.checks}
    for check, needle in m.fails.items():
        c = by_name.get(check)
        if c is None or c.passed:
            out.append(
                (
                    f"mistake {m.name!r} must fail check {check!r}, but it passes",
                    "change the patch so that check fails, or name the check that does",
                )
            )
        elif needle not in c.feedback:
            out.append(
                (
                    f"mistake {m.name!r}: the feedback of {check!r} lacks {needle!r} (it says {c.feedback!r})",
                    "quote a phrase of that feedback in `fails`, or reword the check's feedback hint",
                )
            )
    return out
