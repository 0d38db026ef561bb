"""Step 3: run seed cell, learner cells and extraction cells in a fresh sandboxed kernel.

Cells run one by one with a per-cell timeout and a whole-run deadline; a failing cell never stops
the run. If a learner cell kills the kernel (or ignores the interrupt after its timeout), a fresh
kernel re-runs the other cells without it, within the same deadline, so other answers keep credit.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import nbformat
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from grading.codec import MAX_ANSWER_BYTES
from grading.errors import GraderFault
from grading.exercise import Limits
from grading.i18n import t
from grading.result import CellReport
from grading.sandbox import KernelRequest, Sandbox
from grading.steps.grader_cells import GraderCell, GraderPlan, read_payload
from grading.steps.limit_output import OutputBudget

TIMEOUT_ENAME = "TitangradeCellTimeout"
_NBCLIENT_LOG = logging.getLogger("grading.nbclient")  # nbclient logs every timeout as an error; we report them
MAX_ATTEMPTS = 3  # first run + two restarts after kernel deaths
PROBE_TIMEOUT_S = 3.0
LEARNER_IOPUB_S = 2.0  # wait for a learner cell's last outputs after its reply
GRADER_IOPUB_S = 30.0  # the answers payload must not be lost to a slow iopub under load
GRADER_OUTPUT_BYTES = MAX_ANSWER_BYTES + 1024 * 1024  # a payload over the run's answer cap is dropped on arrival


@dataclass(kw_only=True)
class Execution:
    """What running the notebook produced; payloads only from nonce-checked grader cells."""

    cells: list[CellReport] = field(default_factory=list)
    outputs: list[list[dict[str, Any]]] = field(default_factory=list)  # per learner code cell, truncated
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)  # extraction label -> payload
    extract_failures: dict[str, str] = field(default_factory=dict)  # extraction label -> why no payload
    messages: list[str] = field(default_factory=list)
    limits_hit: list[str] = field(default_factory=list)
    fault: str | None = None  # set when the grader itself failed (-> not_gradable)
    sandbox_mode: str = ""
    restarts: int = 0

    def hit(self, limit: str) -> None:
        if limit not in self.limits_hit:
            self.limits_hit.append(limit)


class _Client(NotebookClient):
    """nbclient that enforces the output budget while messages arrive, not after."""

    budget: OutputBudget | None = None
    marker: str = ""
    marked: bool = False

    async def async_start_new_kernel_client(self) -> AsyncKernelClient:
        # Sandboxes hand over a blocking KernelManager whose client() blocks the event loop, so an
        # iopub wait would starve the timeout; talk to the same kernel through an async client.
        info = self.km.get_connection_info(session=True)
        self.kc = AsyncKernelClient(**info, connection_file=self.km.connection_file, parent=self.km)
        self.kc.start_channels()
        await self.kc.wait_for_ready(timeout=self.startup_timeout)
        self.kc.allow_stdin = False
        return self.kc

    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    def output(self, outs, msg, display_id, cell_index):  # type: ignore[override]
        budget = self.budget
        if budget is None or msg["msg_type"] == "error":  # tracebacks are kept: they explain failures
            return super().output(outs, msg, display_id, cell_index)
        content = budget.admit(msg["msg_type"], msg["content"])
        out = None
        if content is not None:
            out = super().output(outs, {**msg, "content": content}, display_id, cell_index)
        if budget.truncated and not self.marked:
            self.marked = True
            outs.append(nbformat.v4.new_output("stream", name="stderr", text=self.marker))
        return out


@dataclass(kw_only=True)
class _Attempt:
    """One kernel's run; `restart_for` names the learner cell that killed or hung it."""

    reports: dict[int, CellReport] = field(default_factory=dict)
    outputs: dict[int, list] = field(default_factory=dict)
    restart_for: int | None = None


def run_notebook(nb: nbformat.NotebookNode, *, plan: GraderPlan, sandbox: Sandbox, request: KernelRequest,
                 lang: str = "en", progress: Callable[[dict], None] = lambda e: None) -> Execution:
    """Execute `nb` (already sanitized) with the grader cells of `plan`; never raises for learner faults."""
    limits = request.limits
    learner = [c for c in nb.cells if c.cell_type == "code"]
    result = Execution(sandbox_mode=getattr(sandbox, "mode", ""))
    skip: dict[int, CellReport] = {}
    deadline = time.monotonic() + limits.run_timeout_s
    for attempt in range(MAX_ATTEMPTS):
        try:
            session = sandbox.start(request)
        except GraderFault as exc:
            result.fault = str(exc)
            return result
        result.sandbox_mode = getattr(session, "mode", result.sandbox_mode)
        try:
            run = _run_attempt(session.km, learner, plan=plan, limits=limits, skip=skip, deadline=deadline,
                               lang=lang, progress=progress, result=result,
                               last_attempt=attempt == MAX_ATTEMPTS - 1,
                               poll_limits=getattr(session, "poll_limits", set))
        except GraderFault as exc:
            result.fault = str(exc)
            return result
        finally:
            for limit in session.close() or []:
                result.hit(limit)
        if run.restart_for is None or attempt == MAX_ATTEMPTS - 1:
            break
        skip[run.restart_for] = run.reports[run.restart_for]
        result.restarts += 1
        result.payloads.clear()
        result.extract_failures.clear()
        progress({"event": "restart", "skipped": run.restart_for})
    result.cells = [run.reports[i] for i in range(len(learner))]
    result.outputs = [run.outputs.get(i, []) for i in range(len(learner))]
    for report in result.cells:
        if report.status != "ok" and report.message and report.message not in result.messages:
            result.messages.append(report.message)
    return result


def _run_attempt(km, learner, *, plan: GraderPlan, limits: Limits, skip: dict[int, CellReport], deadline: float,
                 lang: str, progress: Callable[[dict], None], result: Execution, last_attempt: bool,
                 poll_limits: Callable[[], set[str]] = set) -> _Attempt:
    cells = [nbformat.v4.new_code_cell(plan.seed.source)] + [nbformat.v4.new_code_cell(c.source) for c in learner]
    extract_at = len(cells)
    cells += [nbformat.v4.new_code_cell(c.source) for c in plan.extract]
    client = _Client(nbformat.v4.new_notebook(cells=cells), km=km, allow_errors=True, interrupt_on_timeout=True,
                     error_on_timeout={"ename": TIMEOUT_ENAME, "evalue": "", "traceback": []},
                     record_timing=False, startup_timeout=60, shell_timeout_interval=1, log=_NBCLIENT_LOG)
    client.marker = t("output_truncated_marker", lang, limit_kb=limits.max_output_kb)
    replies: list[dict] = []
    client.on_cell_executed = lambda **kw: replies.append(kw.get("execute_reply") or {})
    attempt = _Attempt()
    try:
        client.start_new_kernel_client()
    except RuntimeError as exc:  # jupyter_client: "Kernel died before replying" / "didn't respond"
        raise GraderFault(f"kernel failed to start or respond: {exc}") from exc
    try:
        with client.setup_kernel(cleanup_kc=False):
            _run_grader_cell(client, 0, plan.seed, replies, fatal=True)
            for i, cell in enumerate(learner):
                if i in skip:
                    attempt.reports[i] = skip[i]
                    continue
                if _run_learner_cell(client, i, cell_at=i + 1, limits=limits, deadline=deadline, lang=lang,
                                     replies=replies, attempt=attempt, result=result, total=len(learner),
                                     progress=progress, poll_limits=poll_limits):
                    if not last_attempt:
                        attempt.restart_for = i
                    else:
                        _give_up(i, learner, plan=plan, skip=skip, attempt=attempt, result=result, lang=lang)
                    return attempt
            for j, grader_cell in enumerate(plan.extract):
                if not _run_extraction(client, extract_at + j, grader_cell, plan=plan, replies=replies,
                                       lang=lang, result=result):
                    for rest in plan.extract[j + 1:]:
                        result.extract_failures[rest.label] = result.extract_failures[grader_cell.label]
                    break
    finally:
        if client.kc is not None:
            client.kc.stop_channels()
    return attempt


def _give_up(i: int, learner, *, plan: GraderPlan, skip: dict[int, CellReport], attempt: _Attempt,
             result: Execution, lang: str) -> None:
    """No restarts left: the kernel is gone, so later cells and the answers are lost, and say so."""
    message = t("kernel_lost", lang, index=i)
    attempt.reports[i].message = message
    for k in range(i + 1, len(learner)):
        attempt.reports[k] = skip.get(k) or CellReport(index=k, status="skipped", message=message)
    for cell in plan.extract:
        result.extract_failures[cell.label] = message


def _execute(client: _Client, index: int, timeout_s: float, replies: list[dict], *, budget: OutputBudget | None,
             store_history: bool, iopub_s: float = LEARNER_IOPUB_S) -> tuple[str, dict]:
    """Run one cell; return (status, reply content) with status ok|error|timeout|dead."""
    limit_s = max(timeout_s, 0.1)
    client.timeout_func = lambda _cell: limit_s  # the `timeout` trait is an int; this keeps sub-second deadlines
    client.iopub_timeout = max(1, math.ceil(iopub_s))
    client.budget, client.marked = budget, False
    replies.clear()
    cell = client.nb.cells[index]
    try:
        client.execute_cell(cell, index, store_history=store_history)
    except DeadKernelError:
        return "dead", {}
    except CellTimeoutError:  # iopub never went idle after the interrupt
        return "timeout", {}
    content = (replies[-1] if replies else {}).get("content", {})
    if content.get("status") == "error":
        return ("timeout" if content.get("ename") == TIMEOUT_ENAME else "error"), content
    return "ok", content


def _run_grader_cell(client: _Client, index: int, cell: GraderCell, replies: list[dict], *, fatal: bool) -> str:
    iopub_s = 1.0 if cell.label == "probe" else GRADER_IOPUB_S
    status, content = _execute(client, index, cell.budget_s, replies, budget=OutputBudget(GRADER_OUTPUT_BYTES),
                               store_history=False, iopub_s=iopub_s)
    if fatal and status != "ok":
        detail = f"{content.get('ename', status)}: {content.get('evalue', '')}"
        raise GraderFault(f"grader {cell.label} cell failed ({detail})")
    return status


def _run_learner_cell(client: _Client, i: int, *, cell_at: int, limits: Limits, deadline: float, lang: str,
                      replies: list[dict], attempt: _Attempt, result: Execution, total: int,
                      progress: Callable[[dict], None], poll_limits: Callable[[], set[str]] = set) -> bool:
    """Run learner cell i; True if the kernel died or hung in it (the caller restarts without it)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        result.hit("time limit")
        attempt.reports[i] = CellReport(index=i, status="skipped",
                                        message=t("run_timeout", lang, limit_s=limits.run_timeout_s, index=i))
        return False
    progress({"event": "cell", "index": i, "total": total})
    budget = OutputBudget(limits.max_output_kb * 1024)
    cell_limit = min(limits.cell_timeout_s, remaining)
    started = time.monotonic()
    status, content = _execute(client, cell_at, cell_limit, replies, budget=budget, store_history=True)
    took = round(time.monotonic() - started, 3)
    attempt.outputs[i] = list(client.nb.cells[cell_at].get("outputs", []))
    if budget.truncated:
        result.hit("output limit")
        note = t("output_truncated", lang, index=i, limit_kb=limits.max_output_kb)
        if note not in result.messages:
            result.messages.append(note)
    over_memory = "memory limit" in poll_limits()  # the run's control group OOM-killed one of its processes
    if over_memory:
        result.hit("memory limit")
    if status == "dead":
        message = (t("memory_killed", lang, index=i, limit_mb=limits.memory_mb) if over_memory
                   else t("kernel_died", lang, index=i))
        attempt.reports[i] = CellReport(index=i, status="killed", message=message, duration_s=took)
        return True
    if status == "timeout":
        result.hit("time limit")
        if cell_limit < limits.cell_timeout_s:
            message = t("run_timeout", lang, limit_s=limits.run_timeout_s, index=i)
        else:
            message = t("cell_timeout", lang, index=i, limit_s=limits.cell_timeout_s)
        probe = GraderCell(label="probe", source="pass", budget_s=PROBE_TIMEOUT_S)
        client.nb.cells.append(nbformat.v4.new_code_cell(probe.source))
        alive = _run_grader_cell(client, len(client.nb.cells) - 1, probe, replies, fatal=False) == "ok"
        client.nb.cells.pop()
        if not alive:
            message = t("kernel_hung", lang, index=i)
        if over_memory:  # e.g. a cell that waited on processes the memory limit killed
            message = f"{t('memory_limit_cell', lang, index=i, limit_mb=limits.memory_mb)}; {message}"
        attempt.reports[i] = CellReport(index=i, status="timeout", message=message, duration_s=took)
        return not alive
    message = ""
    if status == "error":
        message = t("cell_error", lang, index=i, error=f"{content.get('ename', 'Error')}: {content.get('evalue', '')}"[:300])
    if over_memory:
        note = t("memory_limit_cell", lang, index=i, limit_mb=limits.memory_mb)
        status, message = "error", f"{note}; {message}" if message else note
    attempt.reports[i] = CellReport(index=i, status=status, message=message, duration_s=took)
    return False


def _run_extraction(client: _Client, index: int, cell: GraderCell, *, plan: GraderPlan, replies: list[dict],
                    lang: str, result: Execution) -> bool:
    """Run one extraction cell and keep its payload; False if the kernel is gone afterwards."""
    status = _run_grader_cell(client, index, cell, replies, fatal=False)
    payload = read_payload(client.nb.cells[index].get("outputs", []), nonce=plan.nonce)
    client.nb.cells[index].outputs = []  # the payload is kept once, in result.payloads
    over_cap = payload is None and client.budget is not None and client.budget.truncated
    if over_cap or (payload is not None and not plan.admit_payload(payload)):  # the run's answer cap (grading.codec)
        result.hit("answer limit")
        result.extract_failures[cell.label] = t("answers_too_large", lang, limit_mb=MAX_ANSWER_BYTES // 2**20)
        return True
    if payload is not None:
        result.payloads[cell.label] = payload
        return True
    if status == "dead":
        result.extract_failures[cell.label] = t("kernel_died_checking", lang, where=cell.label)
        return False
    if status == "timeout":
        result.hit("time limit")
        result.extract_failures[cell.label] = t("checking_timeout", lang, where=cell.label)
        return True
    result.extract_failures[cell.label] = t("answers_unreadable", lang, where=cell.label)
    return True
