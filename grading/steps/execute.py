"""Step 3: run seed cell, learner cells and extraction cells in a fresh sandboxed kernel.

Cells run one by one with a per-cell timeout and a whole-run deadline; a failing cell never stops
the run. If a learner cell kills the kernel (or ignores the interrupt after its timeout), a fresh
kernel re-runs the other cells without it, within the same deadline, so other answers keep credit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import nbformat

from grading.codec import MAX_ANSWER_BYTES
from grading.errors import GraderFault
from grading.exercise import Limits
from grading.i18n import t
from grading.observer import CELL, NO_OBSERVER, SANDBOX_START, GradingObserver
from grading.progress import Cell, Event, Restart
from grading.result import CellReport
from grading.sandbox import KernelRequest, KernelSession, Sandbox
from grading.steps.call_results import call_results
from grading.steps.cpu_clock import CellClock
from grading.steps.grader_cells import ANSWERS_MIME, GraderCell, GraderPlan, payload_of, read_payload
from grading.steps.kernel_io import RUN_TRAFFIC_BYTES, CellRun, KernelIO
from grading.steps.limit_output import OutputCollector
from grading.steps.whose_time import RETRIED, STARVED, explain_unset, grader_timeout, launcher_raised

MAX_ATTEMPTS = 3  # first run + two restarts after kernel deaths
LEARNER_IOPUB_S = 2.0  # wait for a learner cell's last outputs after its reply
GRADER_IOPUB_S = 30.0  # the answers payload must not be lost to a slow iopub under load
GRADER_OUTPUT_BYTES = MAX_ANSWER_BYTES + 1024 * 1024  # a payload over the run's answer cap is dropped on arrival
RUN_KEPT_BYTES = 8 * 1024 * 1024  # learner outputs kept over the whole run (each cell: max_output_kb)
CONNECT_TIMEOUT_S = 30.0
GRADER_GRACE_S = 15.0  # the most the grader's own cells may add after the run's time limit
OUTPUT, TIME = "output limit", "time limit"


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
    launcher_errors: dict[str, str] = field(default_factory=dict)  # a raising launcher's names -> its error
    sandbox_mode: str = ""
    restarts: int = 0

    def hit(self, limit: str) -> None:
        if limit not in self.limits_hit:
            self.limits_hit.append(limit)


@dataclass(kw_only=True)
class _Attempt:
    """One kernel's run; `restart_for` names the learner cell that killed or hung it."""

    reports: dict[int, CellReport] = field(default_factory=dict)
    outputs: dict[int, list] = field(default_factory=dict)
    restart_for: int | None = None


def run_notebook(
    nb: nbformat.NotebookNode,
    *,
    plan: GraderPlan,
    sandbox: Sandbox,
    request: KernelRequest,
    lang: str = "en",
    progress: Callable[[Event], None] = lambda e: None,
    observer: GradingObserver = NO_OBSERVER,
) -> Execution:
    """Execute `nb` (already sanitized) with the grader cells of `plan`; never raises for learner faults.
    The run's time limit covers everything: kernel starts, learner cells and the grader's own cells."""
    limits = request.limits
    learner = [c for c in nb.cells if c.cell_type == "code"]
    result = Execution(sandbox_mode=getattr(sandbox, "mode", ""))
    skip: dict[int, CellReport] = {}
    skipped_outputs: dict[int, list] = {}  # what a cell that killed its kernel printed before it did
    run = _Run(
        deadline=time.monotonic() + limits.run_timeout_s,
        limits=limits,
        lang=lang,
        plan=plan,
        result=result,
        progress=progress,
        observer=observer,
    )
    for attempt in range(MAX_ATTEMPTS):
        began = time.monotonic()
        try:
            with observer.phase(SANDBOX_START, attempt=attempt):
                session = sandbox.start(request)
        except GraderFault as exc:
            result.fault = str(exc)
            return result
        result.sandbox_mode = getattr(session, "mode", result.sandbox_mode)
        run.poll_limits = getattr(session, "poll_limits", set)
        run.attach(session)
        run.deadline += time.monotonic() - began  # the kernel's start is the grader's time, not the learner's
        try:
            done = _run_attempt(session, learner, run=run, skip=skip, last_attempt=attempt == MAX_ATTEMPTS - 1)
        except GraderFault as exc:
            result.fault = str(exc)
            return result
        finally:
            for limit in session.close() or []:
                result.hit(limit)
        # a re-run for an unsure death only if it can finish: it would otherwise lose the answers in hand
        unsure = run.unsure_death and attempt < MAX_ATTEMPTS - 1 and run.left_s() > 1.5 * (time.monotonic() - began)
        if (done.restart_for is None and not unsure) or attempt == MAX_ATTEMPTS - 1:
            break
        if done.restart_for is not None:
            skip[done.restart_for] = done.reports[done.restart_for]
            skipped_outputs[done.restart_for] = done.outputs.get(done.restart_for, [])
        else:  # see _run_extraction_once: run again, each check's calls in a cell of their own
            run.plan, run.unsure_death = run.plan.isolated(), False
        result.restarts += 1
        result.payloads.clear()
        result.extract_failures.clear()
        result.limits_hit = [limit for limit in result.limits_hit if limit != "answer limit"]
        progress(Restart(skipped=done.restart_for))
    result.cells = [done.reports[i] for i in range(len(learner))]
    result.outputs = [done.outputs.get(i, skipped_outputs.get(i, [])) for i in range(len(learner))]
    for report in result.cells:
        if report.status != "ok" and report.message and report.message not in result.messages:
            result.messages.append(report.message)
    explain_unset(result, learner, lang)
    return result


@dataclass(kw_only=True)
class _Run:
    """What every attempt of one run shares: its deadline, limits and the result being filled."""

    deadline: float
    limits: Limits
    lang: str
    plan: GraderPlan
    result: Execution
    progress: Callable[[Event], None]
    observer: GradingObserver = NO_OBSERVER  # sees each learner cell's run, unthrottled (grading/observer.py)
    kept_bytes: int = 0  # learner output kept so far, all cells
    unsure_death: bool = False  # the kernel died in a cell of several checks' calls, which one unknown
    poll_limits: Callable[[], set[str]] = set  # the current session's limits seen so far (cgroup OOM kills)
    cpu_sample: Callable[[], Any] | None = None  # the session's control group's CPU counters (cpu_usage.py)
    extend_backstop: Callable[[float], None] = lambda s: None  # the sandbox's own wall-clock backstop

    def attach(self, session: KernelSession) -> None:
        """Measure this session's CPU next to the wall clock, where its sandbox can (a run's control group)."""
        group = getattr(session, "group", None)
        sample = getattr(group, "cpu_sample", None)
        self.cpu_sample = sample if sample is not None and sample() is not None else None
        watcher = getattr(session, "watcher", None)
        self.extend_backstop = getattr(watcher, "extend", None) or (lambda s: None)

    def clock(self) -> CellClock | None:
        """A fresh clock for one cell (None: no CPU counters, the wall clock alone decides)."""
        if self.cpu_sample is None:
            return None
        return CellClock(
            self.cpu_sample,
            cores=self.limits.cpu_cores_implied,
            backstop_factor=self.limits.wall_backstop_factor,
            on_more=self.extend_backstop,  # the sandbox must not kill a cell the clock lets run on
        )

    def give_back(self, wall_s: float) -> None:
        """Time the grader's own setup took is not taken from the learner's run (nor from its backstop)."""
        self.deadline += wall_s
        self.extend_backstop(wall_s)

    def settle(self, clock: CellClock | None) -> None:
        """The time a cell ran on past its limit, held back by the host, is given back to the run."""
        if clock is None:
            return
        clock.stop()
        self.deadline += clock.extended_s

    def left_s(self) -> float:
        return self.deadline - time.monotonic()

    def grader_left_s(self) -> float:
        """The grader's cells share the run's time; past it, only a fixed grace to read earlier answers."""
        return self.deadline + GRADER_GRACE_S - time.monotonic()


def _connect(session: KernelSession) -> KernelIO:
    km = session.km
    io = None
    try:
        io = KernelIO(
            urls=session.channel_urls(),
            key=km.session.key,
            signature_scheme=km.session.signature_scheme,
            is_alive=km.is_alive,
        )
        io.wait_ready(CONNECT_TIMEOUT_S)
        return io
    except Exception as exc:
        if io is not None:
            io.close()  # a sandbox that hands over unusable channels is ours to fix
        raise GraderFault(f"kernel failed to start or respond: {exc}") from exc


def _run_attempt(
    session: KernelSession, learner, *, run: _Run, skip: dict[int, CellReport], last_attempt: bool
) -> _Attempt:
    attempt = _Attempt()
    io = _connect(session)
    try:
        seeded_at = time.monotonic()
        _run_grader_cell(io, run.plan.seed, run=run, fatal=True)
        run.give_back(time.monotonic() - seeded_at)  # so is the seed cell's: a busy host slows both
        for i, cell in enumerate(learner):
            if i in skip:
                attempt.reports[i] = skip[i]
                continue
            with run.observer.phase(CELL, index=i) as seen:
                lost = _run_learner_cell(io, i, cell.source, run=run, attempt=attempt, total=len(learner))
                seen["status"] = attempt.reports[i].status
            if lost:
                if not last_attempt and run.left_s() > 0:  # a restart past the run's limit would only skip
                    attempt.restart_for = i
                else:
                    _give_up(i, learner, plan=run.plan, skip=skip, attempt=attempt, result=run.result, lang=run.lang)
                return attempt
        _run_extractions(io, run=run)
    finally:
        io.close()
    return attempt


def _give_up(
    i: int, learner, *, plan: GraderPlan, skip: dict[int, CellReport], attempt: _Attempt, result: Execution, lang: str
) -> None:
    """No restarts left: the kernel is gone, so later cells and the answers are lost, and say so."""
    message = t("kernel_lost", lang, index=i)
    attempt.reports[i].message = message
    for k in range(i + 1, len(learner)):
        attempt.reports[k] = skip.get(k) or CellReport(index=k, status="skipped", message=message)
    for cell in plan.extract:
        for label in cell.labels:
            result.extract_failures[label] = message


def _grader_collector() -> OutputCollector:
    """A grader cell keeps only its answers payload (the learner's code may print during its calls)."""
    return OutputCollector(max_bytes=GRADER_OUTPUT_BYTES, keep=lambda out: ANSWERS_MIME in out.get("data", {}))


def _run_grader_cell(io: KernelIO, cell: GraderCell, *, run: _Run, fatal: bool) -> CellRun:
    left = run.grader_left_s()
    nonce = run.plan.nonce
    limits = cell.step_limits
    clock = run.clock()
    done = io.execute(
        cell.source,
        limit_s=max(min(limits[0] if limits else cell.budget_s, left), 0.0),
        collector=_grader_collector(),
        store_history=False,
        iopub_s=min(GRADER_IOPUB_S, max(left, 1.0)),
        run_cap=False,
        step=(lambda out: payload_of(out, nonce=nonce) is not None) if limits else None,
        step_limits=limits,
        cap_s=max(left, 0.0),
        clock=clock,
    )
    run.settle(clock)
    if done.status in ("timeout", "hung"):
        grader_timeout(cell, done, clock)
    if cell.harness and done.status == "error":
        launcher_raised(cell, done, run.result)
    if fatal and done.status != "ok":
        detail = f"{done.reply.get('ename', done.status)}: {done.reply.get('evalue', '')}"
        raise GraderFault(f"grader {cell.label} cell failed ({str(detail)[:300]})")
    if done.flooded:
        run.result.hit(OUTPUT)
    return done


def _run_learner_cell(io: KernelIO, i: int, source: str, *, run: _Run, attempt: _Attempt, total: int) -> bool:
    """Run learner cell i; True if the kernel died or hung in it (the caller restarts without it)."""
    limits, lang, result = run.limits, run.lang, run.result
    remaining = run.left_s()
    if remaining <= 0:
        result.hit(TIME)
        attempt.reports[i] = CellReport(
            index=i, status="skipped", message=t("run_timeout", lang, limit_s=limits.run_timeout_s, index=i)
        )
        return False
    if io.run_charged > RUN_TRAFFIC_BYTES:
        result.hit(OUTPUT)
        attempt.reports[i] = CellReport(index=i, status="skipped", message=t("run_output", lang, index=i))
        return False
    run.progress(Cell(index=i, total=total))
    room = min(limits.max_output_kb * 1024, max(RUN_KEPT_BYTES - run.kept_bytes, 0))
    marker = t("output_truncated_marker", lang, limit_kb=limits.max_output_kb)
    collector = OutputCollector(max_bytes=room, marker=marker)
    cell_limit = min(limits.cell_timeout_s, remaining)
    started = time.monotonic()
    clock = run.clock()
    done = io.execute(
        source, limit_s=cell_limit, collector=collector, store_history=True, iopub_s=LEARNER_IOPUB_S, clock=clock
    )
    run.settle(clock)
    if done.status in ("timeout", "hung") and clock is not None and clock.starved:
        raise GraderFault(f"{STARVED} learner cell {i} ({clock.describe()}); {RETRIED}", retryable=True)
    took = round(time.monotonic() - started, 3)
    attempt.outputs[i] = done.outputs
    run.kept_bytes += room - collector.budget.remaining
    if done.truncated or done.flooded:
        result.hit(OUTPUT)
        note = t("output_truncated", lang, index=i, limit_kb=limits.max_output_kb)
        if note not in result.messages:
            result.messages.append(note)
    over_memory = "memory limit" in run.poll_limits()  # the run's control group OOM-killed one of its processes
    if over_memory:
        result.hit("memory limit")
    if done.status == "dead":
        message = (
            t("memory_killed", lang, index=i, limit_mb=limits.memory_mb)
            if over_memory
            else t("kernel_died", lang, index=i)
        )
        attempt.reports[i] = CellReport(index=i, status="killed", message=message, duration_s=took)
        return True
    if done.flooded and done.status != "dead":  # its traffic may go on in the kernel's queues: start afresh
        attempt.reports[i] = CellReport(
            index=i, status="error", message=t("output_flood", lang, index=i), duration_s=took
        )
        return True
    if done.status in ("timeout", "hung"):
        if done.status == "timeout" or time.monotonic() - started >= cell_limit:
            result.hit(TIME)
        if cell_limit < limits.cell_timeout_s:
            message = t("run_timeout", lang, limit_s=limits.run_timeout_s, index=i)
        else:
            message = t("cell_timeout", lang, index=i, limit_s=limits.cell_timeout_s)
        if done.status == "hung":
            message = t("kernel_hung", lang, index=i)
        if over_memory:  # e.g. a cell that waited on processes the memory limit killed
            message = f"{t('memory_limit_cell', lang, index=i, limit_mb=limits.memory_mb)}; {message}"
        attempt.reports[i] = CellReport(index=i, status="timeout", message=message, duration_s=took)
        return done.status == "hung"
    message = ""
    status = done.status
    if status == "error":
        reply = done.reply
        error = f"{reply.get('ename', 'Error')}: {reply.get('evalue', '')}"[:300]
        message = t("cell_error", lang, index=i, error=error)
    elif done.malformed:  # the kernel sent what the grader cannot read: the learner's error for this cell
        status, message = "error", t("kernel_message_unreadable", lang, index=i, what=done.malformed[0])
    if over_memory:
        note = t("memory_limit_cell", lang, index=i, limit_mb=limits.memory_mb)
        status, message = "error", f"{note}; {message}" if message else note
    attempt.reports[i] = CellReport(index=i, status=status, message=message, duration_s=took)
    return False


def _run_extractions(io: KernelIO, *, run: _Run) -> None:
    """Run the extraction cells in order; once the kernel is gone, the rest fail with the same reason."""
    gone: str | None = None
    for cell in run.plan.extract:
        if gone is not None:
            for label in cell.labels:
                run.result.extract_failures.setdefault(label, gone)
        else:
            gone = _run_extraction(io, cell, run=run)


def _run_extraction(io: KernelIO, cell: GraderCell | None, *, run: _Run) -> str | None:
    """Run one extraction cell (and, for calls, the rest of them after an interrupted one); keep its
    payloads; returns why the kernel is gone, if it is."""
    while cell is not None:
        gone, cell = _run_extraction_once(io, cell, run=run)
        if gone is not None:
            return gone
    return None


def _run_extraction_once(io: KernelIO, cell: GraderCell, *, run: _Run) -> tuple[str | None, GraderCell | None]:
    """One extraction cell: (why the kernel is gone, if it is; the cell of calls still to make, if any)."""
    result, lang = run.result, run.lang
    if run.grader_left_s() <= 0:
        result.hit(TIME)
        for label in cell.labels:
            result.extract_failures[label] = t("checking_timeout", lang, where=label)
        return result.extract_failures[cell.labels[0]], None
    done = _run_grader_cell(io, cell, run=run, fatal=False)
    if done.status in ("timeout", "hung"):
        result.hit(TIME)
    if not cell.parts:
        gone = _kernel_gone(done, where=cell.label, lang=lang)
        payload = read_payload(done.outputs, nonce=run.plan.nonce)
        sized = payload is None and done.over_size
        _keep(run, cell.label, payload, done, gone=gone, too_big=sized)
        return gone, None
    calls = call_results(cell, done, nonce=run.plan.nonce)
    ended = next(reversed(calls.payloads))  # the part the cell ended in (its last part if it ran them all)
    gone = _kernel_gone(done, where=ended, lang=lang)
    if done.status == "dead" and ended != cell.parts[-1].label:
        # A kernel that dies takes with it the results its iopub thread had not yet sent: the last ones of
        # the part before the fatal call may be lost, so the part that seems to end the cell may not be
        # the one that killed it. The run is done again with one cell per part, where a part's results
        # are all read before the next part starts (run_notebook), so no check is blamed for another's.
        run.unsure_death = True
    for label, payload in calls.payloads.items():
        if gone is not None and label == ended and calls.ended_early:
            payload = None  # the calls after its interrupted one can never run: the check fails as a whole
        _keep(run, label, payload, done, gone=gone if label == ended else None, too_big=label in calls.too_big)
    if gone is not None:
        for label in cell.labels:
            if label not in calls.payloads:  # parts the cell never reached
                result.extract_failures.setdefault(label, gone)
        return gone, None
    return None, run.plan.rest_of(cell, calls.covered) if calls.ended_early else None


def _kernel_gone(done: CellRun, *, where: str, lang: str) -> str | None:
    return {
        "dead": t("kernel_died_checking", lang, where=where),
        "hung": t("checking_timeout", lang, where=where),
    }.get(done.status)


def _keep(
    run: _Run, label: str, payload: dict[str, Any] | None, done: CellRun, *, gone: str | None, too_big: bool
) -> None:
    """Keep one label's payload, counted against the run's answer cap, or say why there is none."""
    result, lang = run.result, run.lang
    if too_big or (payload is not None and not run.plan.admit_payload(payload)):  # the run's answer cap
        result.hit("answer limit")
        result.payloads.pop(label, None)
        result.extract_failures[label] = t("answers_too_large", lang, limit_mb=MAX_ANSWER_BYTES // 2**20)
    elif payload is None:
        result.payloads.pop(label, None)
        result.extract_failures[label] = gone or t(
            "checking_timeout" if done.status == "timeout" else "answers_unreadable", lang, where=label
        )
    else:
        _merge_payload(result, label, payload)


def _merge_payload(result: Execution, label: str, payload: dict[str, Any]) -> None:
    """Per-call cells of one check add their call results to the check's payload, in order."""
    have = result.payloads.get(label)
    if have is None:
        result.payloads[label] = payload
        return
    for check, calls in (payload.get("calls") or {}).items():
        kept = have.setdefault("calls", {}).get(check)
        if isinstance(kept, list) and isinstance(calls, list):
            kept.extend(calls)
