"""The master format: cells, solution regions and stubs, grader-only data, and errors with file, line, fix."""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import pytest

from grading.authoring.master import AuthoringError, read_master
from grading.exercise import REPO_ROOT

HEADER = "# ---\n# jupyter:\n#   kernelspec:\n#     name: python3\n#     display_name: Python 3\n# ---\n"
GOOD = (
    HEADER
    + """
# %% [markdown]
# # Title
#
# text

# %%
# %%writefile worker.py
import math
### BEGIN SOLUTION
ANSWER = 42
### STUB
# ANSWER = None  # your value
#
# # a comment in the stub
### END SOLUTION


def f(x):
    ### BEGIN SOLUTION
    return math.sqrt(x)
    ### END SOLUTION

# %% tags=["self-check"]
print(f(4))

# %% tags=["grader"]
CHECKS = {"c": {"expected": 42, "feedback": {"en": "e", "zh": "z"}}}
MISTAKES = [{"name": "off", "score": 0.5, "fails": {"c": "e"},
             "patch": [{"find": "ANSWER = 42", "replace": "ANSWER = 41"}]}]
"""
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.py"
    path.write_text(text, encoding="utf-8")
    return path


def test_regions_become_template_stub_and_solution(tmp_path):
    m = read_master(_write(tmp_path, GOOD))
    assert m.metadata == {"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    md, code, selfcheck = m.learner_cells
    assert md.kind == "markdown" and md.solution == "# Title\n\ntext"
    assert code.template == (
        "%%writefile worker.py\nimport math\nANSWER = None  # your value\n\n"
        "# a comment in the stub\n\n\ndef f(x):\n    raise NotImplementedError()"
    )
    assert code.solution == "%%writefile worker.py\nimport math\nANSWER = 42\n\n\ndef f(x):\n    return math.sqrt(x)"
    assert selfcheck.tags == ("self-check",) and selfcheck.template == selfcheck.solution == "print(f(4))"
    assert m.checks == {"c": {"expected": 42, "feedback": {"en": "e", "zh": "z"}}}
    (mistake,) = m.mistakes
    assert (mistake.name, mistake.status, mistake.score, mistake.fails) == ("off", "graded", 0.5, {"c": "e"})
    assert mistake.line == GOOD.split("\n").index('MISTAKES = [{"name": "off", "score": 0.5, "fails": {"c": "e"},') + 1


@pytest.mark.parametrize(
    ("old", "new", "at", "problem", "fix"),
    [
        (
            "    ### END SOLUTION\n\n# %%",
            "\n# %%",
            ("    ### BEGIN SOLUTION", 0),
            "never closed",
            "add `### END SOLUTION`",
        ),
        (
            "    ### BEGIN SOLUTION\n    return",
            "    return",
            ("    ### END SOLUTION", 0),
            "without a matching",
            "add `### BEGIN",
        ),
        (
            "# ANSWER = None",
            "ANSWER = None",
            ("ANSWER = None  # your value", 0),
            "stub line is not commented",
            "prefix each line",
        ),
        (
            "    return math",
            "    ### STUB\n    ### BEGIN SOLUTION\n    return math",
            ("    ### BEGIN SOLUTION", 1),
            "inside the solution region",
            "close that region",
        ),
        ('tags=["self-check"]', 'tags=["selfcheck"]', ('# %% tags=["selfcheck"]', 0), "unknown cell tag", "use one of"),
        ("# text", "text", ("text", 0), "not a `# ` comment", "prefix every line"),
        (
            'CHECKS = {"c"',
            'print("hi")\nCHECKS = {"c"',
            ('print("hi")', 0),
            "may only assign CHECKS, MISTAKES, RULES and EQUIVALENT",
            "data (literals), not code",
        ),
        (
            '"score": 0.5,',
            '"score": 0.5 + 0,',
            ('MISTAKES = [{"name": "off", "score": 0.5 + 0, "fails": {"c": "e"},', 0),
            "not a literal",
            "write the values out",
        ),
        (
            '"fails": {"c": "e"},',
            "",
            ('MISTAKES = [{"name": "off", "score": 0.5, ', 0),
            "missing ['fails']",
            "a mistake has name",
        ),
    ],
)
def test_authoring_errors_name_file_line_and_fix(tmp_path, old, new, at, problem, fix):
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    path = _write(tmp_path, text)
    with pytest.raises(AuthoringError) as err:
        read_master(path)
    lines = [i for i, ln in enumerate(text.split("\n"), start=1) if ln.rstrip() == at[0].rstrip()]
    want_line = lines[at[1]]
    assert err.value.path == path and err.value.line == want_line, str(err.value)
    assert problem in err.value.problem and fix in err.value.fix, str(err.value)
    assert str(err.value).startswith(f"{path}:{want_line}: ")


MASTERS = sorted(REPO_ROOT.glob("reference/ch*/*.py"))


@pytest.mark.parametrize("path", MASTERS, ids=[p.parent.name for p in MASTERS])
def test_jupytext_reads_every_master_as_we_do(path):
    """Masters open in Jupyter (jupytext percent format) with the same cells, kinds, text and tags."""
    ours = read_master(path)
    theirs = jupytext.read(path, fmt="py:percent")
    assert len(theirs.cells) == len(ours.cells)
    for j, c in zip(theirs.cells, ours.cells, strict=True):
        assert j.cell_type == c.kind, f"{path}:{c.line}"
        assert tuple(j.metadata.get("tags", ())) == c.tags, f"{path}:{c.line}"
        if c.kind == "markdown" or not c.has_solution:
            assert j.source == c.solution, f"{path}:{c.line}"


@pytest.mark.parametrize("path", MASTERS, ids=[p.parent.name for p in MASTERS])
def test_every_master_is_valid_python_and_runs_as_the_solution(path):
    """Stubs are comments and magics are commented out, so the file parses as Python (linters work on it)."""
    ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_every_exercise_has_one_master():
    """A master per exercise (17 when the masters came in; more may be added, none lost); scripts/notebooks
    (the old string-literal builders) is gone."""
    manifests = sorted(REPO_ROOT.glob("exercises/ch[0-9][0-9]/*/exercise.toml"))
    assert len(MASTERS) == len(manifests) >= 17
    assert not (REPO_ROOT / "scripts" / "notebooks").exists()
