"""Cells of calls that carry several checks: results split by counting, and what one misbehaving check costs
the others (a hung call, a dead kernel, a missing function, an unreadable result)."""
from __future__ import annotations

import json

import nbformat
import pytest

from grading.exercise import Catalogue
from grading.sandbox import KernelRequest
from grading.steps.call_results import call_results
from grading.steps.execute import run_notebook
from grading.steps.grader_cells import ANSWERS_MIME, CallPart, call_cell, plan
from grading.steps.kernel_io import CellRun

WORDLE = "ch07.wordle_reward"
NONCE = "n" * 32


def _part(check: str, n: int) -> CallPart:
    return CallPart(label=f"check {check}", check=check, answer=check, indices=tuple(range(n)),
                    calls=tuple({"args": [i], "kwargs": {}} for i in range(n)), timeout_s=2.0)


def _out(check: str, wire) -> dict:
    payload = {"nonce": NONCE, "answers": {}, "calls": {check: wire}}
    return {"output_type": "display_data", "data": {ANSWERS_MIME: payload}, "metadata": {}}


def test_results_are_split_by_counting_and_a_missing_function_sends_one_marker_per_call():
    cell = call_cell("checks", parts=(_part("a", 2), _part("b", 3), _part("c", 0)), handle="_tg_h", nonce=NONCE)
    steps = [_out("a", [1]), _out("a", [2]), *[_out("b", {"__missing__": True})] * 3, _out("c", [])]
    got = call_results(cell, CellRun(status="ok", steps=steps), nonce=NONCE)
    assert got.payloads == {
        "check a": {"nonce": NONCE, "answers": {}, "calls": {"a": [1, 2]}},
        "check b": {"nonce": NONCE, "answers": {}, "calls": {"b": {"__missing__": True}}},
        "check c": {"nonce": NONCE, "answers": {}, "calls": {"c": []}},
    }
    assert got.covered == 6 and not got.ended_early


def test_an_interrupted_call_scores_a_timeout_and_the_re_run_starts_after_it():
    cell = call_cell("checks", parts=(_part("a", 2), _part("b", 3)), handle="_tg_h", nonce=NONCE)
    got = call_results(cell, CellRun(status="error", steps=[_out("a", [1]), _out("a", [2]), _out("b", [3])]),
                       nonce=NONCE)
    assert got.payloads["check b"]["calls"]["b"] == [3, {"__raised__": {"type": "__timeout__",
                                                                         "message": "exceeded 3.5 s"}}]
    assert got.ended_early and got.covered == 4


def test_an_unreadable_result_fails_its_check_only_and_the_next_check_is_re_run():
    """A result for another check where this one's was due: this part has no payload and the re-run starts
    with the next part (the kernel is alive); the parts before it keep theirs."""
    cell = call_cell("checks", parts=(_part("a", 1), _part("b", 2), _part("c", 1)), handle="_tg_h", nonce=NONCE)
    steps = [_out("a", [1]), _out("b", [2]), _out("c", [9])]
    got = call_results(cell, CellRun(status="ok", steps=steps), nonce=NONCE)
    assert got.payloads["check a"]["calls"]["a"] == [1] and got.payloads["check b"] is None
    assert "check c" not in got.payloads and got.ended_early and got.covered == 3
    dead = call_results(cell, CellRun(status="dead", steps=steps[:2]), nonce=NONCE)
    assert dead.payloads["check b"] is None  # one result short and the kernel gone: nothing to time out
    for lost in (CellRun(status="ok", steps=steps[:2], truncated=True),
                 CellRun(status="ok", steps=steps[:2], malformed=["a message over the size limit"])):
        sized = call_results(cell, lost, nonce=NONCE)  # lost to a size cap: that check fails as too large
        assert sized.payloads["check b"] is None and sized.too_big == {"check b"} and lost.over_size
    assert not CellRun(status="ok", malformed=["an unreadable message"]).over_size


def _learner(extra: str) -> nbformat.NotebookNode:
    nb = nbformat.read(Catalogue().get(WORDLE).reference_dir / "solution.ipynb", 4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    return nbformat.v4.new_notebook(cells=[*cells, nbformat.v4.new_code_cell(extra)] if extra else cells)


def _run(extra: str, **limits):
    exercise = Catalogue().get(WORDLE)
    p = plan(exercise, reference=exercise.reference())
    from grading.sandbox import make_sandbox

    return p, run_notebook(_learner(extra), plan=p, sandbox=make_sandbox("unsafe-local"),
                           request=KernelRequest(limits=exercise.manifest.limits.model_copy(update=limits)))


# partial_answer misbehaves on its second call from the grader (the first hidden one: the public check
# makes one); compute_score's own calls to it do not count
ARMED = ("import os, signal, sys, time\n_real, _n = partial_answer, [0]\n"
         "def partial_answer(*a, **k):\n    _n[0] += sys._getframe(1).f_code.co_name != 'compute_score'\n"
         "    if _n[0] == 2 and sys._getframe(1).f_code.co_name != 'compute_score':\n")
HIDDEN = ["hidden_cases", "turn_accounting", "last_guess", "partial_credit", "feedback_string"]


def _n_hidden(check: str) -> int:
    """How many hidden calls the reference makes for `check` (the master adds cases over time)."""
    return sum(not c.get("public") for c in Catalogue().get(WORDLE).reference()["checks"][check]["calls"])


@pytest.mark.slow
def test_a_hung_call_costs_only_its_own_result_and_the_checks_after_it_in_the_cell_still_run():
    """partial_answer's first hidden call cancels its alarm and sleeps: the grader's clock (10 + 1.5 s)
    interrupts it, that call scores a timeout, and its later calls and feedback_string's run in a new cell."""
    p, result = _run(
        ARMED + "        signal.setitimer(signal.ITIMER_REAL, 0)\n        time.sleep(60)\n    return _real(*a, **k)\n"
    )
    partial = result.payloads["check partial_credit, hidden cases"]["calls"]["partial_credit"]
    assert partial[0] == {"__raised__": {"type": "__timeout__", "message": "exceeded 11.5 s"}}
    assert len(partial) == _n_hidden("partial_credit") and not any("__raised__" in json.dumps(r) for r in partial[1:])
    feedback = result.payloads["check feedback_string, hidden cases"]["calls"]["feedback_string"]
    assert len(feedback) == _n_hidden("feedback_string") and "__raised__" not in json.dumps(feedback)
    assert "time limit" in result.limits_hit and result.extract_failures == {}


@pytest.mark.slow
def test_a_kernel_death_in_one_check_fails_it_and_the_checks_after_it_and_keeps_those_before():
    """A dying kernel loses the results its iopub thread had not sent, so the merged cell cannot tell which
    check killed it: the run is done again with one cell per check, and only the culprit (and the checks
    after it, which never ran) fail; the checks before it keep their results."""
    p, result = _run(ARMED + "        os._exit(1)\n    return _real(*a, **k)\n")
    assert result.restarts == 1
    for check in HIDDEN[:3]:
        assert len(result.payloads[f"check {check}, hidden cases"]["calls"][check]) > 0
    died = result.extract_failures["check partial_credit, hidden cases"]
    assert "partial_credit" in died and result.extract_failures["check feedback_string, hidden cases"] == died
    assert "check partial_credit, hidden cases" not in result.payloads
    assert result.payloads["check partial_credit"]["calls"]["partial_credit"] != {"__missing__": True}


@pytest.mark.slow
def test_no_re_run_that_could_not_finish_in_the_run_s_time_the_answers_in_hand_are_kept():
    """The same death with a learner cell that takes 4 of the run's 10 s: a re-run would not fit, so none
    is started and what the first kernel sent stands."""
    p, result = _run("import time\ntime.sleep(4)\n" + ARMED + "        os._exit(1)\n    return _real(*a, **k)\n",
                     run_timeout_s=10, cell_timeout_s=6)
    assert result.restarts == 0 and "answers" in result.payloads
    assert len(result.payloads["check hidden_cases, hidden cases"]["calls"]["hidden_cases"]) == _n_hidden("hidden_cases")
    assert "check feedback_string, hidden cases" in result.extract_failures


@pytest.mark.slow
def test_a_missing_function_is_missing_for_its_checks_only():
    p, result = _run("del partial_answer")
    for label in ("check partial_credit", "check partial_credit, hidden cases"):
        assert result.payloads[label]["calls"]["partial_credit"] == {"__missing__": True}
    assert len(result.payloads["check feedback_string, hidden cases"]["calls"]["feedback_string"]) == _n_hidden("feedback_string")
    assert len(result.payloads["check public_cases"]["calls"]["public_cases"]) == 6
    assert result.extract_failures == {}
