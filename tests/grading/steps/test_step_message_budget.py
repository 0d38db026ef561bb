"""Messages count, not only bytes: a real kernel that prints in a tight loop with flush (or sends tiny signed
iopub messages itself) is stopped at the message caps, so the grader reads a bounded number of messages
(asserted on the count handled, never on time), and the learner's error names the cap."""

from __future__ import annotations

import nbformat
import pytest

from grading.exercise import Limits
from grading.sandbox import KernelRequest
from grading.steps.execute import run_notebook
from grading.steps.grader_cells import plan
from grading.steps.kernel_io import KernelIO
from grading.steps.limit_output import CELL_FLOOD_MESSAGES, RUN_MESSAGES, OutputCollector

pytestmark = pytest.mark.slow

PRINT_FLOOD = "for i in range(10**7):\n    print(i, flush=True)"  # one iopub message per print
FORGED_FLOOD = (  # the tiniest validly signed message, from the kernel's own session, without ipykernel's batching
    "K = get_ipython().kernel\nP = K.get_parent()\n"
    "for i in range(10**7):\n    K.session.send(K.iopub_socket, 'stream', {'name': 'stdout', 'text': 'x'}, parent=P)"
)


@pytest.fixture
def kernel(engine_sandbox):
    session = engine_sandbox.start(KernelRequest(limits=Limits(cell_timeout_s=600, run_timeout_s=1200)))
    io = KernelIO(urls=session.channel_urls(), key=session.km.session.key, is_alive=session.km.is_alive)
    io.wait_ready(30)
    yield io
    io.close()
    session.close()


def _run(io: KernelIO, code: str):
    return io.execute(code, limit_s=600, collector=OutputCollector(max_bytes=256 * 1024), store_history=True,
                      iopub_s=2.0)


@pytest.mark.parametrize("code", [PRINT_FLOOD, FORGED_FLOOD], ids=["print-flush", "forged-signed"])
def test_a_message_flood_is_stopped_at_the_cell_cap(kernel, code):
    done = _run(kernel, code)
    # interrupted; or, where the kernel does not answer the interrupt in time (a loaded host), reported hung
    # for the caller to kill: both end the cell as a flood (execute.py), and the reading stops either way
    assert done.status in ("error", "hung") and (done.flooded, done.flood) == (True, "messages")
    # past the cap, then what was in flight; never more than the hang rule's 2 x cap
    assert CELL_FLOOD_MESSAGES < done.messages <= 2 * CELL_FLOOD_MESSAGES + 10
    assert done.charged < 64 * 2**20  # the byte cap (CELL_FLOOD_BYTES) alone would have let it go on


def test_the_run_cap_counts_messages_across_cells(kernel):
    kernel.cell_messages_cap, kernel.run_messages_cap = 20_000, 10**9
    # iopub is a PUB socket: past its high-water mark the kernel drops messages, so how many of a cell's sends
    # arrive depends on the host's speed (2499 of 3000 on a loaded run). The run cap is therefore set from what
    # the first cell really delivered: the second cell must stop at it, far below its own cell cap (what
    # was in flight when it stopped is still read: a few thousand messages on a loaded host).
    first = _run(kernel, FORGED_FLOOD.replace("10**7", "3000"))
    assert not first.flooded and first.messages > 0
    kernel.run_messages_cap = kernel.run_messages + 1000
    second = _run(kernel, FORGED_FLOOD)
    assert second.flooded and second.flood == "messages"
    assert 1000 <= second.messages < 20_000  # the run cap stopped it, not the cell cap


def test_the_learner_is_told_the_message_cap_and_other_cells_keep_their_credit(toy_catalogue, engine_sandbox):
    exercise = toy_catalogue.get("ch05.toy")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in ("answer_int = 42", PRINT_FLOOD)])
    limits = exercise.manifest.limits.model_copy(update={"cell_timeout_s": 600, "run_timeout_s": 1200})  # a slow host
    result = run_notebook(nb, plan=plan(exercise, reference=exercise.reference()), sandbox=engine_sandbox,
                          request=KernelRequest(limits=limits))
    assert result.fault is None and [c.status for c in result.cells] == ["ok", "error"]
    assert f"at most {CELL_FLOOD_MESSAGES:,} output messages per cell and {RUN_MESSAGES:,} per run" in (
        result.cells[1].message)
    assert "output limit" in result.limits_hit
    assert result.payloads["answers"]["answers"]["answer_int"] == 42
