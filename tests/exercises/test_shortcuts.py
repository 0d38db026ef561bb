"""Issues 12.1 and 12.2: answers importable from the runtime, and fakes of the launchers, earn nothing.

Each file in tests/fixtures/shortcuts/<id>/ is extra cells (split at `# %%` lines) appended to the
exercise's template: they rebind graded names to the runtime's implementation (the lab, verl) or fake a
launcher. The first line declares `{"before": min score with no policy and no grader-owned launchers
(or null), "zero": [checks that must score 0]}`, plus `"provenance_alone": false` for a shortcut only
the sandbox view stops (code loaded by file path inside launched processes, which the kernel-side report
cannot see; unsafe-local hides nothing) and `"by": "harness"` for one a grader-owned launcher defeats
(no provenance message then). Graded three ways: as before issue 12 (proves the shortcut works, so the
test can fail), bwrap with the exercise's view (both layers), unsafe-local (no view).
"""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from grading.exercise import REPO_ROOT, Catalogue, Policy
from grading.pipeline import grade_notebook
from grading.sandbox import make_sandbox

SHORTCUTS = REPO_ROOT / "tests" / "fixtures" / "shortcuts"
CATALOGUE = Catalogue()
TAG = "# titangrade-shortcut: "
FAST = {"ch07.wordle_reward", "ch07.agent_loop", "ch05.fsdp_to_torchtitan", "ch07.dry_run_config",
        "ch08.perf_comparison"}  # light kernels; the rest import torch or verl (tens of seconds each)


def _no_policy() -> Catalogue:
    """The catalogue as it was before issue 12: no policy, no grader-owned launchers."""
    cat = Catalogue()
    for ex in cat:
        ex.manifest = ex.manifest.model_copy(update={"policy": Policy(own=())})
        reference = {k: v for k, v in ex.reference().items() if k != "harness"}
        ex.__dict__["_reference"] = reference  # the cached answer file, minus the harness
    return cat


def _cases():
    for path in sorted(SHORTCUTS.glob("*/*.py")):
        marks = [] if path.parent.name in FAST else [pytest.mark.slow]
        yield pytest.param(path, id=f"{path.parent.name}-{path.stem}", marks=marks)


def _load(path: Path):
    head, _, body = path.read_text(encoding="utf-8").partition("\n")
    assert head.startswith(TAG), f"{path}: the first line must be {TAG}{{...}}"
    expect = json.loads(head[len(TAG):])
    ex = CATALOGUE.get(path.parent.name)
    nb = nbformat.read(ex.notebook_path, as_version=4)  # the template: the learner wrote nothing themselves
    for cell in body.split("\n# %%\n"):  # a line `# %%` starts another appended cell
        nb.cells.append(nbformat.v4.new_code_cell(cell.strip("\n")))
    return ex, nbformat.writes(nb), expect


def _info(result) -> str:
    return "\n".join([f"{result.status.value} {result.score}/{result.max_score}"]
                     + [f"  {c.name}: {c.score} {c.feedback[:160]!r}" for c in result.checks]
                     + [f"  cell {c.index}: {c.status} {c.message[:200]!r}" for c in result.cells if c.status != "ok"])


@pytest.fixture(scope="module")
def bwrap():
    return make_sandbox("auto")


@pytest.mark.parametrize("path", list(_cases()))
def test_shortcut_scores_without_the_policy(path: Path, bwrap):
    ex, source, expect = _load(path)
    if expect["before"] is None:
        pytest.skip("this shortcut cannot run in this environment even without the policy")
    result = grade_notebook(source, exercise_id=ex.id, catalogue=_no_policy(), sandbox=bwrap)
    assert result.score >= expect["before"] - 1e-6, _info(result)
    assert sum(c.score for c in result.checks if c.name in expect["zero"]) > 0, _info(result)


@pytest.mark.parametrize("path", list(_cases()))
@pytest.mark.parametrize("mode", ["auto", "unsafe-local"])
def test_shortcut_scores_zero_on_the_tasks_it_answers(path: Path, mode: str, bwrap):
    ex, source, expect = _load(path)
    if mode == "unsafe-local" and not expect.get("provenance_alone", True):
        pytest.skip("only the sandbox view stops this shortcut (declared in the fixture)")
    sandbox = bwrap if mode == "auto" else make_sandbox("unsafe-local")
    result = grade_notebook(source, exercise_id=ex.id, catalogue=CATALOGUE, sandbox=sandbox, lang="zh")
    assert result.status.value in ("graded", "error"), _info(result)
    for check in result.checks:
        if check.name in expect["zero"]:
            assert check.score == 0, _info(result)
            if expect.get("by", "policy") == "policy" and mode == "unsafe-local":
                assert "0 分" in check.feedback, _info(result)  # the provenance reason, in zh here
