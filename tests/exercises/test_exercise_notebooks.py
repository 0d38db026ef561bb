"""Every exercise graded end to end by the real engine in real kernels.

solution -> graded, full marks, and nothing hidden among the outputs the result keeps of its cells;
template -> 0 (graded or error); each mistake fixture -> exactly the `metadata.titangrade.expect` it
declares (status, score, and a feedback substring per named check).
Training exercises (world_size > 1 ranks) are marked slow.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from test_catalogue import hidden_leaks

from grading.exercise import REPO_ROOT, Catalogue
from grading.pipeline import grade_notebook
from grading.result import SCRUB_FRAGMENT
from grading.sandbox import make_sandbox
from grading.steps.grader_cells import plan

CATALOGUE = Catalogue()
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "notebooks"


@pytest.fixture(scope="module")
def sandbox():
    return make_sandbox("auto")


def _marks(ex):
    return [pytest.mark.slow] if ex.manifest.kernel_family == "training" else []


def _cases():
    for ex in CATALOGUE:
        yield pytest.param(ex, ex.solution_path, "solution", id=f"{ex.id}-solution", marks=_marks(ex))
        yield pytest.param(ex, ex.notebook_path, "template", id=f"{ex.id}-template", marks=_marks(ex))
        for path in sorted((FIXTURES / ex.id).glob("*.ipynb")):
            yield pytest.param(ex, path, "fixture", id=f"{ex.id}-{path.stem}", marks=_marks(ex))


def _summary(result) -> str:
    lines = [f"status={result.status.value} score={result.score}/{result.max_score} message={result.message!r}"]
    lines += [f"  {c.name}: {c.score}/{c.max_score} {c.feedback!r}" for c in result.checks]
    lines += [f"  cell {c.index}: {c.status} {c.message[:300]!r}" for c in result.cells if c.status != "ok"]
    return "\n".join(lines)


def _assert_nothing_hidden_printed(ex, result) -> None:
    """What the result keeps of the cells' outputs (shown on the submission page) holds no hidden case's
    inputs or expected values: no string the engine scrubs with a fragment in nothing public (one made only
    of public words, such as a config key the template names in parts, is not a secret), and no distinctive
    expected number or string (the template guard of test_catalogue.py, on outputs)."""
    assert all(c.outputs is not None for c in result.cells), "the engine recorded no outputs"
    printed = "\n".join(e["text"] + " ".join(e.get("mimes", [])) for c in result.cells for e in c.outputs or [])
    reference = ex.reference()
    p = plan(ex, reference=reference)

    def secret(needle: str) -> bool:  # as the engine's scrub decides: some fragment of it is in nothing public
        k = min(SCRUB_FRAGMENT, len(needle))
        return any(needle[i : i + k] not in p.public_text for i in range(len(needle) - k + 1))

    assert [s for s in p.scrub if s in printed and secret(s)] == []
    assert hidden_leaks(reference, printed) == []


@pytest.mark.parametrize(("ex", "path", "kind"), list(_cases()))
def test_notebook_grades_as_declared(ex, path: Path, kind: str, sandbox):
    result = grade_notebook(path.read_bytes(), exercise_id=ex.id, catalogue=CATALOGUE, sandbox=sandbox)
    info = _summary(result)
    if kind == "solution":
        assert result.status.value == "graded", info
        assert result.score == pytest.approx(ex.manifest.max_score), info
        _assert_nothing_hidden_printed(ex, result)
        return
    if kind == "template":
        assert result.status.value in ("graded", "error"), info
        assert result.score == 0, info
        return
    expect = nbformat.read(path, as_version=4).metadata["titangrade"]["expect"]
    assert result.status.value == expect["status"], info
    assert result.score == pytest.approx(expect["score"], abs=1e-3), info
    feedback = {c.name: c.feedback for c in result.checks}
    for check, needle in expect.get("feedback_contains", {}).items():
        assert needle in feedback.get(check, ""), f"feedback of {check} lacks {needle!r}\n{info}"
