"""Validating the upload (grading/steps/validate_upload.py) refuses bad uploads with a stable code and a message
that names the fix; nothing runs."""
import json

import nbformat
import pytest

from grading.errors import InvalidSubmission
from grading.pipeline import load_submission


def load(path_or_source, toy_catalogue, **kw):
    source = path_or_source.read_bytes() if hasattr(path_or_source, "read_bytes") else path_or_source
    return load_submission(source, catalogue=toy_catalogue, exercise_id=kw.pop("exercise_id", None), **kw)


@pytest.mark.parametrize("fixture,code,hint", [  # HTTP statuses are the service's (tests/service/test_errors.py)
    ("invalid_json.ipynb", "invalid_json", "not valid JSON"),
    ("not_a_notebook.ipynb", "not_a_notebook", "not a Jupyter notebook"),
    ("nbformat_invalid.ipynb", "nbformat_invalid", "re-save it from Jupyter"),
    ("no_exercise_id.ipynb", "missing_exercise", "--exercise"),
    ("wrong_exercise.ipynb", "unknown_exercise", "exercises list"),
])
def test_failure_fixtures_are_refused(toy_catalogue, failure_dir, fixture, code, hint):
    with pytest.raises(InvalidSubmission) as err:
        load(failure_dir / fixture, toy_catalogue)
    assert err.value.code == code and hint in err.value.message
    assert not hasattr(err.value, "status_code")  # the engine knows no HTTP


def test_exercise_mismatch_between_request_and_metadata(toy_catalogue, failure_dir):
    with pytest.raises(InvalidSubmission) as err:
        load(failure_dir / "wrong_exercise.ipynb", toy_catalogue, exercise_id="ch05.toy")
    assert err.value.code == "exercise_mismatch" and "ch05.other_toy" in err.value.message


def test_oversized_upload_is_refused_before_parsing(toy_catalogue, toy_solution):
    nb = nbformat.read(toy_solution, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("x" * 5_100_000))
    with pytest.raises(InvalidSubmission) as err:
        load(nbformat.writes(nb).encode(), toy_catalogue)
    assert err.value.code == "too_large" and "clear its outputs" in err.value.message
    with pytest.raises(InvalidSubmission):  # the same limit applies to an already-parsed dict
        load(json.loads(nbformat.writes(nb)), toy_catalogue)


def test_request_id_names_a_notebook_without_metadata(toy_catalogue, failure_dir):
    nb, exercise = load(failure_dir / "no_exercise_id.ipynb", toy_catalogue, exercise_id="ch05.toy")
    assert exercise.id == "ch05.toy" and len(nb.cells) == 10


@pytest.mark.parametrize("as_type", [bytes, str, dict])
def test_accepts_bytes_str_and_dict(toy_catalogue, toy_solution, as_type):
    raw = toy_solution.read_bytes()
    source = {bytes: raw, str: raw.decode(), dict: json.loads(raw)}[as_type]
    nb, exercise = load(source, toy_catalogue)
    assert exercise.id == "ch05.toy" and nb.nbformat == 4


def test_older_nbformat_is_upgraded(toy_catalogue):
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"titangrade": {"exercise_id": "ch05.toy"}},
          "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1", "outputs": [], "language": "python"}]}]}
    nb, _ = load(v3, toy_catalogue)
    assert nb.nbformat == 4 and nb.cells[0].source == "x = 1"


def _toy_notebook(n_cells: int = 1) -> dict:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"x{i} = {i}") for i in range(n_cells)])
    nb.metadata["titangrade"] = {"exercise_id": "ch05.toy"}
    return json.loads(nbformat.writes(nb))


@pytest.mark.parametrize("depth,refused", [(60, False), (70, True), (5000, True)])
def test_nesting_depth_is_limited_for_bytes_and_parsed_dicts(toy_catalogue, depth, refused):
    nb = _toy_notebook()
    nb["metadata"]["deep"] = "@@"
    text = json.dumps(nb).replace('"@@"', "[" * depth + "]" * depth)
    for source in (text, text.encode()):
        if refused:
            with pytest.raises(InvalidSubmission) as err:
                load(source, toy_catalogue)
            assert err.value.code == "invalid_json" and "64 levels" in err.value.message
        else:
            assert load(source, toy_catalogue)[1].id == "ch05.toy"
    if depth < 900:  # a dict from an already-parsed request body (Python's json stops near 1,000 levels)
        parsed = json.loads(text)
        if refused:
            with pytest.raises(InvalidSubmission):
                load(parsed, toy_catalogue)
        else:
            load(parsed, toy_catalogue)


def test_unparseably_deep_brackets_are_invalid_json_not_a_crash(toy_catalogue):
    with pytest.raises(InvalidSubmission) as err:
        load(b"[" * 200_000, toy_catalogue)
    assert err.value.code == "invalid_json"  # its HTTP status is the service's (service/errors.py)


def test_code_cells_over_the_manifest_cap_are_refused_with_the_cap_named(toy_catalogue):
    assert toy_catalogue.get("ch05.toy").manifest.limits.max_code_cells == 300
    load(json.dumps(_toy_notebook(300)), toy_catalogue)
    with pytest.raises(InvalidSubmission) as err:
        load(json.dumps(_toy_notebook(301)), toy_catalogue)
    assert err.value.code == "too_many_cells"  # its HTTP status is the service's (service/errors.py)
    assert "301 code cells" in err.value.message and "limit of 300" in err.value.message


def _nbformat_reference(data: dict) -> nbformat.NotebookNode:
    """What to_notebook replaced: nbformat.reads of the JSON text (which validates and only logs), then
    nbformat.validate. to_notebook must accept and refuse exactly what this does."""
    nb = nbformat.reads(json.dumps(data), as_version=4)
    nbformat.validate(nb)
    return nb


def _mutations() -> dict[str, dict]:
    base = _toy_notebook(2)
    base["cells"].insert(1, {"cell_type": "markdown", "id": "md", "metadata": {}, "source": ["# a", "b"]})
    cases: dict[str, dict] = {"valid": base}

    def variant(name, change):
        nb = json.loads(json.dumps(base))
        change(nb)
        cases[name] = nb

    variant("no cells", lambda nb: nb.pop("cells"))
    variant("cells not a list", lambda nb: nb.update(cells={}))
    variant("unknown cell type", lambda nb: nb["cells"][0].update(cell_type="lemon"))
    variant("code cell without outputs", lambda nb: nb["cells"][0].pop("outputs"))
    variant("code cell without source", lambda nb: nb["cells"][0].pop("source"))
    variant("source list with a number", lambda nb: nb["cells"][0].update(source=["a", 1]))
    variant("execution_count a string", lambda nb: nb["cells"][0].update(execution_count="1"))
    variant("bad output type", lambda nb: nb["cells"][0].update(outputs=[{"output_type": "lemon"}]))
    variant("stream output without name", lambda nb: nb["cells"][0].update(
        outputs=[{"output_type": "stream", "text": "x"}]))
    variant("extra top-level key", lambda nb: nb.update(extra=1))
    variant("extra cell key", lambda nb: nb["cells"][0].update(extra=1))
    variant("metadata a list", lambda nb: nb.update(metadata=[]))
    variant("cell metadata trusted not bool", lambda nb: nb["cells"][0]["metadata"].update(trusted="yes"))
    variant("missing ids at 4.5", lambda nb: [c.pop("id", None) for c in nb["cells"]])
    variant("duplicate ids", lambda nb: [c.update(id="same") for c in nb["cells"]])
    variant("bad id characters", lambda nb: nb["cells"][0].update(id="a b"))
    variant("ids at 4.4", lambda nb: nb.update(nbformat_minor=4))
    variant("4.4 without ids", lambda nb: (nb.update(nbformat_minor=4), [c.pop("id") for c in nb["cells"]]))
    variant("no nbformat_minor", lambda nb: nb.pop("nbformat_minor"))
    for minor in (0, 6, 7, 99, -1, "5", 5.0, True, None):
        variant(f"minor {minor!r}", lambda nb, m=minor: nb.update(nbformat_minor=m))
    for major in (2, 5, "4", None):
        variant(f"major {major!r}", lambda nb, m=major: nb.update(nbformat=m))
    cases["nbformat 3"] = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "code", "input": "x = 1", "outputs": [], "language": "python"},
        {"cell_type": "heading", "level": 2, "source": "T"}]}]}
    cases["nbformat 3 without worksheets"] = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}}
    return cases


@pytest.mark.filterwarnings("ignore")  # nbformat warns about missing and duplicate cell ids
@pytest.mark.parametrize("name", sorted(_mutations()))
def test_to_notebook_accepts_and_refuses_exactly_what_nbformat_does(name):
    from grading.steps.validate_upload import to_notebook

    data = _mutations()[name]
    try:
        expected = _nbformat_reference(json.loads(json.dumps(data)))
    except Exception:
        expected = None
    if expected is None:
        with pytest.raises(InvalidSubmission) as err:
            to_notebook(data)
        assert err.value.code == "nbformat_invalid"
        return
    got = to_notebook(data)
    sent_ids = [c.get("id") for c in data["cells"]] if "cells" in data else [None] * len(got.cells)  # v3: none
    for nb in (got, expected):  # ids nbformat made up for cells with none or a repeated one are random
        for cell, sent in zip(nb.cells, sent_ids, strict=False):
            if sent is None or sent_ids.count(sent) > 1:
                cell.pop("id", None)
    assert got == expected


@pytest.mark.filterwarnings("ignore")
def test_minors_from_the_future_share_one_compiled_validator():
    """Each new nbformat_minor made nbformat compile (~0.1 s) and keep a validator: a learner could send
    a stream of made-up minors. All minors newer than nbformat's get the same relaxed schema, so one."""
    from nbformat import validator

    from grading.steps.validate_upload import to_notebook

    before = set(validator.validators)
    for minor in range(7, 13):
        nb = _toy_notebook()
        nb["nbformat_minor"] = minor
        assert to_notebook(nb).nbformat_minor == minor
    assert len(set(validator.validators) - before) <= 1
