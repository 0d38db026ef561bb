"""Property: whatever a learner's function does with the inputs it is called on (records them, replays
them from later public calls as values, keys, reprs or exception messages, captures the grader's cells
with an input transformer, or keeps them on disk for the next run), no hidden input string and nothing
of the grader's cells appears in any field of the result. Hypothesis writes the hostile functions;
each example is graded end to end with a real kernel.
"""
from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grading.exercise import Catalogue
from grading.pipeline import grade_notebook
from grading.result import Status

pytestmark = pytest.mark.slow

MANIFEST = """
id = "ch05.leak"
chapter = 5
notebook = "leak.ipynb"
[title]
en = "Leak probe"
[limits]
cell_timeout_s = 10
run_timeout_s = 60
[[answers]]
name = "f"
kind = "function"
[[checks]]
name = "public_first"
answer = "f"
kind = "function"
points = 1
[[checks]]
name = "hidden"
answer = "f"
kind = "function"
points = 1
[[checks]]
name = "public_after"
answer = "f"
kind = "function"
points = 1
"""
PUBLIC = ["pub-alpha", "pub-beta"]

# Building blocks of a hostile f(x): each takes SEEN (every input and captured cell so far, joined).
BEHAVIOURS = {
    "return": "return SEEN",
    "return_key": "return {SEEN: 1, 'k': [SEEN]}",
    "return_fragments": "return [SEEN[i:i + 7] for i in range(0, len(SEEN), 5)]",
    "raise": "raise ValueError(SEEN)",
    "opaque": "return type('R', (), {'__repr__': lambda self: SEEN})()",
    "print": "print(SEEN); return len(SEEN)",
    "set": "return set(SEEN.split('|'))",
}
PRELUDE = """
import builtins, os
builtins._seen = []
_DISK = {disk!r}
def _capture(lines):
    builtins._seen.append(''.join(lines))
    return lines
if {transformer!r}:
    get_ipython().input_transformers_cleanup.append(_capture)
if os.path.exists(_DISK):  # what an earlier run left behind
    builtins._seen.append(open(_DISK).read())
"""
FUNCTION = """
def f(x, *rest, **kw):
    builtins._seen.append(repr((x, rest, kw)))
    SEEN = '|'.join(builtins._seen)
    with open(_DISK, 'w') as fh:
        fh.write(SEEN)
    step = len(builtins._seen) % {n}
{branches}
"""


def _catalogue(root: Path, secrets: list[str]) -> Catalogue:
    ex = root / "exercises" / "ch05" / "leak"
    ex.mkdir(parents=True, exist_ok=True)
    (ex / "exercise.toml").write_text(MANIFEST)
    ref = root / "reference" / "ch05.leak"
    ref.mkdir(parents=True, exist_ok=True)
    calls = {
        "public_first": [{"args": [p], "expect": p, "public": True, "label": f"case {p}"} for p in PUBLIC],
        "hidden": [{"args": [s], "kwargs": {"extra": s + "-kw"}, "expect": s[::-1]} for s in secrets],
        "public_after": [{"args": [p + "-again"], "expect": p, "public": True} for p in PUBLIC],
    }
    (ref / "leak_answer.txt").write_text(json.dumps({"checks": {k: {"compare": "exact", "calls": v}
                                                                for k, v in calls.items()}}))
    return Catalogue(root / "exercises", root / "reference")


def _notebook(behaviours: list[str], transformer: bool, disk: Path, leak_in_cell: bool) -> bytes:
    branches = "\n".join(f"    if step == {i}:\n" + textwrap.indent(BEHAVIOURS[b], " " * 8)
                         for i, b in enumerate(behaviours))
    branches += "\n    " + BEHAVIOURS[behaviours[0]]
    cells = [PRELUDE.format(disk=str(disk), transformer=transformer),
             FUNCTION.format(n=len(behaviours), branches=branches)]
    if leak_in_cell:  # a learner cell that replays what an earlier run stored
        cells.append("raise RuntimeError('|'.join(builtins._seen))")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["titangrade"] = {"exercise_id": "ch05.leak"}
    return nbformat.writes(nb).encode()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(secrets=st.lists(st.from_regex(r"Zq[a-z0-9]{6,12}", fullmatch=True), min_size=1, max_size=3, unique=True),
       behaviours=st.lists(st.sampled_from(sorted(BEHAVIOURS)), min_size=1, max_size=4),
       transformer=st.booleans(), leak_in_cell=st.booleans())
def test_no_hidden_input_reaches_any_field_of_the_result(tmp_path_factory, engine_sandbox, secrets, behaviours,
                                                          transformer, leak_in_cell):
    root = tmp_path_factory.mktemp("leak")
    catalogue = _catalogue(root, secrets)
    disk = tmp_path_factory.getbasetemp() / "leak-disk.txt"  # shared by every example: runs replay earlier runs
    result = grade_notebook(_notebook(behaviours, transformer, disk, leak_in_cell), catalogue=catalogue,
                            sandbox=engine_sandbox)
    assert result.status is not Status.NOT_GRADABLE, result.message
    for dumped in (json.dumps(result.to_dict(), ensure_ascii=False), json.dumps(result.to_gradescope())):
        for secret in secrets:
            assert secret not in dumped and secret[::-1] not in dumped, (secret, dumped[:2000])
        assert not re.search(r"_tg_[0-9a-f]{4}", dumped) and not re.search(r"[0-9a-f]{16}", dumped), dumped[:2000]
