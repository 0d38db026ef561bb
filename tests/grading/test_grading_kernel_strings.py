"""Hostile strings from a real kernel through the whole engine: what the learner's code returned, raised or
printed arrives in the result readable and clean (the result boundary, grading/text.py), and a lone
surrogate in a call's result is a value like any other, not a lost reply."""
from __future__ import annotations

import re

import nbformat
import pytest
from kernel_strings_support import strings_in

from grading.pipeline import grade_notebook

FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
HOSTILE_FUNCTION = (
    "def partial_reward(greens, yellows):\n"
    "    class Odd:\n"
    "        def __repr__(self):\n"
    "            return 'odd \\ud800 \\x00 \\x1b[2J \\u202e end'\n"
    "    if greens == 2:\n"
    "        return Odd()\n"
    "    raise ValueError('bad \\udcff byte \\x00')\n"
)



@pytest.mark.slow
def test_hostile_strings_from_a_real_kernel_arrive_clean_and_readable(toy_catalogue, toy_solution, engine_sandbox):
    """Before: a call whose result held a lone surrogate never came back (ipykernel could not encode it), so
    the learner read `raised a timeout (exceeded 3.5 s)` after waiting the call's clock out; NUL, ESC and
    U+202E from a cell's exception reached the result raw; an exception whose message held a lone surrogate
    was reported as ipykernel's own UnicodeEncodeError."""
    nb = nbformat.read(toy_solution, as_version=4)
    fn = next(c for c in nb.cells if "def partial_reward" in c.source)
    fn.source = HOSTILE_FUNCTION
    nb.cells.insert(1, nbformat.v4.new_code_cell("raise ValueError('bad byte \\x00 in input \\x1b[31mred\\u202e')"))
    nb.cells.insert(2, nbformat.v4.new_code_cell("raise ValueError('lone \\ud800 surrogate')"))
    result = grade_notebook(nbformat.writes(nb), catalogue=toy_catalogue, sandbox=engine_sandbox).to_dict()
    for text in strings_in(result):
        assert FORBIDDEN.search(text) is None, ascii(text)
    assert result["status"] == "error"
    assert result["message"] == ("cell 0 raised ValueError: bad byte \\x00 in input red\\u202e; "
                                 "cell 1 raised ValueError: lone \ufffd surrogate")
    feedback = next(c["feedback"] for c in result["checks"] if c["name"] == "reward_function")
    assert "partial_reward(2, 1) returned odd \ufffd \\x00  \\u202e end" in feedback
    assert "raised ValueError: bad \ufffd byte \\x00" in feedback and "timeout" not in feedback
