"""Feedback of real gradings (issue 29 item 4): a failing hidden case's hint is the hint of the rule it names,
the learner's own result keys are shown as theirs even when a hidden value shares them, and what is hidden
stays hidden. Each test grades notebooks end to end in a real kernel."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from grading.authoring.scaffold import scaffold
from grading.exercise import Catalogue
from grading.pipeline import grade_notebook
from service.cli import main

pytestmark = pytest.mark.slow

NEGATIVES, EMPTY = "Zq-rule: mind the sign.", "Zq-rule: nothing adds up to nothing."


@pytest.fixture
def squares(tmp_path: Path) -> tuple[Catalogue, Path]:
    """The scaffold, its two rules of hidden cases given hints of their own, built."""
    roots = {"exercises_root": tmp_path / "exercises", "reference_root": tmp_path / "reference"}
    scaffold("ch09.squares", **roots)
    master = tmp_path / "reference/ch09.squares/squares.py"
    text = master.read_text(encoding="utf-8")
    text = text.replace(
        '"hint": {"en": "Square each number, negative ones too, before adding.",', f'"hint": {{"en": "{NEGATIVES}",'
    ).replace('"An empty list has no numbers: its sum of squares is 0."', f'"{EMPTY}"')
    master.write_text(text, encoding="utf-8")
    args = [
        "--exercises-root",
        str(roots["exercises_root"]),
        "--reference-root",
        str(roots["reference_root"]),
        "--fixtures-root",
        str(tmp_path / "fixtures"),
    ]
    assert main(["exercises", "build", *args]) == 0
    return Catalogue(
        roots["exercises_root"], roots["reference_root"]
    ), tmp_path / "reference/ch09.squares/solution.ipynb"


def _grade(catalogue: Catalogue, solution: Path, find: str, replace: str, sandbox):
    source = solution.read_text(encoding="utf-8")
    assert find in source
    result = grade_notebook(source.replace(find, replace).encode(), catalogue=catalogue, sandbox=sandbox)
    return {c.name: c for c in result.checks}


def test_each_failing_hidden_case_speaks_of_its_own_rule(squares, engine_sandbox):
    catalogue, solution = squares
    empty_fails = _grade(
        catalogue,
        solution,
        "return sum(x * x for x in numbers)",
        "return sum(x * x for x in numbers) if numbers else -1",
        engine_sandbox,
    )
    hidden = empty_fails["hidden_cases"]
    assert hidden.score == 3.0 and "1 of 2 hidden cases failed" in hidden.feedback
    assert f"Hint: {EMPTY}" in hidden.feedback and NEGATIVES not in hidden.feedback
    assert "Square each number, negative ones too" not in hidden.feedback  # the check's own hint: no rule failed
    assert empty_fails["public_cases"].passed
    no_square = _grade(catalogue, solution, "x * x for x", "x for x", engine_sandbox)
    assert NEGATIVES in no_square["hidden_cases"].feedback and EMPTY not in no_square["hidden_cases"].feedback
    assert "Hint: Square each number before adding." in no_square["public_cases"].feedback  # a rule on a public call


MANIFEST = """
id = "ch05.keys"
chapter = 5
notebook = "keys.ipynb"
[title]
en = "Own keys"
[limits]
cell_timeout_s = 10
run_timeout_s = 60
[[answers]]
name = "f"
kind = "function"
[[checks]]
name = "public_case"
answer = "f"
kind = "function"
points = 1
[[checks]]
name = "hidden_case"
answer = "f"
kind = "function"
points = 1
"""


def test_the_learners_own_keys_are_not_masked_and_hidden_strings_still_are(tmp_path, engine_sandbox):
    """`Zqown_key` is also a key of a hidden case's expected result (not in any public text): the learner who
    returns it wrote it, so feedback shows it; a hidden input the learner only computes stays masked."""
    (tmp_path / "exercises/ch05/keys").mkdir(parents=True)
    (tmp_path / "exercises/ch05/keys/exercise.toml").write_text(MANIFEST)
    (tmp_path / "reference/ch05.keys").mkdir(parents=True)
    checks = {
        "public_case": {
            "compare": "exact",
            "calls": [{"args": [1], "expect": {"total": 1}, "public": True, "label": "one"}],
        },
        "hidden_case": {
            "compare": "exact",
            "calls": [{"args": ["Zqhidden_in"], "expect": {"total": 5, "Zqown_key": 2}}],
        },
    }
    (tmp_path / "reference/ch05.keys/keys_answer.txt").write_text(json.dumps({"checks": checks}))
    catalogue = Catalogue(tmp_path / "exercises", tmp_path / "reference")
    cells = ["def f(x):\n    return {'total': 0, 'Zqown_key': 1}", "print('Zq' + 'hidden_in')"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["titangrade"] = {"exercise_id": "ch05.keys"}
    result = grade_notebook(nbformat.writes(nb).encode(), catalogue=catalogue, sandbox=engine_sandbox)
    public = next(c for c in result.checks if c.name == "public_case")
    assert "one: f(1) returned {'total': 0, 'Zqown_key': 1}" in public.feedback, public.feedback
    assert "wrong value at key(s) 'total'" in public.feedback and "unexpected key(s) 'Zqown_key'" in public.feedback
    dumped = json.dumps(result.to_dict(), ensure_ascii=False)
    assert "Zqhidden_in" not in dumped and "[hidden]" in json.dumps(result.cells[1].outputs)
