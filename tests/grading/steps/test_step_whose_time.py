"""grading/steps/whose_time.py: a timeout is the grader's where the host starved the run or the code that ran
out is the grader's launcher, and an answer a timed-out cell never set says why (issue 24)."""

from __future__ import annotations

import nbformat
import pytest

from grading.errors import GraderFault
from grading.pipeline import grade_notebook
from grading.steps.cpu_clock import CellClock, Verdict
from grading.steps.grader_cells import CallPart, GraderCell
from grading.steps.kernel_io import CellRun
from grading.steps.execute import Execution
from grading.steps.whose_time import explain_unset, grader_timeout, launcher_raised


def _part(label: str, *, harness: bool, steps: int) -> CallPart:
    calls = tuple({"args": [i], "kwargs": {}} for i in range(steps))
    return CallPart(
        label=label,
        check=label,
        answer=f"fn_{label}",
        indices=tuple(range(steps)),
        calls=calls,
        timeout_s=10.0,
        harness=harness,
    )


def test_a_timed_out_call_is_the_graders_only_in_a_launchers_part_or_when_starved():
    cell = GraderCell(
        label="checks",
        source="",
        budget_s=30,
        parts=(_part("mine", harness=False, steps=2), _part("launcher", harness=True, steps=1)),
    )
    grader_timeout(cell, CellRun(status="timeout", steps=[{}]), None)  # the learner's 2nd call: theirs
    with pytest.raises(GraderFault, match="call of fn_launcher passed its 10 s limit") as caught:
        grader_timeout(cell, CellRun(status="timeout", steps=[{}, {}]), None)
    assert caught.value.retryable
    starved = CellClock(lambda: None, cores=0.5, backstop_factor=4)
    starved.verdict = Verdict.STARVED
    with pytest.raises(GraderFault, match="kept the CPU from the grader's checks cell"):
        grader_timeout(cell, CellRun(status="timeout", steps=[{}]), starved)
    with pytest.raises(GraderFault, match="harness 0"):
        grader_timeout(GraderCell(label="harness 0", source="", budget_s=5, harness=True), CellRun(status="hung"), None)


def test_an_answer_a_timed_out_cell_never_set_says_so(toy_catalogue, engine_sandbox):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(60)\nanswer_int = 42")])
    nb.metadata["titangrade"] = {"exercise_id": "ch05.toy"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    result = grade_notebook(nbformat.writes(nb), catalogue=toy_catalogue, sandbox=engine_sandbox)
    check = next(c for c in result.checks if c.name == "exact_int")
    assert check.score == 0 and "`answer_int` was never set" in check.feedback, check.feedback
    assert "cell 0 exceeded the 4 s cell time limit" in check.feedback, check.feedback
    assert "is not defined" not in check.feedback
    other = next(c for c in result.checks if c.name == "mesh_shape")  # set by no cell: still "not defined"
    assert "`mesh` is not defined" in other.feedback, other.feedback


def _launcher() -> GraderCell:
    return GraderCell(label="harness 0", source="", budget_s=60, harness=True, binds=("run_ulysses", "RESULT"))


def test_a_launcher_whose_ranks_cannot_connect_is_the_hosts_fault():
    for error in ("DistNetworkError", "RuntimeError"):
        value = "The server socket has failed to listen on any local network address. port: 29500, EADDRINUSE"
        with pytest.raises(GraderFault, match="could not connect its ranks") as caught:
            launcher_raised(_launcher(), CellRun(status="error", reply={"ename": error, "evalue": value}), Execution())
        assert caught.value.retryable


def test_a_launcher_that_raised_names_its_error_in_the_answers_it_would_have_set():
    """Its ranks ran the learner's code, which raised: the learner's, but the feedback says what happened
    instead of "`RESULT` is not defined"."""
    execution = Execution(payloads={"answers": {"answers": {"RESULT": {"__missing__": True}, "other": 1}}})
    reply = {"ename": "ProcessRaisedException", "evalue": "-- Process 1 terminated: ValueError: bad split"}
    launcher_raised(_launcher(), CellRun(status="error", reply=reply), execution)
    explain_unset(execution, [], "en")
    raised = execution.payloads["answers"]["answers"]["RESULT"]["__raised__"]
    assert raised["message"].startswith("`RESULT` was never set: the launcher cell, re-run by the grader")
    assert "ProcessRaisedException: -- Process 1 terminated: ValueError: bad split" in raised["message"]
    assert execution.payloads["answers"]["answers"]["other"] == 1
    explain_unset(execution, [], "zh")  # already explained: left as it is
    assert execution.payloads["answers"]["answers"]["RESULT"]["__raised__"] == raised


def test_each_launcher_cell_of_the_plan_knows_the_names_it_binds():
    from grading.exercise import Catalogue
    from grading.steps import grader_cells

    ex = Catalogue().get("ch06.context_parallel")
    plan = grader_cells.plan(ex, reference=ex.reference())
    (launcher,) = [c for c in plan.extract if c.harness]
    assert "run_ulysses" in launcher.binds
