"""validate tells a busy host from a broken exercise: a notebook the grader could not grade (no free sandbox
user, a grader fault) gets one "retry" line and exit 3, never "fix:" lines telling the author to edit it.

The busy host is real: a bwrap sandbox whose only sandbox user is held, as another titangrade process's live
sandbox holds it (the host-wide flock of grading/sandbox/users.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

import pytest

from grading.authoring.build import render
from grading.authoring.scaffold import scaffold
from grading.authoring.validate import validate
from grading.exercise import Catalogue
from grading.result import CheckResult, GradeResult, Status
from grading.sandbox import probe
from service.cli import main

USER = "tgsbx29"  # near the range's tail and named by no other test, so no other sandbox wants it
LOCK_DIR = "/run/titangrade/users"  # BwrapConfig's runtime_root + /users: the host-wide locks
needs_bwrap = pytest.mark.skipif(not probe().usable, reason="needs the bwrap sandbox (root, bubblewrap, tgsbxN users)")


def _roots(tmp: Path) -> list[str]:
    return ["--exercises-root", str(tmp / "exercises"), "--reference-root", str(tmp / "reference"),
            "--fixtures-root", str(tmp / "fixtures")]  # fmt: skip


@contextlib.contextmanager
def held_by_another_process(user: str):
    """Hold the user's host-wide flock, as a live sandbox of another titangrade process would."""
    os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
    fd = os.open(os.path.join(LOCK_DIR, f"{user}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits out a sandbox that holds it now
        yield
    finally:
        os.close(fd)


@pytest.fixture
def one_user_sandbox(monkeypatch):
    """`--sandbox bwrap` gets a real bwrap sandbox with the one user USER."""
    import grading.sandbox
    from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

    sandbox = BwrapSandbox(BwrapConfig(users=(USER,), cgroups="off"))
    monkeypatch.setattr(grading.sandbox, "make_sandbox", lambda mode, **_: sandbox)
    return sandbox


def _summary(out: str) -> list[str]:
    return out.rsplit("\nexercise ", 1)[1].split("\n")[2].split()


@needs_bwrap
def test_a_busy_host_says_retry_once_and_exits_3_without_fix_lines(tmp_path, capsys, one_user_sandbox):
    roots = _roots(tmp_path)
    assert main(["exercises", "new", "ch09.squares", *roots]) == 0
    capsys.readouterr()
    with held_by_another_process(USER):
        code = main(["exercises", "validate", "ch09.squares", "--sandbox", "bwrap", "--retries", "1", *roots])
    captured = capsys.readouterr()
    assert code == 3, captured.err
    notebooks = ("solution.ipynb", "squares.ipynb", "mistake_no_square.ipynb", "mistake_drops_negatives.ipynb")
    for notebook in notebooks:  # each graded, then graded again once (--retries 1): the host stayed busy
        assert f"{notebook}: not_gradable" in captured.out and f"{notebook} again: not_gradable" in captured.out
    assert "fix:" not in captured.err and "problem(s)" not in captured.err, captured.err
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("not graded, retry: 4 notebook(s)"), captured.err
    assert "no free sandbox user" in lines[0] and "--retries" in lines[0]
    assert "`titangrade exercises validate ch09.squares` again" in lines[0]
    assert _summary(captured.out) == ["ch09.squares", "-", "-", "0/2", "NOT", "GRADED", "(4)"]


@pytest.mark.slow
@needs_bwrap
def test_the_retry_the_busy_host_asked_for_grades_the_exercise(tmp_path, capsys, one_user_sandbox):
    roots = _roots(tmp_path)
    assert main(["exercises", "new", "ch09.squares", *roots]) == 0
    with held_by_another_process(USER):
        assert main(["exercises", "validate", "ch09.squares", "--sandbox", "bwrap", "--retries", "0", *roots]) == 3
    capsys.readouterr()
    assert main(["exercises", "validate", "ch09.squares", "--sandbox", "bwrap", *roots]) == 0  # the user is free
    captured = capsys.readouterr()
    assert _summary(captured.out) == ["ch09.squares", "10/10", "0", "2/2", "ok"] and "retry" not in captured.err


def _graded(ex_id: str, score: float, *checks: tuple[str, float, float, str]) -> GradeResult:
    return GradeResult(
        exercise_id=ex_id,
        status=Status.GRADED,
        score=score,
        max_score=10.0,
        checks=[CheckResult(name=n, score=s, max_score=m, passed=s == m, feedback=f) for n, s, m, f in checks],
    )


def test_a_grader_fault_is_listed_apart_from_the_content_problems_of_the_same_exercise(tmp_path):
    """One mistake not gradable, the other graded against its declaration: one problem (with its fix) for
    the second, and the first only in `not_graded`."""
    scaffold("ch09.squares", exercises_root=tmp_path / "exercises", reference_root=tmp_path / "reference")
    catalogue = Catalogue(tmp_path / "exercises", tmp_path / "reference")
    out = render(catalogue.get("ch09.squares"), fixtures_root=tmp_path / "fixtures")
    out.write()
    hint = "1 of 2 hidden cases failed; hint: Square each number, negative ones too, before adding."
    by_label = {
        "solution.ipynb": _graded("ch09.squares", 10.0, ("public_cases", 4, 4, "correct"), ("hidden_cases", 6, 6, "")),
        "squares.ipynb": _graded("ch09.squares", 0.0, ("public_cases", 0, 4, "x"), ("hidden_cases", 0, 6, "y")),
        "mistake_drops_negatives.ipynb": _graded(  # declared 7: scores 4, a content problem
            "ch09.squares", 4.0, ("public_cases", 1, 4, "x"), ("hidden_cases", 3, 6, hint)
        ),
    }
    order = []

    def grade_fn(data, *, exercise_id, catalogue, sandbox):
        label = order[-1]
        if label == "mistake_no_square.ipynb":
            return GradeResult(exercise_id=exercise_id, status=Status.NOT_GRADABLE, score=0.0, max_score=10.0,
                               message="no free sandbox user: all 1 are in use")  # fmt: skip
        return by_label[label]

    def say(text: str) -> None:
        if text.startswith("    grading "):
            order.append(text.split()[1])

    row = validate(out, catalogue=catalogue, sandbox=None, say=say, retries=1, grade_fn=grade_fn)  # type: ignore[arg-type]
    assert row.not_graded == ["mistake_no_square.ipynb: no free sandbox user: all 1 are in use"]
    assert [str(p).split(": ", 1)[1].split("\n")[0] for p in row.problems] == [
        "mistake 'drops_negatives' scores 4, declared 7 (lost: public_cases 1/4; hidden_cases 3/6)"
    ]
    assert (row.solution, row.template, row.mistakes_ok, row.ok) == (10.0, 0.0, 0, False)
    assert order.count("mistake_no_square.ipynb") == 2  # graded again (retries=1) before it counts as not graded


def test_a_host_without_a_sandbox_is_not_the_exercises_fault(tmp_path, capsys, monkeypatch):
    """make_sandbox refuses (no bwrap on this host): one error line and exit 3, where it was a traceback."""
    import grading.sandbox
    from grading.errors import GraderFault

    def refuse(mode, **_):
        raise GraderFault(f"sandbox mode {mode!r} is not available: bwrap not found", retryable=False)

    roots = _roots(tmp_path)
    assert main(["exercises", "new", "ch09.squares", *roots]) == 0
    monkeypatch.setattr(grading.sandbox, "make_sandbox", refuse)
    capsys.readouterr()
    assert main(["exercises", "validate", "ch09.squares", "--sandbox", "bwrap", *roots]) == 3
    err = capsys.readouterr().err
    assert err.strip() == "error: no sandbox, nothing graded: sandbox mode 'bwrap' is not available: bwrap not found"
