"""`titangrade exercises validate`: grade what an author is about to publish, with the real engine.

The solution must get full marks, the template 0, and every declared mistake its declared score while
failing the checks it names (their feedback containing the declared phrase). nbgrader's `validate`
and Otter's `assign` tests set the bar; this also catches a mistake that does not change the score.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from grading.authoring.build import Outputs
from grading.authoring.master import AuthoringError
from grading.exercise import Catalogue
from grading.pipeline import grade_notebook
from grading.result import GradeResult
from grading.sandbox import Sandbox

SCORE_TOLERANCE = 1e-3  # mistakes declare scores to 4 decimals; the engine rounds each check to 4


@dataclass
class Row:
    """One exercise's validation: what each notebook scored, and every problem found."""

    exercise_id: str
    max_score: float
    solution: float | None = None
    template: float | None = None
    mistakes_ok: int = 0
    mistakes: int = 0
    problems: list[AuthoringError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _feedback(result: GradeResult) -> str:
    return "; ".join(f"{c.name} {c.score}/{c.max_score}" for c in result.checks if c.score < c.max_score)


def validate(out: Outputs, *, catalogue: Catalogue, sandbox: Sandbox, say: Callable[[str], None] = print) -> Row:
    """Grade the solution, the template and each mistake of one built exercise (files already written)."""
    ex, master = out.exercise, out.master
    row = Row(ex.id, ex.manifest.max_score, mistakes=len(master.mistakes))

    def grade(label: str, data: bytes) -> GradeResult:
        say(f"    grading {label} ...")
        result = grade_notebook(data, exercise_id=ex.id, catalogue=catalogue, sandbox=sandbox)
        say(
            f"    {label}: {result.status.value}, {result.score:g}/{result.max_score:g} "
            f"({result.duration_s or 0:.1f} s)"
        )
        return result

    sol = grade("solution.ipynb", out.files[ex.solution_path])
    row.solution = sol.score
    if sol.status.value != "graded" or abs(sol.score - ex.manifest.max_score) > SCORE_TOLERANCE:
        row.problems.append(
            AuthoringError(
                master.path,
                1,
                f"the solution scores {sol.score:g}/{ex.manifest.max_score:g} "
                f"({sol.status.value}{': ' + sol.message if sol.message else ''}; lost: {_feedback(sol)})",
                "fix the solution regions, or the expected values in CHECKS for the checks that lost points",
            )
        )
    tmpl = grade(ex.notebook_path.name, out.files[ex.notebook_path])
    row.template = tmpl.score
    if tmpl.score != 0:
        passing = ", ".join(c.name for c in tmpl.checks if c.score > 0)
        row.problems.append(
            AuthoringError(
                master.path,
                1,
                f"the template scores {tmpl.score:g} (checks {passing} give credit without any work)",
                "move the code those checks read into a `### BEGIN SOLUTION` region so the stub replaces it",
            )
        )
    for m in master.mistakes:
        res = grade(f"mistake_{m.name}.ipynb", out.files[out.fixtures_dir / f"mistake_{m.name}.ipynb"])
        problems = _mistake_problems(m, res, ex.manifest.max_score)
        row.problems += [AuthoringError(master.path, m.line, p, f) for p, f in problems]
        row.mistakes_ok += not problems
    return row


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
