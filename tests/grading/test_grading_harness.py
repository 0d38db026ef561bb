"""grading/harness.py and its place in the plan: grader-owned launchers run after the learner's cells, forget
the learner's bindings first, and always publish their nonce. End to end: tests/exercises/test_shortcuts.py
(a single-process fake `run_ulysses`, a typed-in `CU_SEQ_DTYPES`)."""
from __future__ import annotations

import pytest

from grading.exercise import Catalogue
from grading.harness import bound_names, cell_source
from grading.steps import grader_cells


def test_bound_names_are_the_top_level_bindings_only():
    src = ("%%capture\nimport os, torch.multiprocessing as mp\nfrom pathlib import Path\n"
           "def run(s):\n    inner = 1\n    return inner\nclass K: pass\nA, (B, C) = 1, (2, 3)\nD: int = 4\n"
           "for E in []: pass\nwith open('x') as F: pass\n__all__ = []\n")
    assert bound_names(src) == ["os", "mp", "Path", "run", "K", "A", "B", "C", "D", "E", "F"]
    assert bound_names("def broken(:") == []


def test_cell_forgets_then_runs_the_masters_code_and_always_publishes():
    namespace: dict = {"run_ulysses": "the learner's fake", "keep": 1}
    published = []
    namespace["_h"] = lambda nonce, answers, calls, timeout: published.append(nonce)
    exec(cell_source("def run_ulysses(s):\n    return 'grader'\n", handle="_h", nonce="n1"), namespace)
    assert namespace["run_ulysses"]("x") == "grader" and namespace["keep"] == 1 and published == ["n1"]
    namespace["run_ulysses"] = "fake again"
    with pytest.raises(ZeroDivisionError):
        exec(cell_source("run_ulysses = 1 / 0\n", handle="_h", nonce="n2"), namespace)
    assert "run_ulysses" not in namespace and published == ["n1", "n2"]  # the fake is gone even on failure


def test_plan_runs_harness_cells_before_any_answer_is_read():
    ex = Catalogue().get("ch06.context_parallel")
    reference = ex.reference()
    assert any("def run_ulysses" in src for src in reference["harness"])
    plan = grader_cells.plan(ex, reference=reference)
    labels = [c.label for c in plan.extract]
    assert labels[0] == "harness 0" and labels.index("answers") == len(reference["harness"])
    assert plan.nonce in plan.extract[0].source


def test_only_exercises_with_launchers_have_a_harness():
    with_harness = {ex.id for ex in Catalogue() if ex.reference().get("harness")}
    assert with_harness == {"ch05.per_tensor_param", "ch06.context_parallel", "ch06.npu_converter",
                            "ch06.varlen_metadata"}
