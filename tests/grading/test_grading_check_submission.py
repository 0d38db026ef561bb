"""check_submission (grading/pipeline.py): intake's cheaper check gives load_submission's verdict on every
upload, the same exercise or the same InvalidSubmission, and takes its quick path for ordinary notebooks."""

from __future__ import annotations

import copy
import json

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grading.pipeline as pipeline
from grading.errors import InvalidSubmission
from grading.exercise import Catalogue
from grading.pipeline import check_submission, load_submission

REAL = Catalogue()  # the course's own exercises: the notebooks learners actually upload


def verdict(fn, raw: bytes, catalogue, exercise_id=None):
    try:
        result = fn(raw, exercise_id=exercise_id, catalogue=catalogue, max_bytes=2_000_000)
    except InvalidSubmission as exc:
        return ("refused", exc.code, exc.message)
    exercise = result[1] if isinstance(result, tuple) else result
    return ("accepted", exercise.id)


def both(raw: bytes, catalogue, exercise_id=None):
    return (verdict(check_submission, raw, catalogue, exercise_id),
            verdict(load_submission, raw, catalogue, exercise_id))


@pytest.fixture
def no_slow_path(monkeypatch):
    """Make load_submission unusable: a check that still passes took the quick path."""
    def refuse(*a, **k):
        raise AssertionError("the quick path should have decided")

    monkeypatch.setattr(pipeline, "load_submission", refuse)


@pytest.mark.parametrize("exercise_id", [e.id for e in REAL])
def test_every_course_solution_and_template_takes_the_quick_path(exercise_id, no_slow_path):
    ex = REAL.get(exercise_id)
    for path in (ex.solution_path, ex.notebook_path):
        assert check_submission(path.read_bytes(), exercise_id=None, catalogue=REAL).id == exercise_id


def _solution(toy_solution) -> dict:
    return json.loads(toy_solution.read_bytes())


def _variant(edit):
    def make(base: dict) -> bytes:
        nb = copy.deepcopy(base)
        edit(nb)
        return json.dumps(nb).encode()

    return make


def _first_code(nb: dict) -> dict:
    return next(c for c in nb["cells"] if c["cell_type"] == "code")


def _text(change):
    return lambda base: change(json.dumps(base))


EDGE_CASES = {
    "plain": _text(str.encode),
    "nan in metadata (orjson refuses, json reads it)": _text(
        lambda t: t.replace('"metadata": {', '"metadata": {"x": NaN, ', 1).encode()
    ),
    "an integer past 64 bits in metadata (orjson reads a float)": _variant(lambda nb: nb["metadata"].update(big=2**70)),
    "execution_count past 64 bits": _variant(lambda nb: _first_code(nb).update(execution_count=2**70)),
    "a lone surrogate": _text(lambda t: t.replace('"metadata": {', '"metadata": {"s": "\\ud800", ', 1).encode()),
    "duplicate cell ids (nbformat repairs them)": _variant(lambda nb: [c.update(id="same") for c in nb["cells"]]),
    "a missing cell id at 4.5": _variant(lambda nb: nb["cells"][0].pop("id", None)),
    "nbformat 4.4 without ids": _variant(
        lambda nb: (nb.update(nbformat_minor=4), [c.pop("id", None) for c in nb["cells"]])
    ),
    "a future minor": _variant(lambda nb: nb.update(nbformat_minor=99)),
    "a boolean minor": _variant(lambda nb: nb.update(nbformat_minor=True)),
    "nbformat 3": _variant(lambda nb: nb.update(nbformat=3)),
    "transient keys with odd values": _variant(
        lambda nb: (nb["metadata"].update(orig_nbformat="x", signature=1), nb["cells"][0]["metadata"].update(trusted=3))
    ),
    "a cell without source": _variant(lambda nb: nb["cells"][0].pop("source")),
    "source as a list of lines": _variant(lambda nb: nb["cells"][0].update(source=["a\n", "b"])),
    "an unknown cell type": _variant(lambda nb: nb["cells"][0].update(cell_type="weird")),
    "cells not a list": _variant(lambda nb: nb.update(cells={})),
    "a utf-8 bom": _text(lambda t: b"\xef\xbb\xbf" + t.encode()),
    "not utf-8": _text(lambda t: t.encode().replace(b'"metadata"', b'"metad\xffta"', 1)),
    "trailing garbage": _text(lambda t: t.encode() + b" x"),
    "too deep": _variant(lambda nb: nb["metadata"].update(deep=json.loads("[" * 70 + "]" * 70))),
    "a json array": lambda base: b"[1, 2]",
}


@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_edge_cases_get_load_submission_s_verdict(case, toy_catalogue, toy_solution):
    raw = EDGE_CASES[case](_solution(toy_solution))
    quick, full = both(raw, toy_catalogue)
    assert quick == full, case


def test_the_exercise_named_in_the_request_is_checked_alike(toy_catalogue, toy_solution):
    raw = toy_solution.read_bytes()
    for exercise_id in ("ch05.toy", "ch05.other_toy", "ch09.nope"):
        quick, full = both(raw, toy_catalogue, exercise_id)
        assert quick == full, exercise_id


_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_cell_keys = st.sampled_from(["cell_type", "source", "metadata", "id", "outputs", "execution_count", "attachments"])
_top_keys = st.sampled_from(["nbformat", "nbformat_minor", "metadata", "cells"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_notebooks_get_the_same_verdict(data, toy_catalogue, toy_solution):
    """Random damage to a real notebook: a key of a cell or of the notebook replaced by random JSON,
    removed, or a random key added. Whatever the damage, the two checks agree."""
    nb = _solution(toy_solution)
    for _ in range(data.draw(st.integers(1, 3))):
        where = data.draw(st.sampled_from(["cell", "top", "cell-metadata"]))
        if where == "top":
            target, key = nb, data.draw(_top_keys)
        elif not isinstance(nb.get("cells"), list) or not nb["cells"]:
            continue
        else:
            cell = nb["cells"][data.draw(st.integers(0, len(nb["cells"]) - 1))]
            if not isinstance(cell, dict):
                continue
            if where == "cell":
                target, key = cell, data.draw(_cell_keys)
            else:
                target = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else cell
                key = data.draw(st.text(max_size=6))
        action = data.draw(st.sampled_from(["replace", "drop"]))
        if action == "drop":
            target.pop(key, None)
        else:
            target[key] = data.draw(_json)
    raw = json.dumps(nb).encode()
    quick, full = both(raw, toy_catalogue)
    assert quick == full


def test_a_nbformat_upgrade_still_counts_cells(toy_catalogue, toy_solution):
    """A v3 notebook's cells exist only after the upgrade: check_submission leaves it to load_submission."""
    v3 = nbformat.v3.new_notebook(worksheets=[nbformat.v3.new_worksheet(cells=[nbformat.v3.new_code_cell("x=1")])])
    v3.metadata["titangrade"] = {"exercise_id": "ch05.toy"}
    raw = json.dumps(v3).encode()
    quick, full = both(raw, toy_catalogue)
    assert quick == full
