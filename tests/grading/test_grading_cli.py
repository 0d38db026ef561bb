"""`titangrade grade` / `titangrade exercises list` through the real top-level parser."""
from __future__ import annotations

import json

import pytest

from service.cli import main


@pytest.fixture
def roots(toy_catalogue):
    return ["--exercises-root", str(toy_catalogue.exercises_root), "--reference-root",
            str(toy_catalogue.reference_root)]


def test_exercises_list_json(roots, capsys):
    assert main(["exercises", "list", "--json", *roots]) == 0
    rows = json.loads(capsys.readouterr().out)
    toy = next(r for r in rows if r["id"] == "ch05.toy")
    assert toy["chapter"] == 5 and toy["max_score"] == 22.0 and toy["notebook"] == "ch05/toy/toy.ipynb"
    assert toy["resources"]["world_size"] == 1 and toy["title"].startswith("Toy exercise")


def test_exercises_list_text(roots, capsys):
    assert main(["exercises", "list", *roots]) == 0
    assert "ch05.toy" in capsys.readouterr().out


@pytest.mark.slow
def test_grade_json_exit_code_error_for_failing_cell(roots, failure_dir, capsys):
    code = main(["grade", str(failure_dir / "exception_cell.ipynb"), "--json", "--sandbox", "unsafe-local", *roots])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["status"] == "error" and out["score"] == 18.0 and out["max_score"] == 22.0
    assert out["exercise_id"] == "ch05.toy" and len(out["checks"]) == 9


@pytest.mark.slow
def test_grade_text_zh_exit_code_graded(roots, toy_solution, capsys):
    code = main(["grade", str(toy_solution), "--lang", "zh", "--sandbox", "unsafe-local", *roots])
    out = capsys.readouterr().out
    assert code == 0 and "ch05.toy: graded  22 / 22" in out and "[PASS] exact_int (乘积)" in out


@pytest.mark.parametrize("fixture,code", [("invalid_json.ipynb", "invalid_json"),
                                          ("wrong_exercise.ipynb", "exercise_mismatch")])
def test_grade_invalid_input_exits_2(roots, failure_dir, capsys, fixture, code):
    assert main(["grade", str(failure_dir / fixture), "--exercise", "ch05.toy", "--json", *roots]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["code"] == code


def test_grade_missing_file_and_bad_sandbox(roots, failure_dir, tmp_path, capsys):
    assert main(["grade", str(tmp_path / "nope.ipynb"), *roots]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["grade", str(failure_dir / "syntax_error.ipynb"), "--sandbox", "docker", *roots]) == 2
    assert "unknown sandbox mode" in capsys.readouterr().err
