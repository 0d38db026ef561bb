"""Mutant generation (static, no kernel): the operators, the ids of RULES-SPEC section 2, EQUIVALENT."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

import pytest

from grading.authoring.build import render
from grading.authoring.equivalent import MUTANT_ID
from grading.authoring.master import AuthoringError, read_master
from grading.authoring.mutants import OPERATORS, generate
from grading.authoring.scaffold import scaffold
from grading.exercise import Catalogue

RICH = '''\
# %% [markdown]
# # A master with one slip of each kind to make

# %%
OUTSIDE = 1 + 2

def solve(numbers, scale=2):
    ### BEGIN SOLUTION
    """Docstrings are never mutated."""
    total = 0
    print("output is not graded", total + 1)
    for x in numbers[1:3]:
        if x < 0 or not x:
            continue
        if x is None:
            break
        total += -x * x
    label = "sum"
    found = max(True, total)
    found = True
    return pow(total, scale) // 3 if label else found
    ### STUB
    # raise NotImplementedError()
    ### END SOLUTION

# %% tags=["grader"]
CHECKS = {"public_cases": {"compare": "numeric", "feedback": {"en": "x", "zh": "x"},
                           "calls": [{"args": [[1, 2, 3]], "public": True, "expect": 14},
                                     {"args": [[5]], "public": False, "expect": 99}]}}
MISTAKES = []
'''


def _rich(tmp_path: Path, text: str = RICH):
    path = tmp_path / "rich.py"
    path.write_text(text, encoding="utf-8")
    master = read_master(path)
    return master, generate(master, {"public_cases": "solve"})


def _h(line: str) -> str:
    return hashlib.sha1(" ".join(line.split()).encode()).hexdigest()[:8]


def test_every_operator_makes_its_slip_and_only_inside_the_region(tmp_path):
    master, mutants = _rich(tmp_path)
    assert {m.operator for m in mutants} == set(OPERATORS)
    made = {(m.operator, m.before, m.after) for m in mutants}
    ret = "return pow(total, scale) // 3 if label else found"
    for expected in [
        ("cmp", "if x < 0 or not x:", "if x <= 0 or not x:"),
        ("cmp", "if x is None:", "if x is not None:"),
        ("arith", "total += -x * x", "total -= -x * x"),
        ("arith", "total += -x * x", "total += -x / x"),
        ("arith", ret, ret.replace("//", "%")),
        ("const_inc", "total = 0", "total = 1"),
        ("const_inc", "for x in numbers[1:3]:", "for x in numbers[2:3]:"),
        ("const_zero", "for x in numbers[1:3]:", "for x in numbers[0:3]:"),
        ("bool_flip", "found = True", "found = False"),
        ("str_empty", 'label = "sum"', 'label = ""'),
        ("and_or", "if x < 0 or not x:", "if x < 0 and (not x):"),
        ("not_drop", "if x < 0 or not x:", "if x < 0 or x:"),
        ("neg_drop", "total += -x * x", "total += x * x"),
        ("if_pass", "continue", "pass"),
        ("if_true", "if x < 0 or not x:", "if True:"),
        ("if_false", ret, ret.replace("if label", "if False")),
        ("stmt_drop", "total += -x * x", "pass"),
        ("stmt_drop", "for x in numbers[1:3]: ...", "pass"),
        ("args_swap", ret, ret.replace("pow(total, scale)", "pow(scale, total)")),
        ("return_public", "total = 0", "return 14"),
        ("slice_lo", "for x in numbers[1:3]:", "for x in numbers[:3]:"),
        ("slice_hi", "for x in numbers[1:3]:", "for x in numbers[1:]:"),
        ("loop_ctl", "continue", "break"),
        ("loop_ctl", "break", "continue"),
    ]:  # fmt: skip
        assert expected in made, expected
    region = {master.cells[1].line_nos[i] for i in master.cells[1].region}
    assert all(m.line in region for m in mutants)
    for m in mutants:  # never the docstring, the print, code outside the region, or the def's default
        assert not any(word in m.before for word in ("Docstrings", "print", "OUTSIDE", "scale=2"))
        tree = ast.parse(m.source)  # every mutant parses and differs from the solution
        assert ast.dump(tree) != ast.dump(ast.parse(master.learner_cells[m.cell].solution))
    assert len({m.source for m in mutants}) == len(mutants)  # no two alike
    assert not any(m.operator == "args_swap" and "max(" in m.before for m in mutants)  # max(a, b) is max(b, a)


def test_ids_are_operator_line_hash_and_count(tmp_path):
    _, mutants = _rich(tmp_path)
    assert all(MUTANT_ID.fullmatch(m.id) for m in mutants)
    assert len({m.id for m in mutants}) == len(mutants)
    line = "for x in numbers[1:3]:"
    incs = [m.id for m in mutants if m.operator == "const_inc" and m.before == line]
    assert incs == [f"const_inc:{_h(line)}:1", f"const_inc:{_h(line)}:2"]  # 1 and 3 on one line, in order


def test_ids_survive_unrelated_edits_and_change_with_the_line(tmp_path):
    _, before = _rich(tmp_path)
    edited = RICH.replace("# %%\nOUTSIDE", "# %% [markdown]\n# A new paragraph\n\n# %%\nimport math\nOUTSIDE").replace(
        "    total = 0\n", "    total = 0\n\n    # a comment and a blank line\n"
    )
    _, after = _rich(tmp_path, edited)
    assert [m.id for m in after] == [m.id for m in before]
    assert [m.line for m in after] != [m.line for m in before]  # the lines moved; the ids did not

    _, renamed = _rich(tmp_path, RICH.replace('label = "sum"', 'label = "total"'))
    changed = {m.id for m in before} ^ {m.id for m in renamed}
    assert changed and all(_h('label = "sum"') in i or _h('label = "total"') in i for i in changed)


def _toy(tmp_path: Path, extra: str = "") -> tuple[Catalogue, Path]:
    scaffold("ch09.squares", exercises_root=tmp_path / "exercises", reference_root=tmp_path / "reference")
    master = tmp_path / "reference" / "ch09.squares" / "squares.py"
    master.write_text(master.read_text(encoding="utf-8") + extra, encoding="utf-8")
    return Catalogue(tmp_path / "exercises", tmp_path / "reference"), master


def test_the_scaffold_toy_has_three_mutants_of_its_one_solution_line(tmp_path):
    catalogue, _ = _toy(tmp_path)
    out = render(catalogue.get("ch09.squares"), fixtures_root=tmp_path / "fixtures")
    mutants = generate(out.master, {"public_cases": "solve", "hidden_cases": "solve"})
    h = _h("return sum(x * x for x in numbers)")
    assert [(m.id, m.after) for m in mutants] == [
        (f"stmt_drop:{h}:1", "pass"),
        (f"return_public:{h}:1", "return 14"),
        (f"arith:{h}:1", "return sum(x / x for x in numbers)"),
    ]
    assert all(m.function == "solve" for m in mutants)


def test_an_equivalent_mutant_is_accepted_and_a_stale_one_refused(tmp_path):
    h = _h("return sum(x * x for x in numbers)")
    catalogue, _ = _toy(
        tmp_path, f'\nEQUIVALENT = [{{"mutant": "arith:{h}:1", "reason": "only for this test, not true"}}]\n'
    )
    out = render(catalogue.get("ch09.squares"), fixtures_root=tmp_path / "fixtures")
    assert [e.mutant for e in out.master.equivalent] == [f"arith:{h}:1"]

    stale_dir = tmp_path / "stale"
    catalogue, master = _toy(
        stale_dir, '\nEQUIVALENT = [\n    {"mutant": "arith:0badc0de:1", "reason": "the line it named is gone"},\n]\n'
    )
    with pytest.raises(AuthoringError) as err:
        render(catalogue.get("ch09.squares"), fixtures_root=stale_dir / "fixtures")
    line = (
        master.read_text(encoding="utf-8")
        .split("\n")
        .index('    {"mutant": "arith:0badc0de:1", "reason": "the line it named is gone"},')
    )
    assert err.value.path == master and err.value.line == line + 1
    assert "'arith:0badc0de:1', which no longer matches a generated mutant (stale)" in str(err.value)
    assert "fix: delete the entry" in str(err.value)


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ('{"mutant": "arith:0badc0de:1"}', "has keys ['mutant']"),
        ('{"mutant": "arith:0badc0de:1", "reason": "no"}', "gives no reason"),
        ('{"mutant": "arith:12:1", "reason": "a reason of words"}', "is not a mutant id"),
        ('{"mutant": "arith:0badc0de:1", "reason": "a reason of words"}, ' * 2, "twice"),
    ],
)
def test_a_malformed_equivalent_entry_names_the_fix(tmp_path, entry, problem):
    path = tmp_path / "m.py"
    path.write_text(f'# %%\nx = 1\n\n# %% tags=["grader"]\nCHECKS = {{}}\nEQUIVALENT = [{entry}]\n', encoding="utf-8")
    with pytest.raises(AuthoringError, match="EQUIVALENT") as err:
        read_master(path)
    assert problem in str(err.value) and "fix: " in str(err.value)
    assert err.value.line == 6


def test_the_grader_cell_tolerates_rules(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('# %%\nx = 1\n\n# %% tags=["grader"]\nCHECKS = {}\nRULES = {"c": []}\n', encoding="utf-8")
    assert read_master(path).checks == {}
