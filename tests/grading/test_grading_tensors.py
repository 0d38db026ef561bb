"""Tensors cross the kernel boundary both ways; torch is seeded lazily (light) or eagerly (torch family)."""
from __future__ import annotations

import shutil

import nbformat
import pytest

from grading.exercise import Catalogue
from grading.pipeline import grade_notebook
from grading.result import Status

pytestmark = pytest.mark.slow


def _solution(toy_catalogue):
    return (toy_catalogue.reference_root / "ch06.toy_tensors" / "solution.ipynb").read_bytes()


def test_light_kernel_seeds_torch_at_import_and_passes_tensors(toy_catalogue, engine_sandbox):
    result = grade_notebook(_solution(toy_catalogue), catalogue=toy_catalogue, sandbox=engine_sandbox)
    assert result.status is Status.GRADED, result.message
    assert {c.name: c.passed for c in result.checks} == {
        "logits_values": True, "shard_shape": True, "bf16_values": True, "seeded_torch": True,
        "normalize_calls": True}


def test_torch_family_seeds_eagerly_and_wrong_tensor_math_is_caught(tmp_path, toy_catalogue, engine_sandbox):
    shutil.copytree(toy_catalogue.exercises_root, tmp_path / "exercises")
    manifest = tmp_path / "exercises" / "ch06" / "toy_tensors" / "exercise.toml"
    manifest.write_text(manifest.read_text().replace('kernel_family = "light"', 'kernel_family = "torch"'))
    catalogue = Catalogue(tmp_path / "exercises", toy_catalogue.reference_root)
    assert catalogue.get("ch06.toy_tensors").manifest.kernel_family == "torch"
    nb = nbformat.reads(_solution(toy_catalogue).decode(), as_version=4)
    nb.cells[5].source = nb.cells[5].source.replace("return x / total", "return x / x.max()")
    result = grade_notebook(nbformat.writes(nb), catalogue=catalogue, sandbox=engine_sandbox)
    by = {c.name: c for c in result.checks}
    assert by["seeded_torch"].passed
    assert by["normalize_calls"].score == pytest.approx(1.0)  # only the must-raise case still passes
    assert "normalize([1.0, 1.0, 2.0, 4.0]) returned [0.25, 0.25, 0.5, 1.0]" in by["normalize_calls"].feedback
    assert "1 of 2 hidden cases failed" in by["normalize_calls"].feedback
