"""What `titangrade grade` prints when a learner's kernel sends hostile strings: no control, escape or bidi
character reaches the terminal, and a terminal whose encoding lacks a character still gets the report."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main


@pytest.fixture
def roots(toy_catalogue):
    return ["--exercises-root", str(toy_catalogue.exercises_root), "--reference-root",
            str(toy_catalogue.reference_root)]


HOSTILE_RAISE = "raise ValueError('bad byte \\x00 in input \\x1b[2J\\x1b[31mred \\u202eevil\\r over')"
UNSAFE_OUTPUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def _hostile_notebook(tmp_path: Path, toy_solution: Path) -> Path:
    import nbformat

    nb = nbformat.read(toy_solution, as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell(HOSTILE_RAISE))
    path = tmp_path / "hostile.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_grade_output_carries_no_control_escape_or_bidi_character_and_survives_an_ascii_terminal(
    roots, toy_solution, tmp_path, capsys
):
    """A learner's exception text reached the terminal raw (NUL, a screen clear, colours, CR, U+202E), and a
    character the terminal's encoding lacks (a zh title on an ASCII terminal) ended the grade with a
    UnicodeEncodeError and exit 1 instead of the report."""
    notebook = _hostile_notebook(tmp_path, toy_solution)
    done = subprocess.run(
        [str(Path(sys.executable).parent / "titangrade"), "grade", str(notebook), "--lang", "zh", "--sandbox",
         "unsafe-local", *roots],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONIOENCODING": "ascii"},
    )
    assert done.returncode == 1, done.stderr  # an ordinary error grade
    assert UNSAFE_OUTPUT.search(done.stdout) is None, ascii(done.stdout)
    assert "ch05.toy: error" in done.stdout and "\\u4e58\\u79ef" in done.stdout  # 乘积, escaped for this terminal
    assert "bad byte \\x00 in input red \\u202eevil\n over" in done.stdout  # still the learner's words
    assert main(["grade", str(notebook), "--json", "--sandbox", "unsafe-local", *roots]) == 1
    out = capsys.readouterr().out
    assert UNSAFE_OUTPUT.search(out) is None
    assert json.loads(out)["message"].startswith("cell 0 raised ValueError: bad byte \\x00 in input red")
