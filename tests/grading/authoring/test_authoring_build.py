"""`exercises build`: outputs from masters, --check on staleness, consistency errors, chapters as data."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from grading.authoring.scaffold import scaffold
from grading.exercise import Catalogue
from service.cli import main


def _roots(tmp: Path) -> list[str]:
    return [
        "--exercises-root",
        str(tmp / "exercises"),
        "--reference-root",
        str(tmp / "reference"),
        "--fixtures-root",
        str(tmp / "fixtures"),
    ]


@pytest.fixture
def catalogue_dir(tmp_path: Path) -> Path:
    scaffold("ch09.squares", exercises_root=tmp_path / "exercises", reference_root=tmp_path / "reference")
    return tmp_path


def test_the_repository_is_built(capsys):
    """What CI runs: every committed template, solution, answer file and fixture equals its master's output."""
    assert main(["exercises", "build", "--check"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    n = len(Catalogue())  # from the catalogue, so adding an exercise keeps this green
    assert f"[{n}/{n}]" in out and out.count("up to date") == n >= 17


def test_build_writes_every_output_and_check_then_passes(catalogue_dir, capsys):
    assert main(["exercises", "build", *_roots(catalogue_dir)]) == 0
    out = capsys.readouterr().out
    assert "[1/1] ch09.squares" in out and "5 written" in out  # template, solution, answers, 2 mistakes
    template = nbformat.read(catalogue_dir / "exercises/ch09/squares/squares.ipynb", as_version=4)
    solution = nbformat.read(catalogue_dir / "reference/ch09.squares/solution.ipynb", as_version=4)
    assert 'raise NotImplementedError("implement solve(numbers)")' in template.cells[2].source
    assert "return sum(x * x for x in numbers)" in solution.cells[2].source
    assert "CHECKS" not in json.dumps(template) and "29" not in template.cells[-1].source  # grader cell stays out
    assert template.metadata.titangrade == {"exercise_id": "ch09.squares"}
    answers = json.loads((catalogue_dir / "reference/ch09.squares/squares_answer.txt").read_text())
    assert answers["exercise_id"] == "ch09.squares" and set(answers["checks"]) == {"public_cases", "hidden_cases"}
    mistake = nbformat.read(catalogue_dir / "fixtures/ch09.squares/mistake_no_square.ipynb", as_version=4)
    assert "return sum(x for x in numbers)" in mistake.cells[2].source
    assert mistake.metadata.titangrade.expect == {
        "status": "graded",
        "score": 3.0,
        "feedback_contains": {"hidden_cases": "Square each number"},
    }
    second = nbformat.read(catalogue_dir / "fixtures/ch09.squares/mistake_drops_negatives.ipynb", as_version=4)
    assert "for x in numbers if x > 0" in second.cells[2].source
    assert second.metadata.titangrade.expect["score"] == 7.0
    assert main(["exercises", "build", "--check", *_roots(catalogue_dir)]) == 0


def test_check_fails_on_a_hand_edit_a_missing_file_and_an_undeclared_fixture(catalogue_dir, capsys):
    assert main(["exercises", "build", *_roots(catalogue_dir)]) == 0
    template = catalogue_dir / "exercises/ch09/squares/squares.ipynb"
    template.write_text(template.read_text().replace("implement solve", "implement it"))
    (catalogue_dir / "reference/ch09.squares/squares_answer.txt").unlink()
    extra = catalogue_dir / "fixtures/ch09.squares/mistake_old.ipynb"
    extra.write_text("{}")
    capsys.readouterr()
    assert main(["exercises", "build", "--check", *_roots(catalogue_dir)]) == 1
    captured = capsys.readouterr()
    assert "stale: " in captured.out and "squares.ipynb" in captured.out
    assert "missing: " in captured.out and "squares_answer.txt" in captured.out
    assert "not declared in the master" in captured.out and "STALE (3 files)" in captured.out
    assert "run `titangrade exercises build`" in captured.err
    assert main(["exercises", "build", *_roots(catalogue_dir)]) == 0 and not extra.exists()
    assert main(["exercises", "build", "--check", *_roots(catalogue_dir)]) == 0


@pytest.mark.parametrize(
    ("edit", "where", "problem"),
    [
        (
            ("exercise.toml", '"solve"', '"solver"'),
            ("exercise.toml", 'name = "solver"'),
            "answer 'solver' is never defined by the master's solution",
        ),
        (
            (
                "exercise.toml",
                'answer = "solve"\nkind = "function"\npoints = 6',
                'answer = "solve"\nkind = "function"\npoints = 6\n\n[[checks]]\nname = "extra"\nanswer = "solve"\n'
                'kind = "exact"\npoints = 1',
            ),
            ("squares.py", '# %% tags=["grader"]'),
            "check 'extra' (exercise.toml) has no entry",
        ),
        (
            ("squares.py", '"fails": {"hidden_cases"', '"fails": {"hiddn_cases"'),
            ("squares.py", '{"name": "no_square"'),
            "must fail 'hiddn_cases', which is not a check",
        ),
        (
            ("squares.py", '"find": "x * x for x"', '"find": "x ** 2 for x"'),
            ("squares.py", '{"name": "no_square"'),
            "occurs nowhere in the solution",
        ),
        (
            ("squares.py", '"replace": "x for x"', '"replace": "x * x for x"'),
            ("squares.py", '{"name": "no_square"'),
            "replaces the text with itself",
        ),
        (
            (
                "squares.py",
                '    {"name": "drops_negatives", "score": 7.0, "fails": {"hidden_cases": "negative ones too"},\n'
                '     "patch": [{"find": "for x in numbers", "replace": "for x in numbers if x > 0"}]},\n',
                "",
            ),
            ("squares.py", '{"name": "no_square"'),
            "MISTAKES declares 1 typical mistake(s); an exercise needs at least 2",
        ),
    ],
)
def test_consistency_errors_name_file_line_and_fix(catalogue_dir, capsys, edit, where, problem):
    files = {
        "exercise.toml": catalogue_dir / "exercises/ch09/squares/exercise.toml",
        "squares.py": catalogue_dir / "reference/ch09.squares/squares.py",
    }
    path = files[edit[0]]
    text = path.read_text()
    assert edit[1] in text
    text = text.replace(edit[1], edit[2])
    path.write_text(text)
    wpath = files[where[0]]
    line = next(i for i, ln in enumerate(wpath.read_text().split("\n"), 1) if where[1] in ln)
    capsys.readouterr()
    assert main(["exercises", "build", *_roots(catalogue_dir)]) == 1
    err = capsys.readouterr().err
    assert f"{wpath}:{line}: " in err and problem in err and "fix: " in err, err


def test_chapters_are_data(tmp_path):
    """A ch09 and a ch12 exercise load with no code change; the id's chapter must match the manifest's."""
    for ex_id in ("ch09.squares", "ch12.more"):
        scaffold(ex_id, exercises_root=tmp_path / "exercises", reference_root=tmp_path / "reference")
    cat = Catalogue(tmp_path / "exercises", tmp_path / "reference")
    assert [e.id for e in cat] == ["ch09.squares", "ch12.more"]
    assert cat.get("ch12.more").manifest.chapter == 12


def test_a_broken_manifest_is_named(catalogue_dir, capsys):
    toml = catalogue_dir / "exercises/ch09/squares/exercise.toml"
    toml.write_text(toml.read_text().replace('answer = "solve"', 'answer = "nothing"', 1))
    assert main(["exercises", "build", *_roots(catalogue_dir)]) == 2
    err = capsys.readouterr().err
    assert f"{toml}: " in err and "reads undeclared answer 'nothing'" in err


def test_new_refuses_bad_ids_and_existing_exercises(catalogue_dir, capsys):
    assert main(["exercises", "new", "chapter9.x", *_roots(catalogue_dir)]) == 2
    assert "use chNN.snake_name" in capsys.readouterr().err
    assert main(["exercises", "new", "ch09.squares", *_roots(catalogue_dir)]) == 2
    assert "already exists" in capsys.readouterr().err
