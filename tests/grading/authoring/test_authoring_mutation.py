"""`titangrade exercises mutants`: mutants of the scaffold toy graded in real kernels, the --json figures,
EQUIVALENT, exit codes, and a host that could not grade (never a survivor)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import nbformat
import pytest

from grading.authoring.build import render
from grading.authoring.mutants import generate
from grading.authoring.mutation import Verdict, pick, run_mutants
from grading.authoring.scaffold import scaffold
from grading.exercise import Catalogue
from grading.result import CheckResult, GradeResult, Status
from grading.sandbox import probe
from service.cli import main

SANDBOX = os.environ.get("TITANGRADE_TEST_SANDBOX", "unsafe-local")
UNOBSERVED = "    numbers = list(numbers)\n"  # a line no check can see: dropping it survives
SOLUTION_LINE = "    return sum(x * x for x in numbers)\n"


def _roots(tmp: Path) -> list[str]:
    return ["--exercises-root", str(tmp / "exercises"), "--reference-root", str(tmp / "reference"),
            "--fixtures-root", str(tmp / "fixtures")]  # fmt: skip


def _h(line: str) -> str:
    return hashlib.sha1(" ".join(line.split()).encode()).hexdigest()[:8]


def _toy(tmp_path: Path, capsys, *, unobserved: bool = True) -> Path:
    assert main(["exercises", "new", "ch09.squares", *_roots(tmp_path)]) == 0
    master = tmp_path / "reference" / "ch09.squares" / "squares.py"
    if unobserved:
        master.write_text(master.read_text().replace(SOLUTION_LINE, UNOBSERVED + SOLUTION_LINE))
    capsys.readouterr()
    return master


@pytest.mark.slow
def test_a_survivor_fails_the_goal_until_it_is_declared_equivalent(tmp_path, capsys):
    master = _toy(tmp_path, capsys)
    code = main(["exercises", "mutants", "ch09.squares", "--json", "--sandbox", SANDBOX, *_roots(tmp_path)])
    captured = capsys.readouterr()
    assert code == 1, captured.err
    data = json.loads(captured.out)  # progress went to stderr: stdout is the JSON alone
    assert set(data) == {"goal", "sample", "seed", "include_training", "duration_s", "total", "exercises"}
    ex = data["exercises"][0]
    survivor = f"stmt_drop:{_h(UNOBSERVED)}:1"
    assert (ex["generated"], ex["killed"], ex["survived"], ex["equivalent"], ex["not_graded"]) == (4, 3, 1, 0, 0)
    assert ex["score"] == 0.75 and ex["meets_goal"] is False and data["total"]["score"] == 0.75
    line = master.read_text().split("\n").index(UNOBSERVED.rstrip("\n")) + 1
    assert ex["survivors"] == [
        {
            "id": survivor, "operator": "stmt_drop", "line": f"{master}:{line}", "before": "numbers = list(numbers)",
            "after": "pass", "checks": ["public_cases", "hidden_cases"], "verdict": "survived", "lost": {},
            "note": "", "duration_s": ex["survivors"][0]["duration_s"],
        }
    ]  # fmt: skip
    by_id = {m["id"]: m for m in ex["mutants"]}
    arith = by_id[f"arith:{_h(SOLUTION_LINE)}:1"]  # x / x: 3 for [1, 2, 3], 2 for [-2, 5], 0 for []
    assert arith["verdict"] == "killed" and arith["lost"] == {"public_cases": 4.0, "hidden_cases": 3.0}
    assert by_id[f"return_public:{_h(UNOBSERVED)}:1"]["lost"] == {"hidden_cases": 6.0}  # returns 14: public passes
    assert ex["checks"]["hidden_cases"] == {
        "attributed": 4, "killed": 3, "killed_elsewhere": 0, "survived": 1, "equivalent": 0, "not_graded": 0,
    }  # fmt: skip
    assert ex["checks"]["public_cases"]["killed"] == 2 and ex["checks"]["public_cases"]["killed_elsewhere"] == 1
    assert (
        "1 mutant(s) survive: 75.0% killed, the goal is 90%" in captured.err and "fix: add hidden cases" in captured.err
    )

    master.write_text(
        master.read_text()
        + f'\nEQUIVALENT = [{{"mutant": "{survivor}", "reason": "the generator reads a list as it reads a tuple"}}]\n'
    )
    assert main(["exercises", "mutants", "ch09.squares", "--sandbox", SANDBOX, *_roots(tmp_path)]) == 0
    out = capsys.readouterr().out
    summary = out.rsplit("\nexercise ", 1)[1].split("\n")[2].split()
    assert summary[:8] == ["ch09.squares", "4", "3", "0", "1", "0", "0", "100.0%"] and summary[-1] == "ok"
    assert "survivors of" not in out


def test_bad_input_exits_2_and_a_stale_equivalent_exits_1_before_grading(tmp_path, capsys):
    master = _toy(tmp_path, capsys, unobserved=False)
    for bad in (["ch09.nope"], ["ch09.squares", "--sample", "0"], ["ch09.squares", "--jobs", "0"]):
        assert main(["exercises", "mutants", *bad, *_roots(tmp_path)]) == 2
    assert main(["exercises", "validate", "ch09.squares", "--mutants", "--sample", "0", *_roots(tmp_path)]) == 2
    capsys.readouterr()
    master.write_text(
        master.read_text() + '\nEQUIVALENT = [{"mutant": "cmp:0badc0de:1", "reason": "a line long gone"}]\n'
    )
    assert main(["exercises", "mutants", "ch09.squares", "--sandbox", SANDBOX, *_roots(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert (
        "which no longer matches a generated mutant (stale)" in captured.err and "fix: delete the entry" in captured.err
    )
    assert "grading" not in captured.out


def _result(ex_id: str, public: float, hidden: float, status: Status = Status.GRADED, message: str = "") -> GradeResult:
    checks = [
        CheckResult(name="public_cases", score=public, max_score=4.0, passed=public == 4.0, feedback=""),
        CheckResult(name="hidden_cases", score=hidden, max_score=6.0, passed=hidden == 6.0, feedback=""),
    ]
    return GradeResult(exercise_id=ex_id, status=status, score=public + hidden, max_score=10.0, checks=checks,
                       message=message)  # fmt: skip


def test_a_mutant_the_host_could_not_grade_is_not_graded_never_survived(tmp_path):
    """The grading itself stands in for the host here; the real busy host is the next test."""
    scaffold("ch09.squares", exercises_root=tmp_path / "exercises", reference_root=tmp_path / "reference")
    catalogue = Catalogue(tmp_path / "exercises", tmp_path / "reference")
    out = render(catalogue.get("ch09.squares"), fixtures_root=tmp_path / "fixtures")
    out.write()
    ids = [m.id for m in generate(out.master, {"public_cases": "solve", "hidden_cases": "solve"})]
    graded = {ids[0]: None, ids[1]: (4.0, 6.0), ids[2]: (0.0, 3.0)}  # not gradable, survives, killed
    calls: list[str] = []

    def grade_fn(data, *, exercise_id, catalogue, sandbox):
        mutant = nbformat.reads(data.decode(), as_version=4).metadata["titangrade"].get("mutant", "solution")
        calls.append(mutant)
        if mutant == "solution":
            return _result(exercise_id, 4.0, 6.0)
        if graded[mutant] is None:
            return _result(exercise_id, 0.0, 0.0, Status.NOT_GRADABLE, "no free sandbox user: all 1 are in use")
        return _result(exercise_id, *graded[mutant])

    report = run_mutants(out, catalogue=catalogue, sandbox=None, say=lambda _: None, retries=1, grade_fn=grade_fn)  # type: ignore[arg-type]
    verdicts = {o.mutant.id: o.verdict for o in report.outcomes}
    assert verdicts == {ids[0]: Verdict.NOT_GRADED, ids[1]: Verdict.SURVIVED, ids[2]: Verdict.KILLED}
    assert calls.count(ids[0]) == 2 and calls.count(ids[1]) == 1  # graded again once: retries=1
    assert report.not_graded[0].note == "no free sandbox user: all 1 are in use"
    assert report.score == 0.5  # killed / (killed + survived): the not graded one counts neither way
    assert report.as_json()["checks"]["hidden_cases"]["not_graded"] == 1


needs_bwrap = pytest.mark.skipif(not probe().usable, reason="needs the bwrap sandbox (root, bubblewrap, tgsbxN users)")


@needs_bwrap
def test_a_busy_host_grades_no_mutant_and_exits_3_without_fix_lines(tmp_path, capsys, monkeypatch):
    from test_authoring_validate_host import USER, held_by_another_process

    import grading.sandbox
    from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

    sandbox = BwrapSandbox(BwrapConfig(users=(USER,), cgroups="off"))
    monkeypatch.setattr(grading.sandbox, "make_sandbox", lambda mode, **_: sandbox)
    _toy(tmp_path, capsys, unobserved=False)
    with held_by_another_process(USER):
        code = main(["exercises", "mutants", "ch09.squares", "--json", "--sandbox", "bwrap", *_roots(tmp_path)])
    captured = capsys.readouterr()
    assert code == 3, captured.err
    ex = json.loads(captured.out)["exercises"][0]
    assert (ex["not_graded"], ex["killed"], ex["survived"], ex["score"]) == (3, 0, 0, None)
    assert "fix:" not in captured.err and "not graded, retry: 3 mutant(s)" in captured.err


def test_a_sample_is_the_same_for_the_same_seed(tmp_path):
    scaffold("ch09.squares", exercises_root=tmp_path / "exercises", reference_root=tmp_path / "reference")
    master = tmp_path / "reference" / "ch09.squares" / "squares.py"
    body = "".join(f"    n{i} = {i} + len(numbers)\n" for i in range(20))
    master.write_text(master.read_text().replace(SOLUTION_LINE, body + SOLUTION_LINE))
    out = render(Catalogue(tmp_path / "exercises", tmp_path / "reference").get("ch09.squares"))
    mutants = generate(out.master, {"public_cases": "solve"})
    assert len(mutants) > 40
    first = pick(mutants, exercise_id="ch09.squares", sample=5, seed=1)
    assert len(first) == 5 and first == pick(list(reversed(mutants)), exercise_id="ch09.squares", sample=5, seed=1)
    assert first != pick(mutants, exercise_id="ch09.squares", sample=5, seed=2)
    assert pick(mutants, exercise_id="ch09.squares", sample=None, seed=1) == {m.id for m in mutants}


@pytest.mark.slow
def test_validate_then_mutants(tmp_path, capsys):
    _toy(tmp_path, capsys, unobserved=False)
    assert main(["exercises", "validate", "ch09.squares", "--mutants", "--sandbox", SANDBOX, *_roots(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "solution.ipynb: graded, 10/10" in out and "mutants of 1 exercise(s) that validated" in out
    summary = out.rsplit("\nexercise ", 1)[1].split("\n")[2].split()
    assert summary[:3] == ["ch09.squares", "3", "3"] and summary[-1] == "ok"
