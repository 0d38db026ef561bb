"""Step 1, validate the upload: refuse a notebook that cannot be graded, before any kernel starts (size, JSON,
nesting, nbformat, exercise id, code-cell count). Not `exercises validate` (grading/authoring/validate.py),
which grades an author's exercise before it is published."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

import nbformat
from nbformat import reader as nbreader
from nbformat import validator as nbvalidator

from grading.errors import InvalidSubmission
from grading.exercise import Catalogue, Exercise

METADATA_KEY = "titangrade"
MAX_JSON_DEPTH = 64  # nesting of arrays/objects in an uploaded notebook; real notebooks stay under ~12
FUTURE_MINOR = nbformat.v4.nbformat_minor + 1  # every later 4.x minor gets the same (relaxed) schema
_compiled: set[int] = set()  # v4 minors whose compiled validator nbformat has cached
_compile_lock = threading.Lock()


def _too_deep() -> InvalidSubmission:
    return InvalidSubmission(
        "invalid_json",
        f"the notebook nests JSON arrays/objects deeper than {MAX_JSON_DEPTH} levels; "
        "re-save it from Jupyter or start again from the exercise template",
    )


def json_depth_exceeds(data: Any, limit: int) -> bool:
    """True if `data` nests lists/dicts deeper than `limit` (iterative: deep data cannot recurse us out)."""
    stack = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def parse_notebook(source: bytes | str | dict, *, max_bytes: int) -> nbformat.NotebookNode:
    """Bytes/str (JSON text) or an already-parsed dict -> a validated nbformat v4 notebook."""
    return to_notebook(load_json(source, max_bytes=max_bytes))


def load_json(source: bytes | str | dict, *, max_bytes: int) -> dict[str, Any]:
    """Size, JSON, nesting depth and the notebook's outline (nbformat, cells), before nbformat parses it:
    cheap checks first, so a flood of cells or brackets is refused before the expensive validation."""
    if isinstance(source, dict):
        if json_depth_exceeds(source, MAX_JSON_DEPTH):
            raise _too_deep()
        text = json.dumps(source)
        size = len(text.encode("utf-8"))
        data: Any = None  # parsed back below: a plain-JSON copy (tuples become lists), as an upload would be
    else:
        raw = source.encode("utf-8") if isinstance(source, str) else bytes(source)
        size = len(raw)
    if size > max_bytes:
        raise InvalidSubmission(
            "too_large",
            f"the notebook is {size / 1e6:.1f} MB, over the {max_bytes / 1e6:.1f} MB limit; "
            "clear its outputs (Kernel > Restart & Clear Output) and submit again",
            status_code=413,
        )
    if isinstance(source, dict):
        data = json.loads(text)
    else:
        try:
            data = json.loads(raw.decode("utf-8"))
        except RecursionError:  # json's C parser refuses very deep nesting with RecursionError
            raise _too_deep() from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidSubmission(
                "invalid_json", f"the upload is not valid JSON ({exc}); submit the .ipynb file itself"
            ) from None
        if json_depth_exceeds(data, MAX_JSON_DEPTH):
            raise _too_deep()
    if not has_notebook_outline(data):
        raise InvalidSubmission(
            "not_a_notebook",
            "the upload is JSON but not a Jupyter notebook (no nbformat/cells); "
            "submit the .ipynb file downloaded from Jupyter",
        )
    return data


def has_notebook_outline(data: Any) -> bool:
    """A JSON object with `nbformat` and, if it has `cells`, a list of them."""
    return isinstance(data, dict) and "nbformat" in data and isinstance(data.get("cells", []), list)


def to_notebook(data: dict[str, Any]) -> nbformat.NotebookNode:
    """nbformat's own parse and schema validation (older versions upgraded to 4), validating once.

    This is `nbformat.reads(json.dumps(data), as_version=4)` followed by `nbformat.validate`, without the
    second JSON round trip and the schema check `reads` runs (and only logs) before `validate` repeats it.
    A minor version newer than nbformat knows is checked with the one validator nbformat builds for all
    of them (the latest schema, relaxed), so a flood of made-up minors cannot compile (~0.1 s each) and
    cache a validator apiece."""
    try:
        major, minor = nbreader.get_version(data)
        if major not in nbformat.versions:
            raise nbformat.NBFormatError(f"Unsupported nbformat version {major}")
        try:
            nb = nbformat.versions[major].to_notebook_json(data, minor=minor)  # copies `data`
        except AttributeError as e:  # as nbformat.reader.reads words it
            raise nbformat.ValidationError(f"The notebook is invalid and is missing an expected key: {e}") from None
        nb = nbformat.convert(nb, 4)
        major, minor = nbreader.get_version(nb)
        if isinstance(minor, int) and not isinstance(minor, bool) and major == 4 and minor >= 0:
            minor = min(minor, FUTURE_MINOR)
            _compile_once(minor)
            nbformat.validate(nb, version=major, version_minor=minor)
        else:
            nbformat.validate(nb)  # nbformat refuses what it cannot version
    except Exception as exc:  # nbformat raises ValidationError, KeyError, AttributeError... on bad input
        raise InvalidSubmission(
            "nbformat_invalid",
            f"the notebook does not follow nbformat 4: {_schema_problem(exc)}; "
            "re-save it from Jupyter or start again from the exercise template",
        ) from None
    return nb


def _schema_problem(exc: Exception) -> str:
    """What is wrong, and where, without echoing the value: a schema error names its place in the notebook
    (`cells/3`) and the rule it broke. The value itself is left out: it is the learner's own content, and
    nbformat may have given it a fresh random cell id, so quoting it would make two checks of the same
    upload disagree."""
    path, instance, text = (
        getattr(exc, "absolute_path", None),
        getattr(exc, "instance", None),
        getattr(exc, "message", None),
    )
    if path is not None and isinstance(text, str):
        where = "/".join(str(part) for part in path)
        text = (text.replace(repr(instance), "the value") if instance is not None else text).splitlines()[0][:200]
        return f"{where}: {text}" if where else text
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__


def valid_as_uploaded(data: dict[str, Any]) -> bool:
    """True when nbformat's compiled schema accepts the parsed upload itself, as it is.

    Then `to_notebook` accepts it too: it only joins line lists into strings (the schema allows both),
    drops optional transient keys and repairs duplicate cell ids, and validates the result against the same
    schema. False says nothing: `to_notebook` decides (and words the error). Costs a third of to_notebook,
    which copies the whole notebook into NotebookNodes first."""
    major, minor = nbreader.get_version(data)
    if major != 4 or not isinstance(minor, int) or isinstance(minor, bool) or minor < 0:
        return False
    minor = min(minor, FUTURE_MINOR)
    _compile_once(minor)
    validator = nbvalidator.get_validator(4, minor)
    if validator is None:
        return False
    try:
        return not validator.iter_errors(data)  # nbformat's fastjsonschema validator: a list, at most one
    except Exception:  # a validator that chokes on odd input: let to_notebook decide
        return False


def _compile_once(minor: int) -> None:
    """Build nbformat's cached validator for 4.`minor` in one thread: the first requests after a start
    would otherwise each compile it (~0.1 s of CPU apiece) at the same time."""
    if minor not in _compiled:
        with _compile_lock:
            if minor not in _compiled:
                nbvalidator.get_validator(4, minor)
                _compiled.add(minor)


def notebook_exercise_id(nb: nbformat.NotebookNode | dict[str, Any]) -> str | None:
    metadata = nb.get("metadata")
    meta = metadata.get(METADATA_KEY) if isinstance(metadata, dict) else None
    if isinstance(meta, dict):
        value = meta.get("exercise_id")
        return value if isinstance(value, str) and value else None
    return None


def identify_exercise(
    nb: nbformat.NotebookNode | dict[str, Any], *, exercise_id: str | None, catalogue: Catalogue
) -> Exercise:
    """The exercise named by the request and/or `metadata.titangrade.exercise_id`; they must agree."""
    in_notebook = notebook_exercise_id(nb)
    if exercise_id and in_notebook and exercise_id != in_notebook:
        raise InvalidSubmission(
            "exercise_mismatch",
            f"this notebook belongs to exercise {in_notebook!r}, but it was submitted for {exercise_id!r}; "
            "submit it to the exercise it came from, or download the right template",
        )
    chosen = exercise_id or in_notebook
    if not chosen:
        raise InvalidSubmission(
            "missing_exercise",
            "cannot tell which exercise this notebook answers: name it in the request (--exercise ID) "
            "or keep metadata.titangrade.exercise_id from the template",
        )
    return catalogue.get(chosen)  # raises UnknownExercise (404)


def check_cell_count(nb: nbformat.NotebookNode | dict[str, Any], exercise: Exercise) -> None:
    """Refuse a notebook with more code cells than the exercise's `limits.max_code_cells`."""
    cap = exercise.manifest.limits.max_code_cells
    cells = nb.get("cells")
    cells = cells if isinstance(cells, list) else []
    count = sum(1 for c in cells if isinstance(c, dict) and c.get("cell_type") == "code")
    if count > cap:
        raise InvalidSubmission(
            "too_many_cells",
            f"the notebook has {count} code cells, over the limit of {cap} code cells for {exercise.id}; "
            "merge cells or start again from the exercise template",
        )
