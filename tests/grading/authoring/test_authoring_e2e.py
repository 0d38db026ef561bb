"""End to end, as an author: scaffold a ch09 exercise in a temp catalogue, build it, validate it in real kernels."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from service.cli import main

SANDBOX = os.environ.get("TITANGRADE_TEST_SANDBOX", "unsafe-local")


@pytest.mark.slow
def test_new_build_validate_a_ch09_exercise(tmp_path: Path, capsys):
    roots = [
        "--exercises-root",
        str(tmp_path / "exercises"),
        "--reference-root",
        str(tmp_path / "reference"),
        "--fixtures-root",
        str(tmp_path / "fixtures"),
    ]
    assert main(["exercises", "new", "ch09.squares", *roots]) == 0
    from grading.exercise import load_manifest

    manifest = load_manifest(tmp_path / "exercises" / "ch09" / "squares" / "exercise.toml")
    assert manifest.policy.own == ("solve",) and manifest.policy.forbid == ()  # the author starts from a policy
    assert main(["exercises", "build", "ch09.squares", *roots]) == 0
    template = (tmp_path / "exercises" / "ch09" / "squares" / "squares.ipynb").read_text(encoding="utf-8")
    assert "Functions you write yourself: `solve`" in template and "this exercise forbids no module" in template
    assert main(["exercises", "validate", "ch09.squares", "--sandbox", SANDBOX, *roots]) == 0
    out = capsys.readouterr().out
    assert "[1/1] validating ch09.squares" in out
    for notebook in ("solution.ipynb", "squares.ipynb", "mistake_no_square.ipynb", "mistake_drops_negatives.ipynb"):
        assert f"grading {notebook} ..." in out
    assert "solution.ipynb: graded, 10/10" in out and "squares.ipynb: graded, 0/10" in out
    assert "mistake_no_square.ipynb: graded, 3/10" in out and "mistake_drops_negatives.ipynb: graded, 7/10" in out
    summary = out.rsplit("\nexercise ", 1)[1]
    assert summary.split("\n")[2].split() == ["ch09.squares", "10/10", "0", "2/2", "ok"]

    # a mistake that no longer changes the score is an authoring error, located at the mistake
    master = tmp_path / "reference" / "ch09.squares" / "squares.py"
    master.write_text(master.read_text().replace('"replace": "x for x"', '"replace": "x*x for x"'))
    line = next(i for i, ln in enumerate(master.read_text().split("\n"), 1) if '{"name": "no_square"' in ln)
    assert main(["exercises", "validate", "ch09.squares", "--sandbox", SANDBOX, *roots]) == 1
    captured = capsys.readouterr()
    assert "FAILED (1)" in captured.out
    assert f"{master}:{line}: mistake 'no_square' does not change the score" in captured.err
    assert "fix: " in captured.err
