"""The outputs a real kernel printed for each learner cell, end to end through grade_notebook: bounded, clean,
rich outputs only named, and only the learner's own cells' (nothing printed while the grader's cells run,
nothing of the grader's names or nonce)."""
from __future__ import annotations

import json
import re

import nbformat
import orjson
import pytest
from kernel_strings_support import strings_in

from grading.pipeline import grade_notebook
from grading.steps import graded_outputs

pytestmark = pytest.mark.slow

HOSTILE_CELLS = [
    "print('x' * 10_000_000)",
    # a lone surrogate cannot be printed (ipykernel cannot encode it), only forged: content sent as raw JSON
    "print('nul \\x00 bell \\x07 end', flush=True)\nK = get_ipython().kernel\n"
    "K.session.send(K.iopub_socket, 'stream', b'{\"name\": \"stdout\", \"text\": \"lone \\\\ud800 end\"}',"
    " parent=K.get_parent());",
    "import sys\nsys.stderr.write('\\x1b[31mred\\x1b[0m\\n')\n1/0",
    "from IPython.display import HTML, Javascript, display\n"
    "display(HTML('<script>window.__xss=1</script>'))\ndisplay(Javascript('alert(1)'))\n'<b>plain</b>'",
    "print(sorted(k for k in globals() if k.startswith('_')),\n"
    "      [v for k, v in globals().items() if k.startswith('_tg')])",
    # last: prints that come only once the grader's cells run, from a hook and from a thread it wakes
    "import threading, time\n"
    "_graders = threading.Event()\n"
    "def _hook(*a):\n    _graders.set(); print('LATE-FROM-HOOK')\n"
    "get_ipython().events.register('pre_run_cell', _hook)\n"
    "def _late():\n    _graders.wait()\n    for _ in range(40):\n"
    "        print('LATE-FROM-THREAD', flush=True); time.sleep(0.05)\n"
    "threading.Thread(target=_late, daemon=True).start()\n"
    "print('own output')",
]


@pytest.fixture(scope="module")
def graded(toy_catalogue, toy_solution, engine_sandbox):
    nb = nbformat.read(toy_solution, as_version=4)
    first = len([c for c in nb.cells if c.cell_type == "code"])
    nb.cells += [nbformat.v4.new_code_cell(source) for source in HOSTILE_CELLS]
    result = grade_notebook(nbformat.writes(nb), catalogue=toy_catalogue, sandbox=engine_sandbox)
    return result, first


def _texts(cell) -> str:
    return "".join(e["text"] for e in cell.outputs)


def test_every_learner_cell_has_its_outputs_and_the_checks_are_unchanged(graded, toy_catalogue):
    result, first = graded
    assert result.score == result.max_score, result.message  # the solution's answers still earn everything
    assert len(result.cells) == first + len(HOSTILE_CELLS)
    assert all(c.outputs is not None for c in result.cells)
    assert _texts(result.cells[-1]) == "own output\n"


def test_ten_megabytes_of_print_keep_a_bounded_marked_part(graded):
    result, first = graded
    cell = result.cells[first]
    assert cell.outputs_cut and _texts(cell).startswith("x" * 1000)
    assert len(json.dumps(cell.outputs).encode()) <= graded_outputs.CELL_BYTES
    assert "output limit" in result.limits_hit
    assert "truncated by the grader" not in _texts(cell)  # the run's marker became the flag
    stored = orjson.dumps(result.to_dict())
    assert len(stored) < graded_outputs.RUN_BYTES + 20_000  # the whole result stays small


def test_nul_surrogates_and_escapes_arrive_clean(graded):
    result, first = graded
    assert _texts(result.cells[first + 1]) == "nul \\x00 bell \\x07 end\nlone \ufffd end"
    error = result.cells[first + 2]
    assert [e["kind"] for e in error.outputs] == ["stderr", "error"]
    assert error.outputs[0]["text"] == "red\n" and "ZeroDivisionError" in error.outputs[1]["text"]
    for text in strings_in(result.to_dict()):
        assert "\x1b" not in text and "\x00" not in text and not re.search("[\ud800-\udfff]", text), ascii(text)


def test_html_and_javascript_are_named_never_kept(graded):
    result, first = graded
    cell = result.cells[first + 3]
    assert [(e["kind"], e.get("mimes")) for e in cell.outputs] == [
        ("display", ["text/html"]), ("display", ["application/javascript"]), ("result", None)]
    assert cell.outputs[2]["text"] == "'<b>plain</b>'"  # a text/plain repr: text, escaped where it is shown
    dumped = json.dumps(result.to_dict())
    assert "<script" not in dumped and "alert(1)" not in dumped


def test_nothing_printed_during_the_graders_cells_and_none_of_its_names_reach_a_cell(graded):
    result, first = graded
    dumped = json.dumps(result.to_dict(), ensure_ascii=False)
    assert "LATE-FROM" not in dumped  # the hooks and the thread printed only while the grader's cells ran
    snoop = _texts(result.cells[first + 4])
    assert snoop.startswith("[") and not re.search(r"_tg_[0-9a-f]{4}", snoop), snoop
    assert not re.search(r"_tg_[0-9a-f]{4}|[0-9a-f]{16}", dumped)


def test_the_same_late_prints_are_kept_for_a_learner_cell_they_print_during(toy_catalogue, toy_solution,
                                                                            engine_sandbox):
    """The control for the test above: the hook and the thread do print, and a learner cell running meanwhile
    keeps what it was sent; only the grader's cells' time is never attributed to a learner cell."""
    nb = nbformat.read(toy_solution, as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(HOSTILE_CELLS[-1]), nbformat.v4.new_code_cell("time.sleep(1)")]
    result = grade_notebook(nbformat.writes(nb), catalogue=toy_catalogue, sandbox=engine_sandbox)
    during = _texts(result.cells[-1])
    assert "LATE-FROM-HOOK" in during and "LATE-FROM-THREAD" in during, during


def test_a_cell_that_killed_its_kernel_keeps_what_it_printed_before(toy_catalogue, toy_solution, engine_sandbox):
    nb = nbformat.read(toy_solution, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(
        "import os, sys, time\nprint('last words', flush=True)\ntime.sleep(0.5)\nos._exit(1)"))
    result = grade_notebook(nbformat.writes(nb), catalogue=toy_catalogue, sandbox=engine_sandbox)
    assert result.cells[0].status == "killed" and _texts(result.cells[0]) == "last words\n"
    assert result.score == result.max_score  # the other cells re-ran in a fresh kernel
