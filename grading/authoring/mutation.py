"""Grade an exercise's mutants (grading/authoring/mutants.py) with validate's grading, and score the checks.

A mutant is killed when it loses points, survives when it gets full marks, and is not graded when no run
of it got a verdict (a host fault, validate's `not_graded`): never a survivor. Declared EQUIVALENT mutants
are not graded at all. Score = killed / (killed + survived); the goal is GOAL per exercise. The solution
is graded first: mutants of a solution without full marks say nothing.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from grading.authoring.build import Outputs, mutant_notebook_bytes
from grading.authoring.master import AuthoringError
from grading.authoring.mutants import OPERATORS, Mutant, generate
from grading.authoring.validate import SCORE_TOLERANCE, clock_bound, grade_runs
from grading.errors import InvalidSubmission
from grading.exercise import Catalogue
from grading.pipeline import grade_notebook
from grading.result import GradeResult
from grading.sandbox import Sandbox

GOAL = 0.9  # killed / (killed + survived), per exercise (issue 29)
LIGHT = "light"  # other kernel families take minutes per grading: only with include_training
MUTANT_RETRIES = 1  # a mutant (or the solution) that was not gradable is graded once more


class Verdict(StrEnum):
    KILLED = "killed"
    SURVIVED = "survived"
    EQUIVALENT = "equivalent"
    NOT_GRADED = "not_graded"
    NOT_SAMPLED = "not_sampled"


@dataclass
class Outcome:
    mutant: Mutant
    verdict: Verdict
    lost: dict[str, float] = field(default_factory=dict)  # check -> points lost
    note: str = ""  # why not graded, a clock note, or the EQUIVALENT reason
    duration_s: float = 0.0  # wall time of its grading (all runs)


@dataclass
class ExerciseMutants:
    """One exercise's mutants and their verdicts."""

    exercise_id: str
    kernel_family: str
    master: str  # the master's path, for `file:line` locations
    checks: dict[str, str]  # manifest check -> the answer it reads
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: str = ""  # why no mutant was graded (a kernel family left out)
    problems: list[AuthoringError] = field(default_factory=list)
    duration_s: float = 0.0

    def count(self, verdict: Verdict) -> int:
        return sum(o.verdict is verdict for o in self.outcomes)

    @property
    def score(self) -> float | None:
        killed, survived = self.count(Verdict.KILLED), self.count(Verdict.SURVIVED)
        return round(killed / (killed + survived), 4) if killed + survived else None

    @property
    def meets_goal(self) -> bool | None:
        return None if self.score is None else self.score >= GOAL

    @property
    def not_graded(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.verdict is Verdict.NOT_GRADED]

    def attributed(self, mutant: Mutant) -> list[str]:
        """The checks that grade the function holding the slip; every check for other code."""
        own = [c for c, answer in self.checks.items() if answer == mutant.function]
        return own or list(self.checks)

    def per_check(self) -> dict[str, dict[str, int]]:
        out = {c: dict.fromkeys(("attributed", "killed", "killed_elsewhere", *_REST), 0) for c in self.checks}
        for o in self.outcomes:
            if o.verdict is Verdict.NOT_SAMPLED:
                continue
            for check in self.attributed(o.mutant):
                row = out[check]
                row["attributed"] += 1
                if o.verdict is Verdict.KILLED:
                    row["killed" if check in o.lost else "killed_elsewhere"] += 1
                else:
                    row[o.verdict.value] += 1
        return out

    def as_json(self) -> dict[str, Any]:
        graded = [o for o in self.outcomes if o.verdict in (Verdict.KILLED, Verdict.SURVIVED)]
        return {
            "id": self.exercise_id,
            "kernel_family": self.kernel_family,
            "skipped": self.skipped or None,
            "generated": len(self.outcomes),
            **{v.value: self.count(v) for v in Verdict},
            "score": self.score,
            "goal": GOAL,
            "meets_goal": self.meets_goal,
            "duration_s": round(self.duration_s, 1),
            "grading_s_per_mutant": round(sum(o.duration_s for o in graded) / len(graded), 2) if graded else None,
            "checks": self.per_check(),
            "survivors": [self._row(o) for o in self.outcomes if o.verdict is Verdict.SURVIVED],
            "mutants": [self._row(o) for o in self.outcomes],
            "problems": [str(p) for p in self.problems],
        }

    def _row(self, o: Outcome) -> dict[str, Any]:
        m = o.mutant
        return {
            "id": m.id,
            "operator": m.operator,
            "line": f"{self.master}:{m.line}",
            "before": m.before,
            "after": m.after,
            "checks": self.attributed(m),
            "verdict": o.verdict.value,
            "lost": o.lost,
            "note": o.note,
            "duration_s": round(o.duration_s, 2),
        }


_REST = ("survived", "equivalent", "not_graded")


def pick(mutants: list[Mutant], *, exercise_id: str, sample: int | None, seed: int) -> set[str]:
    """The ids to grade: all, or `sample` of them drawn by `seed` (the same ids for the same seed)."""
    if sample is None or sample >= len(mutants):
        return {m.id for m in mutants}
    return {m.id for m in random.Random(f"{seed}:{exercise_id}").sample(mutants, sample)}


def run_mutants(
    out: Outputs,
    *,
    catalogue: Catalogue,
    sandbox: Sandbox,
    say: Callable[[str], None] = print,
    sample: int | None = None,
    seed: int = 0,
    jobs: int = 1,
    include_training: bool = False,
    retries: int = MUTANT_RETRIES,
    grade_fn: Callable[..., GradeResult] = grade_notebook,
) -> ExerciseMutants:
    """Generate, then grade, the mutants of one built exercise (its generated files already written)."""
    started = time.monotonic()
    ex, master = out.exercise, out.master
    checks = {c.name: c.answer for c in ex.manifest.checks}
    report = ExerciseMutants(ex.id, ex.manifest.kernel_family, _shown(master.path), checks)
    mutants = generate(master, checks)
    equivalent = {e.mutant: e.reason for e in master.equivalent}
    todo = [m for m in mutants if m.id not in equivalent]
    chosen = pick(todo, exercise_id=ex.id, sample=sample, seed=seed)
    outcomes = {
        m.id: Outcome(m, Verdict.EQUIVALENT, note=equivalent[m.id])
        if m.id in equivalent
        else Outcome(m, Verdict.NOT_SAMPLED)
        for m in mutants
    }
    report.outcomes = list(outcomes.values())
    say(
        f"    {len(mutants)} mutants, {len(equivalent)} declared equivalent, grading {len(chosen)}"
        + (f" (a sample, seed {seed})" if len(chosen) < len(todo) else "")
    )
    if ex.manifest.kernel_family != LIGHT and not include_training:
        report.skipped = (
            f"kernel_family {ex.manifest.kernel_family}: minutes per grading; pass --include-training to grade them"
        )
        for o in report.outcomes:
            if o.verdict is Verdict.NOT_SAMPLED and o.mutant.id in chosen:
                o.note = report.skipped
        return report

    def grade(label: str, data: bytes) -> tuple[GradeResult | None, str, float]:
        """One verdict: graded again only while not gradable (the host's fault). A mutant that ran into a
        time limit is judged as it ran: the CPU clock (grading/steps/cpu_clock.py) times out code that
        computes, and a starved run is not gradable."""
        t0 = time.monotonic()
        for _ in range(retries + 1):
            try:
                graded = grade_runs(
                    label, data, exercise_id=ex.id, catalogue=catalogue, sandbox=sandbox, say=lambda _: None,
                    retries=0, grade_fn=grade_fn,
                )  # fmt: skip
            except InvalidSubmission as exc:  # our own notebook refused: the grader's problem, not the mutant's
                return None, f"refused: {exc}", time.monotonic() - t0
            if not graded.host_fault:
                return graded.result, clock_bound(graded.result), time.monotonic() - t0
        return None, graded.host_fault, time.monotonic() - t0

    baseline, note, took = grade("solution.ipynb", out.files[ex.solution_path])
    if baseline is None or abs(baseline.score - baseline.max_score) > SCORE_TOLERANCE:
        why = f"not graded ({note})" if baseline is None else f"scores {baseline.score:g}/{baseline.max_score:g}"
        say(f"    solution.ipynb: {why}; no mutant graded")
        for o in report.outcomes:
            if o.mutant.id in chosen:
                o.verdict, o.note = Verdict.NOT_GRADED, f"the solution {why}"
        if baseline is not None:
            report.problems.append(
                AuthoringError(
                    master.path,
                    1,
                    f"the solution {why}, so its mutants say nothing",
                    f"make `titangrade exercises validate {ex.id}` pass first",
                )
            )
        report.duration_s = time.monotonic() - started
        return report
    say(f"    solution.ipynb: full marks ({took:.1f} s)")
    notebooks = {
        m.id: mutant_notebook_bytes(ex, master, m.cell, m.source, m.id) for m in mutants if m.id in chosen
    }  # every notebook first, then the gradings
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(grade, f"mutant {mid}", data): mid for mid, data in notebooks.items()}
        for done, future in enumerate(as_completed(futures), start=1):
            o = outcomes[futures[future]]
            result, o.note, o.duration_s = future.result()
            _judge(o, result)
            lost = ", ".join(f"{c} -{p:g}" for c, p in o.lost.items())
            say(
                f"    [{done}/{len(notebooks)}] {o.mutant.id}: {o.verdict.value.replace('_', ' ')}"
                f"{f' ({lost})' if lost else ''} {o.duration_s:.1f} s{' -- ' + o.note if o.note else ''}"
            )
    if report.meets_goal is False:
        report.problems.append(
            AuthoringError(
                master.path,
                master.grader_line or 1,
                f"{report.count(Verdict.SURVIVED)} mutant(s) survive: {report.score:.1%} killed, "
                f"the goal is {GOAL:.0%}",
                "add hidden cases that the survivors listed above fail, or declare one that no correct test "
                'can tell from the solution in EQUIVALENT = [{"mutant": id, "reason": why}]',
            )
        )
    report.duration_s = time.monotonic() - started
    return report


def _judge(o: Outcome, result: GradeResult | None) -> None:
    if result is None:
        o.verdict = Verdict.NOT_GRADED
        return
    o.lost = {c.name: round(c.max_score - c.score, 4) for c in result.checks if c.score < c.max_score - 1e-9}
    o.verdict = Verdict.KILLED if result.score < result.max_score - SCORE_TOLERANCE else Verdict.SURVIVED


def _shown(path: Path) -> str:
    """The master's path as an author types it: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def describe(operator: str) -> str:
    return OPERATORS.get(operator, operator)
