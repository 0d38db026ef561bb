"""CI's bounded sample of the mutation run (the benchmark grades them all: tests/benchmarks/bench_mutants.py):
a few mutants of two real light exercises, each graded in a real kernel, each given a verdict."""

from __future__ import annotations

import os

import pytest

from grading.authoring.build import render
from grading.authoring.mutation import Verdict, run_mutants
from grading.exercise import Catalogue
from grading.sandbox import make_sandbox

SAMPLE = 3  # per exercise: each light grading is about a second on a quiet host
EXERCISES = ("ch06.mesh_shapes", "ch07.agent_loop")  # light, with function checks and hidden cases


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_a_sample_of_a_real_exercise_gets_a_verdict_for_every_mutant(exercise_id):
    catalogue = Catalogue()
    ex = catalogue.get(exercise_id)
    assert ex.manifest.kernel_family == "light"
    out = render(ex)  # in memory: CI's `build --check` keeps the files on disk the same
    sandbox = make_sandbox(os.environ.get("TITANGRADE_TEST_SANDBOX", "unsafe-local"), prewarm={"light": 1})
    try:
        report = run_mutants(out, catalogue=catalogue, sandbox=sandbox, say=print, sample=SAMPLE, seed=29)
    finally:
        sandbox.close()
    graded = [o for o in report.outcomes if o.verdict not in (Verdict.NOT_SAMPLED, Verdict.EQUIVALENT)]
    assert len(graded) == SAMPLE
    assert all(o.verdict in (Verdict.KILLED, Verdict.SURVIVED) for o in graded), [(o.mutant.id, o.note) for o in graded]
    assert all(bool(o.lost) == (o.verdict is Verdict.KILLED) for o in graded)
    figures = report.as_json()
    assert figures["killed"] + figures["survived"] == SAMPLE and isinstance(figures["score"], float)
    assert figures["generated"] == len(report.outcomes) > SAMPLE
    print(f"{exercise_id}: {figures['killed']} of {SAMPLE} sampled mutants killed ({figures['score']:.0%})")
