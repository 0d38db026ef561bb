"""The policy cell is generated from `[policy]`: a manifest edit changes what the learner reads."""

from __future__ import annotations

from pathlib import Path

import nbformat

from grading.authoring.build import render
from grading.authoring.policy_note import policy_markdown
from grading.authoring.scaffold import scaffold
from grading.exercise import Catalogue, Exercise, load_manifest


def _scaffolded(tmp: Path, policy: str = ""):
    scaffold("ch09.squares", exercises_root=tmp / "exercises", reference_root=tmp / "reference")
    toml = tmp / "exercises/ch09/squares/exercise.toml"
    if policy:  # in place of the scaffold's own [policy] section
        text = toml.read_text(encoding="utf-8")
        head, _, rest = text.partition("[policy]")
        _, sep, tail = rest.partition("[[answers]]")
        toml.write_text(head + policy + "\n\n" + sep + tail, encoding="utf-8")
    return Exercise(load_manifest(toml), toml.parent, tmp / "reference/ch09.squares")


def _cell(ex, tmp: Path, variant: str = "template") -> str:
    out = render(ex, fixtures_root=tmp / "fixtures")
    path = ex.notebook_path if variant == "template" else ex.solution_path
    nb = nbformat.reads(out.files[path].decode("utf-8"), as_version=4)
    assert nb.cells[0].source.lstrip().startswith("#")  # the title stays first
    return nb.cells[1].source


def test_a_manifest_without_forbid_says_nothing_is_off_limits(tmp_path):
    cell = _cell(_scaffolded(tmp_path), tmp_path)
    assert "Off limits: nothing" in cell and "本练习没有禁用的模块" in cell
    assert "`solve`" in cell  # the function answer is the learner's own
    assert "scores 0" not in cell


def test_changing_the_policy_changes_the_cell_in_template_and_solution(tmp_path):
    policy = (
        '[policy]\nforbid = ["verl", "exercises.lab.wordle"]\nallow = ["torch"]\n'
        'lesson = { en = "LESSON-EN", zh = "LESSON-ZH" }'
    )
    ex = _scaffolded(tmp_path, policy)
    cell = _cell(ex, tmp_path)
    assert cell == _cell(ex, tmp_path, "solution") == policy_markdown(ex.manifest)
    assert "the lab's Wordle reward module (`exercises.lab.wordle`)" in cell and "`verl`" in cell
    assert "Wordle 奖励模块（`exercises.lab.wordle`）" in cell
    assert "scores 0 on its tasks" in cell and "得 0 分" in cell
    assert "PyTorch (`torch`)" in cell and "LESSON-EN" in cell and "LESSON-ZH" in cell
    assert "Off limits: nothing" not in cell


def test_every_catalogue_notebook_carries_its_policy_cell_once():
    for ex in Catalogue():
        expected = policy_markdown(ex.manifest)
        for path in (ex.notebook_path, ex.solution_path):
            nb = nbformat.read(path, as_version=4)
            assert nb.cells[1].source == expected, path
            sources = [c.source for c in nb.cells]
            assert sum("What you write and what you may use" in s for s in sources) == 1, path
            if ex.manifest.policy.lesson:  # folded into the generated cell, not repeated by hand
                assert sum(ex.manifest.policy.lesson.en in s for s in sources) == 1, path
        for name in ex.manifest.own:
            assert f"`{name}`" in expected, (ex.id, name)
        for module in ex.manifest.policy.forbid:
            assert f"`{module}`" in expected, (ex.id, module)
