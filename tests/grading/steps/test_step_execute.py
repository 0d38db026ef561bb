"""run_notebook on real kernels: the run deadline, what is kept from learner cells, grader outputs hidden."""
from __future__ import annotations

import nbformat
import pytest

from grading.exercise import Limits
from grading.sandbox import KernelRequest
from grading.steps.execute import run_notebook
from grading.steps.grader_cells import ANSWERS_MIME, plan

pytestmark = pytest.mark.slow


def _nb(*sources):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def test_run_deadline_skips_the_rest_and_keeps_earlier_answers(toy_catalogue, engine_sandbox):
    exercise = toy_catalogue.get("ch05.toy")
    p = plan(exercise, reference=exercise.reference())
    limits = Limits(cell_timeout_s=10, run_timeout_s=2.5)
    events = []
    result = run_notebook(_nb("answer_int = 42", "import time; time.sleep(5)", "tt_config = {}"), plan=p,
                          sandbox=engine_sandbox, request=KernelRequest(limits=limits), progress=lambda e: events.append(e.to_json()))
    assert [c.status for c in result.cells] == ["ok", "timeout", "skipped"]
    assert "2.5 s run time limit" in result.cells[1].message and "from 2 on did not run" in result.cells[2].message
    assert "time limit" in result.limits_hit
    answers = result.payloads["answers"]["answers"]
    assert answers["answer_int"] == 42
    # the skipped cell would have set it: the check says why it is unset, not "not defined" (issue 24)
    unset = answers["tt_config"]["__raised__"]
    assert unset["type"] == "NotSet" and "was never set" in unset["message"] and "did not run" in unset["message"]
    assert [e["index"] for e in events if e["event"] == "cell"] == [0, 1]


def test_learner_outputs_are_kept_and_grader_outputs_are_not(toy_catalogue, engine_sandbox):
    exercise = toy_catalogue.get("ch05.toy")
    p = plan(exercise, reference=exercise.reference())
    result = run_notebook(_nb("print('hello from the learner')", "1/0"), plan=p, sandbox=engine_sandbox,
                          request=KernelRequest(limits=exercise.manifest.limits))
    assert result.outputs[0][0]["text"] == "hello from the learner\n"
    assert result.outputs[1][-1]["output_type"] == "error" and result.outputs[1][-1]["ename"] == "ZeroDivisionError"
    assert "ZeroDivisionError: division by zero" in result.cells[1].message
    flat = repr(result.outputs)
    assert ANSWERS_MIME not in flat and p.nonce not in flat
    # one payload per grader cell: the answers, each check's public then hidden part, and the provenance
    # report of the learner's own callables (issue 12), none of them visible among the learner's outputs
    assert set(result.payloads) == {"answers", "check reward_function", "check reward_function, hidden cases",
                                    "provenance"}
    assert result.fault is None


def test_grader_cells_do_not_appear_in_learner_history(toy_catalogue, engine_sandbox):
    exercise = toy_catalogue.get("ch05.toy")
    p = plan(exercise, reference=exercise.reference())
    result = run_notebook(_nb("answer_int = len(In)", "seeded = [s[:20] for s in In if s.startswith('def _titangrade_boot')]"),
                          plan=p, sandbox=engine_sandbox, request=KernelRequest(limits=exercise.manifest.limits))
    answers = result.payloads["answers"]["answers"]
    assert answers["answer_int"] == 2  # In[0] is empty, In[1] is this cell: the seed cell left no history
    assert answers["seeded"] == []


def test_an_answer_whose_repr_hangs_costs_only_itself(toy_catalogue, engine_sandbox):
    exercise = toy_catalogue.get("ch05.toy")  # cell_timeout_s = 4, so reading one answer may take 4 s
    p = plan(exercise, reference=exercise.reference())
    slow = "class Slow:\n    def __repr__(self):\n        while True:\n            pass\nanswer_int = Slow()"
    result = run_notebook(_nb(slow, "tt_config = {'a': 1}"), plan=p, sandbox=engine_sandbox,
                          request=KernelRequest(limits=exercise.manifest.limits))
    answers = result.payloads["answers"]["answers"]
    assert answers["answer_int"]["__raised__"]["type"] == "__timeout__"
    assert answers["tt_config"] == {"__dict__": [["a", 1]]} and not result.extract_failures  # mappings travel escaped


def test_after_two_restarts_the_engine_gives_up_and_says_so(toy_catalogue, engine_sandbox):
    exercise = toy_catalogue.get("ch05.toy")
    p = plan(exercise, reference=exercise.reference())
    events = []
    exit_cell = "import os\nos._exit(1)"
    result = run_notebook(_nb("answer_int = 42", exit_cell, exit_cell, exit_cell, "tt_config = {}"), plan=p,
                          sandbox=engine_sandbox, request=KernelRequest(limits=exercise.manifest.limits),
                          progress=lambda e: events.append(e.to_json()))
    assert result.restarts == 2 and [e["skipped"] for e in events if e["event"] == "restart"] == [1, 2]
    assert [c.status for c in result.cells] == ["ok", "killed", "killed", "killed", "skipped"]
    assert "after two restarts" in result.cells[3].message and result.cells[4].message == result.cells[3].message
    assert "re-run without it" in result.cells[1].message
    assert result.payloads == {} and set(result.extract_failures) == {label for c in p.extract for label in c.labels}


FORGE = ("K = get_ipython().kernel\nP = K.get_parent()\n"
         "def send(kind, content):\n    K.session.send(K.iopub_socket, kind, content, parent=P)\n")


def test_errors_count_and_a_forged_execute_input_starts_no_new_budget(toy_catalogue, engine_sandbox):
    exercise = toy_catalogue.get("ch05.toy")
    p = plan(exercise, reference=exercise.reference())
    flood = FORGE + ("for i in range(200):\n"
                     "    send('execute_input', {'code': '', 'execution_count': i})\n"
                     "    send('error', {'ename': 'E', 'evalue': str(i), 'traceback': ['x' * 20_000]})")
    limits = exercise.manifest.limits
    result = run_notebook(_nb("answer_int = 42", flood), plan=p, sandbox=engine_sandbox,
                          request=KernelRequest(limits=limits))
    kept = sum(len(repr(o)) for o in result.outputs[1])
    assert kept < limits.max_output_kb * 1024 + 2000 and "output limit" in result.limits_hit
    assert result.payloads["answers"]["answers"]["answer_int"] == 42


def test_a_malformed_message_is_an_error_of_that_cell_only(toy_catalogue, engine_sandbox):
    exercise = toy_catalogue.get("ch05.toy")
    p = plan(exercise, reference=exercise.reference())
    result = run_notebook(_nb("answer_int = 42", FORGE + "send('display_data', {'metadata': {}})", "print('next')"),
                          plan=p, sandbox=engine_sandbox, request=KernelRequest(limits=exercise.manifest.limits))
    assert result.fault is None and [c.status for c in result.cells] == ["ok", "error", "ok"]
    assert "cannot read" in result.cells[1].message and result.outputs[2][0]["text"] == "next\n"


def test_light_seed_imports_neither_numpy_nor_torch_and_seeds_numpy_at_its_import(toy_catalogue, engine_sandbox):
    """A light kernel's seed cell defers numpy like torch (issue 18): the first draw after the learner's
    import equals the seeded sequence, and a notebook that never imports numpy never pays for it."""
    import numpy

    exercise = toy_catalogue.get("ch05.toy")
    assert exercise.manifest.kernel_family == "light"
    p = plan(exercise, reference=exercise.reference())
    result = run_notebook(
        _nb("import sys\nanswer_int = int('numpy' in sys.modules) + 10 * int('torch' in sys.modules)",
            "import numpy as np\nseeded = [int(np.random.randint(0, 10**6)) for _ in range(2)]"),
        plan=p, sandbox=engine_sandbox, request=KernelRequest(limits=exercise.manifest.limits))
    answers = result.payloads["answers"]["answers"]
    assert answers["answer_int"] == 0
    expected = numpy.random.RandomState(exercise.manifest.seed)
    assert answers["seeded"] == [int(expected.randint(0, 10**6)) for _ in range(2)]


def test_each_call_keeps_its_own_clock_in_one_cell_and_the_calls_after_an_interrupted_one_still_run(
    toy_catalogue, engine_sandbox
):
    """A check part's calls run in one cell with the grader's clock (timeout_s 2 + 1.5 s) restarting at each
    result: three 1.5 s calls (4.5 s together) all count. A call that cancels its alarm and swallows the
    grader's interrupt to return the right value late scores a timeout, and the calls after it run anyway."""
    exercise = toy_catalogue.get("ch05.toy")
    p = plan(exercise, reference=exercise.reference())
    learner = (
        "import signal, time\n"
        "def partial_reward(greens, yellows):\n"
        "    if greens == 5:\n"
        "        signal.setitimer(signal.ITIMER_REAL, 0)\n"
        "        try:\n"
        "            time.sleep(8)\n"
        "        except KeyboardInterrupt:\n"
        "            return 1.0\n"
        "    if greens != 2 and greens != 0:\n"
        "        time.sleep(1.5)\n"
        "    if greens < 0:\n"
        "        raise ValueError('counts must lie in 0..5')\n"
        "    return 0.2 * greens + 0.1 * yellows\n"
    )
    result = run_notebook(_nb(learner), plan=p, sandbox=engine_sandbox,
                          request=KernelRequest(limits=exercise.manifest.limits))
    hidden = result.payloads["check reward_function, hidden cases"]["calls"]["reward_function"]
    assert hidden[0] == {"__raised__": {"type": "__timeout__", "message": "exceeded 3.5 s"}}, hidden
    assert hidden[1:3] == [0.8, 0.5], hidden  # 3 * 1.5 s in the cell after the interrupted call
    assert hidden[3]["__raised__"]["type"] == "ValueError", hidden
    assert result.payloads["check reward_function"]["calls"]["reward_function"] == [0.5, 0.0]
    assert "time limit" in result.limits_hit and "check reward_function, hidden cases" not in result.extract_failures


class _SlowStart:
    """A sandbox whose kernels take 3 s more to come up (a busy host): the learner's run time starts after."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.mode = getattr(inner, "mode", "")

    def start(self, request):
        import time

        session = self.inner.start(request)
        time.sleep(3)
        return session


def test_a_slow_kernel_start_is_not_taken_from_the_learners_run_time(toy_catalogue, engine_sandbox):
    exercise = toy_catalogue.get("ch05.toy")
    p = plan(exercise, reference=exercise.reference())
    limits = Limits(cell_timeout_s=10, run_timeout_s=2.5)  # less than the start takes
    result = run_notebook(_nb("answer_int = 42"), plan=p, sandbox=_SlowStart(engine_sandbox),
                          request=KernelRequest(limits=limits))
    assert [c.status for c in result.cells] == ["ok"], result.cells  # before: skipped for the run's time limit
    assert result.payloads["answers"]["answers"]["answer_int"] == 42
