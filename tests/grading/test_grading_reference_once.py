"""The hidden answer file is read once per grade: the grader-cell plan and the checks share one load."""

from __future__ import annotations

import pytest

from grading.errors import GraderFault
from grading.exercise import Catalogue, Exercise
from grading.pipeline import grade_notebook


def test_one_reference_load_per_grade(toy_catalogue, engine_sandbox, toy_solution, monkeypatch):
    calls: list[str] = []
    original = Exercise.reference

    def counting(self):
        calls.append(self.id)
        return original(self)

    monkeypatch.setattr(Exercise, "reference", counting)
    result = grade_notebook(toy_solution.read_bytes(), catalogue=toy_catalogue, sandbox=engine_sandbox)
    assert result.status.value == "graded" and result.score == result.max_score
    assert calls == ["ch05.toy"]


def test_unreadable_reference_is_a_grader_fault(tmp_path):
    from grading.authoring.scaffold import scaffold

    scaffold("ch09.squares", exercises_root=tmp_path / "exercises", reference_root=tmp_path / "reference")
    ex = Catalogue(tmp_path / "exercises", tmp_path / "reference").get("ch09.squares")
    with pytest.raises(GraderFault, match="reference answers for ch09.squares unreadable") as err:
        ex.reference()  # never built: no answer file
    assert err.value.retryable is False
