"""RULES: every stated rule has a case (issue 29). Each refusal is made on the scaffold's own master, in a temp
catalogue, and must come out of `build` (so `build --check` and `validate`) as `file:line: problem` + `fix:`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grading.authoring import rules
from grading.authoring.scaffold import scaffold
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
def tmp_catalogue(tmp_path: Path) -> Path:
    scaffold("ch09.squares", exercises_root=tmp_path / "exercises", reference_root=tmp_path / "reference")
    return tmp_path


def _master(root: Path) -> Path:
    return root / "reference" / "ch09.squares" / "squares.py"


def _edit(root: Path, *pairs: tuple[str, str]) -> Path:
    path = _master(root)
    text = path.read_text(encoding="utf-8")
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return path


def _line(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text(encoding="utf-8").split("\n"), 1) if needle in ln)


def _build_errors(root: Path, capsys, *extra: str) -> str:
    capsys.readouterr()
    assert main(["exercises", "build", *extra, *_roots(root)]) == 1
    return capsys.readouterr().err


def test_the_scaffold_declares_rules_and_builds_their_hints_into_the_answer_file(tmp_catalogue, capsys):
    assert main(["exercises", "build", *_roots(tmp_catalogue)]) == 0
    answers = json.loads((tmp_catalogue / "reference/ch09.squares/squares_answer.txt").read_text(encoding="utf-8"))
    hidden = answers["checks"]["hidden_cases"]
    assert [c["rules"] for c in hidden["calls"]] == [["negatives"], ["empty"]]
    assert list(hidden["rule_hints"]) == ["negatives", "empty"]  # RULES order
    assert hidden["rule_hints"]["empty"]["en"].startswith("An empty list")
    template = (tmp_catalogue / "exercises/ch09/squares/squares.ipynb").read_text(encoding="utf-8")
    assert "RULES" not in template and "rule_hints" not in template  # grader data stays out of the notebook


@pytest.mark.parametrize(
    ("pairs", "at", "problem"),
    [
        (  # a manifest check with no rule
            [('    "public_cases": [\n        {"id": "square_sum"', '    "xpublic": [\n        {"id": "square_sum"')],
            '"xpublic": [',
            "RULES names 'xpublic', which is not a check of exercise.toml",
        ),
        (
            [
                (
                    '    "public_cases": [\n        {"id": "square_sum"',
                    '    "public_cases": [],\n    "x": [\n        {"id": "square_sum"',
                )
            ],
            '"public_cases": [],',
            "check 'public_cases' lists no rule in RULES",
        ),
        (  # a rule no call tests
            [('"expect": 0, "rules": ["empty"]', '"expect": 0, "rules": ["negatives"]')],
            '{"id": "empty"',
            "rule 'empty' of check 'hidden_cases' is tested by no call",
        ),
        (  # a hidden call naming no rule, or an unknown one
            [
                ('"expect": 29, "rules": ["negatives"]', '"expect": 29'),
                ('"expect": 0, "rules": ["empty"]', '"expect": 0, "rules": ["empty", "negatives"]'),
            ],
            '"args": [[-2, 5]]',
            "hidden call 1 of check 'hidden_cases' names no rule",
        ),
        (
            [('"rules": ["empty"]', '"rules": ["emtpy", "empty"]')],
            '"args": [[]]',
            "hidden call 2 of check 'hidden_cases' names rule 'emtpy', which RULES does not list",
        ),
        (  # the stated phrase is not in the template
            [('"stated": "an empty list sums to 0"', '"stated": "an empty list sums to zero"')],
            '{"id": "empty"',
            "rule 'empty': its stated phrase 'an empty list sums to zero' is not in the learner template's text",
        ),
        (  # the grader cell's text is not the template's: a phrase only there states nothing
            [
                ("# Grader only: never in the template", "# Grader only (an empty list sums to nothing): never in the"),
                ('"stated": "an empty list sums to 0"', '"stated": "an empty list sums to nothing"'),
            ],
            '{"id": "empty"',
            "its stated phrase 'an empty list sums to nothing' is not in the learner template's text",
        ),
        (  # a keyword no public call passes and the template's signature does not name
            [('"args": [[]], "public": False', '"args": [[]], "kwargs": {"scale": 2}, "public": False')],
            '"args": [[]]',
            "passes keyword 'scale', which no public call passes and the template's signature of solve() does not",
        ),
        (  # a malformed rule
            [
                (
                    '{"id": "empty", "stated": "an empty list sums to 0",',
                    '{"id": "empty", "stated": "an empty list sums to 0", "note": 1,',
                )
            ],
            '{"id": "empty"',
            "rule 2 of check 'hidden_cases': unknown keys ['note']",
        ),
    ],
)
def test_each_refusal_names_file_line_and_fix(tmp_catalogue, capsys, pairs, at, problem):
    path = _edit(tmp_catalogue, *pairs)
    err = _build_errors(tmp_catalogue, capsys)
    assert f"{path}:{_line(path, at)}: " in err and problem in err and "fix: " in err, err
    assert problem in _build_errors(tmp_catalogue, capsys, "--check")  # CI's check fails the same way


def test_every_rule_problem_of_a_master_is_listed_at_once(tmp_catalogue, capsys):
    _edit(tmp_catalogue, ('"rules": ["empty"]', '"rules": []'), ('sums to 0",', 'sums to nil",'))
    err = _build_errors(tmp_catalogue, capsys)
    for problem in ("names no rule", "is tested by no call", "is not in the learner template's text"):
        assert problem in err, err
    assert "\n3 problem(s):" in err and err.count("fix: ") == 3  # one summary line each


def test_validate_refuses_before_grading_anything(tmp_catalogue, capsys):
    _edit(tmp_catalogue, ('"rules": ["empty"]', '"rules": []'))
    capsys.readouterr()
    assert main(["exercises", "validate", "ch09.squares", "--sandbox", "unsafe-local", *_roots(tmp_catalogue)]) == 1
    captured = capsys.readouterr()
    assert "names no rule" in captured.err and "grading solution.ipynb" not in captured.out


def test_a_hidden_int_where_the_public_call_passes_a_str_is_refused_unless_a_rule_states_the_type(
    tmp_catalogue, capsys
):
    public = ('"args": [[1, 2, 3]], "public": True', '"args": [["1", "2", "3"]], "public": True')
    path = _edit(tmp_catalogue, public)
    err = _build_errors(tmp_catalogue, capsys)
    line = _line(path, '"args": [[-2, 5]]')
    assert (
        f"{path}:{line}: hidden call 1 of check 'hidden_cases': argument 1 is list[int] where the public calls "
        "pass list[str]" in err
    ), err
    assert "hidden call 2" not in err  # an empty list states no element type: it fits any list
    # the notebook states the other type, and the rule says where: allowed
    _edit(
        tmp_catalogue,
        ("# an empty list sums to 0.", "# an empty list sums to 0. The numbers may be ints."),
        (
            '"stated": "Negative numbers are squared too",',
            '"stated": "Negative numbers are squared too", "types": "the numbers may be ints",',
        ),
    )
    assert main(["exercises", "build", *_roots(tmp_catalogue)]) == 0, capsys.readouterr().err
    # a `types` phrase the template does not hold is itself refused
    _edit(tmp_catalogue, ('"types": "the numbers may be ints"', '"types": "the numbers may be floats"'))
    assert "its types phrase 'the numbers may be floats' is not in" in _build_errors(tmp_catalogue, capsys)


def test_a_keyword_the_template_signature_names_may_be_passed_by_a_hidden_call_only(tmp_catalogue, capsys):
    _edit(
        tmp_catalogue,
        ('"args": [[]], "public": False', '"args": [[]], "kwargs": {"scale": 2}, "public": False'),
        ("def solve(numbers):", "def solve(numbers, scale=1):"),
    )
    assert main(["exercises", "build", *_roots(tmp_catalogue)]) == 0, capsys.readouterr().err
    # once a public call passes it, a hidden call must pass the same type
    _edit(
        tmp_catalogue,
        ('"args": [[1, 2, 3]], "public": True', '"args": [[1, 2, 3]], "kwargs": {"scale": 1.5}, "public": True'),
    )
    assert "keyword 'scale' is int where the public calls pass float" in _build_errors(tmp_catalogue, capsys)


def test_a_master_without_rules_is_refused_only_once_rules_are_required(tmp_catalogue, capsys, monkeypatch):
    path = _master(tmp_catalogue)
    text = path.read_text(encoding="utf-8")
    start, end = text.index("RULES = {"), text.index("MISTAKES = [")
    path.write_text(text[:start] + text[end:], encoding="utf-8")
    monkeypatch.setattr(rules, "REQUIRE_RULES", False)  # a course importing older masters
    assert main(["exercises", "build", *_roots(tmp_catalogue)]) == 0
    monkeypatch.setattr(rules, "REQUIRE_RULES", True)
    err = _build_errors(tmp_catalogue, capsys)
    grader = _line(path, '# %% tags=["grader"]')
    assert f"{path}:{grader}: the master declares no RULES" in err and "fix: " in err


def test_the_generated_policy_cell_is_template_text_too(tmp_catalogue, capsys):
    """`build` puts the manifest's policy cell into the template, so its words state a rule as well."""
    _edit(tmp_catalogue, ('"stated": "an empty list sums to 0"', '"stated": "Functions you write yourself"'))
    assert main(["exercises", "build", *_roots(tmp_catalogue)]) == 0, capsys.readouterr().err


def test_a_hint_naming_a_hidden_value_the_template_does_not_show_is_refused(tmp_catalogue, capsys):
    """A hint is public text (the scrub spares it), so a hidden string in it would reach feedback."""
    path = _edit(
        tmp_catalogue,
        ('"args": [[]], "public": False', '"args": [["Zqsecret"]], "public": False'),
        ('"hint": {"en": "An empty list has no numbers', '"hint": {"en": "Try Zqsecret: an empty list has no numbers'),
    )
    err = _build_errors(tmp_catalogue, capsys)
    problem = "rule 'empty': its hint names 'Zqsecret', a hidden case's value the template does not show"
    line = _line(path, '{"id": "empty"')
    assert f"{path}:{line}: {problem}" in err, err
