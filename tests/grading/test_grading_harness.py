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


def test_launchers_and_the_calls_of_what_they_bind_have_limits_of_their_own():
    ex = Catalogue().get("ch06.context_parallel")
    limits = ex.manifest.limits
    assert limits.harness_timeout_s != limits.cell_timeout_s  # sized from the reference run, not the learner's
    plan = grader_cells.plan(ex, reference=ex.reference())
    launchers = [c for c in plan.extract if c.label.startswith("harness")]
    assert launchers and all(c.harness and c.budget_s == limits.harness_timeout_s for c in launchers)
    parts = {p.label: p for c in plan.extract for p in c.parts}
    grader_owned = {label for label, p in parts.items() if p.harness}
    assert grader_owned == {"check all_to_all_public", "check all_to_all_hidden, hidden cases"}, grader_owned
    assert all(parts[label].timeout_s == limits.harness_timeout_s for label in grader_owned)
    learners = [p for label, p in parts.items() if label not in grader_owned]  # ulysses_local_heads, ...
    assert learners and all(p.timeout_s == grader_cells.DEFAULT_CALL_TIMEOUT_S for p in learners)
    cell = next(c for c in plan.extract if any(p.harness for p in c.parts))
    first = next(i for i, p in enumerate(cell.parts) if p.harness)
    assert cell.part_at(sum(p.steps for p in cell.parts[:first])).harness  # which call a timeout stopped in
    assert cell.part_at(sum(p.steps for p in cell.parts)) is None


def _with_slow_launcher(tmp_path) -> Catalogue:
    """sbx_timers whose `double` is bound by a grader-owned launcher that outlasts its 2 s limit."""
    import json
    import shutil
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "fixtures" / "notebooks" / "malicious" / "catalogue"
    root = tmp_path / "catalogue"
    shutil.copytree(src, root)
    manifest = root / "exercises" / "ch05" / "sbx_timers" / "exercise.toml"
    manifest.write_text(manifest.read_text().replace("[limits]\n", "[limits]\nharness_timeout_s = 2\n"))
    answer = root / "reference" / "ch05.sbx_timers" / "sbx_timers_answer.txt"
    reference = json.loads(answer.read_text())
    reference["harness"] = ["import time\ndef double(v):\n    time.sleep(30)\n    return 2 * v\n"]
    answer.write_text(json.dumps(reference))
    return Catalogue(root / "exercises", root / "reference")


@pytest.mark.slow
def test_a_launcher_that_runs_out_of_its_limit_is_a_grader_fault_not_a_wrong_answer(tmp_path, engine_sandbox):
    import nbformat

    from grading.pipeline import grade_notebook
    from grading.result import Status

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 6 * 7")])
    nb.metadata["titangrade"] = {"exercise_id": "ch05.sbx_timers"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    result = grade_notebook(nbformat.writes(nb), catalogue=_with_slow_launcher(tmp_path), sandbox=engine_sandbox)
    assert result.status is Status.NOT_GRADABLE and not result.checks, (result.status, result.checks)
    assert "grader-owned launcher" in result.message and "call of double passed its 2 s limit" in result.message
