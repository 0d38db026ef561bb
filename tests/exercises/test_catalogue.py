"""Catalogue-wide consistency: every exercise ships all its files, its ids agree, and templates leak nothing.

Static checks only (no kernels): they run in a second and guard every chapter's authors at once.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import nbformat
import pytest

from grading.exercise import REPO_ROOT, Catalogue

CATALOGUE = Catalogue()
EXERCISES = list(CATALOGUE)
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "notebooks"
ids = [e.id for e in EXERCISES]


def _notebook(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def test_catalogue_is_not_empty():
    assert len(CATALOGUE) > 0, "no exercise manifests found under exercises/chNN/*/exercise.toml"


@pytest.mark.parametrize("ex", EXERCISES, ids=ids)
def test_every_file_is_there(ex):
    missing = [str(p.relative_to(REPO_ROOT)) for p in (ex.notebook_path, ex.answer_path, ex.solution_path)
               if not p.is_file()]
    assert not missing, f"{ex.id}: missing {missing}; run `titangrade exercises build {ex.id}`"
    mistakes = sorted((FIXTURES / ex.id).glob("mistake_*.ipynb"))
    assert len(mistakes) >= 2, f"{ex.id}: needs >= 2 tests/fixtures/notebooks/{ex.id}/mistake_*.ipynb, has {len(mistakes)}"


@pytest.mark.parametrize("ex", EXERCISES, ids=ids)
def test_ids_chapters_and_directories_agree(ex):
    m = ex.manifest
    assert ex.directory.name == ex.short_name, f"{ex.id} lives in {ex.directory}, expected .../{ex.short_name}"
    assert ex.directory.parent.name == f"ch{m.chapter:02d}", f"{ex.id}: directory {ex.directory.parent.name}"
    assert m.notebook == f"{ex.short_name}.ipynb", f"{ex.id}: notebook should be named {ex.short_name}.ipynb"
    assert ex.reference()["exercise_id"] == ex.id, f"{ex.answer_path} names another exercise"


@pytest.mark.parametrize("ex", EXERCISES, ids=ids)
def test_titles_are_bilingual_and_scores_positive(ex):
    m = ex.manifest
    assert m.title.en.strip() and m.title.zh.strip(), f"{ex.id}: title needs both en and zh"
    assert re.search(r"[\u4e00-\u9fff]", m.title.zh), f"{ex.id}: zh title has no Chinese characters"
    assert m.max_score > 0 and all(c.points > 0 for c in m.checks)
    if m.kernel_family == "training":
        assert m.lane == "long", f"{ex.id}: training exercises run on the long lane"


@pytest.mark.parametrize("ex", EXERCISES, ids=ids)
def test_check_names_match_answer_file(ex):
    ref = ex.reference()["checks"]
    assert set(ref) == {c.name for c in ex.manifest.checks}, f"{ex.id}: manifest checks != answer file checks"
    for c in ex.manifest.checks:
        entry = ref[c.name]
        if c.kind == "function":
            calls = entry.get("calls")
            assert calls, f"{ex.id}.{c.name}: a function check needs calls"
            for call in calls:
                assert ("expect" in call) != ("raises" in call), f"{ex.id}.{c.name}: each call has expect xor raises"
                assert "public" in call, f"{ex.id}.{c.name}: say public true/false on every call"
                if call["public"]:
                    assert call.get("label"), f"{ex.id}.{c.name}: public calls carry a label"
        elif c.kind != "metric_trace":
            assert "expected" in entry, f"{ex.id}.{c.name}: {c.kind} check needs `expected`"
        fb = entry.get("feedback")
        if fb is not None:
            assert fb.get("en") and fb.get("zh"), f"{ex.id}.{c.name}: feedback needs en and zh"


@pytest.mark.parametrize("ex", EXERCISES, ids=ids)
def test_notebooks_carry_the_exercise_id(ex):
    for path in (ex.notebook_path, ex.solution_path, *sorted((FIXTURES / ex.id).glob("*.ipynb"))):
        meta = _notebook(path).metadata.get("titangrade", {})
        assert meta.get("exercise_id") == ex.id, f"{path}: metadata.titangrade.exercise_id != {ex.id}"


@pytest.mark.parametrize("ex", EXERCISES, ids=ids)
def test_mistake_fixtures_declare_expectations(ex):
    names = {c.name for c in ex.manifest.checks}
    for path in sorted((FIXTURES / ex.id).glob("mistake_*.ipynb")):
        expect = _notebook(path).metadata["titangrade"].get("expect")
        assert expect, f"{path}: needs metadata.titangrade.expect"
        assert expect["status"] in ("graded", "error")
        assert 0 <= expect["score"] < ex.manifest.max_score, f"{path}: a mistake must lose points"
        assert set(expect.get("feedback_contains", {})) <= names, f"{path}: feedback_contains names unknown checks"
        assert expect.get("feedback_contains"), f"{path}: name the feedback that points at the mistake"


@pytest.mark.parametrize("ex", EXERCISES, ids=ids)
def test_notebooks_are_saved_without_outputs(ex):
    for path in (ex.notebook_path, ex.solution_path):
        for cell in _notebook(path).cells:
            if cell.cell_type == "code":
                assert not cell.get("outputs"), f"{path}: save notebooks without outputs"


def _leaves(value):
    if isinstance(value, dict):
        if "__tensor__" in value:
            yield from _leaves(value["__tensor__"]["data"])
            return
        for k, v in value.items():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _distinctive(leaf) -> list[str]:
    """Renderings of a hidden expected value worth searching for (small ints and short words are not)."""
    if isinstance(leaf, bool) or leaf is None:
        return []
    if isinstance(leaf, int):
        return [str(leaf)] if abs(leaf) >= 1000 else []
    if isinstance(leaf, float):
        if not math.isfinite(leaf) or leaf == int(leaf) and abs(leaf) < 1000:
            return []
        text = f"{leaf:.6g}"
        return [text] if len(text.replace("-", "").replace(".", "").lstrip("0")) >= 4 else []
    if isinstance(leaf, str):
        return [leaf] if len(leaf) >= 16 and not re.fullmatch(r"[\w.+\-]+", leaf) else []
    return []


def hidden_leaks(reference: dict, text: str) -> list[str]:
    """Distinctive expected values of hidden function calls that appear in `text` (a template's sources)."""
    public: set = set()  # values the learner may see anyway: public expectations and every call input
    inputs_text = []
    for entry in reference["checks"].values():
        for call in entry.get("calls", []):
            for leaf in (*_leaves(call.get("args", [])), *_leaves(call.get("kwargs", {}))):
                public.add(repr(leaf))
                inputs_text.append(str(leaf))
            if call.get("public"):
                public.update(map(repr, _leaves(call.get("expect"))))
    inputs_blob = "\n".join(inputs_text)
    leaks = []
    for entry in reference["checks"].values():
        for call in entry.get("calls", []):
            if call.get("public"):
                continue
            for leaf in _leaves(call.get("expect")):
                if repr(leaf) in public or (isinstance(leaf, str) and leaf in inputs_blob):
                    continue  # derived from an input the kernel receives anyway
                for needle in _distinctive(leaf):
                    if re.search(r"(?<![\w.])" + re.escape(needle) + r"(?![\w])", text):
                        leaks.append(needle)
    return sorted(set(leaks))


def test_leak_guard_catches_a_hidden_value_and_ignores_public_ones():
    ref = {"checks": {"c": {"calls": [
        {"args": [1], "expect": 1720574976, "public": False},
        {"args": [2], "expect": 0.0883883, "public": True, "label": "x"},
        {"args": ["long input string with spaces"], "expect": "long input string", "public": False}]}}}
    assert hidden_leaks(ref, "print(1720574976)") == ["1720574976"]
    assert hidden_leaks(ref, "scale = 0.0883883  # public example") == []
    assert hidden_leaks(ref, "x = 'long input string'") == []
    assert hidden_leaks(ref, "n = 17205749760") == []


@pytest.mark.parametrize("ex", EXERCISES, ids=ids)
def test_template_does_not_leak_hidden_expectations(ex):
    """Hidden cases' expected values (distinctive ones) must not appear in the learner's template."""
    text = "\n".join(c.source for c in _notebook(ex.notebook_path).cells)
    leaks = hidden_leaks(ex.reference(), text)
    assert not leaks, f"{ex.id}: template shows hidden expected values {leaks[:5]}"


def test_answer_files_are_json_with_utf8():
    for ex in EXERCISES:
        json.loads(ex.answer_path.read_text(encoding="utf-8"))
