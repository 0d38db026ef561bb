"""Where grading runs: one `Executor` interface, chosen once at start-up (service/wiring.py): a local
process pool (here), or Ray (service/workers/ray_executor.py).

An executor receives a `GradingTicket` (ids only), opens its own DB session to read the notebook, streams
progress events into the database, and returns one `ExecutionResult`: `Graded(result)`,
`Faulted(reason, retryable)` or `NotStarted(reason)`. It never stores the grade: the worker does that,
fenced by the lease token.
"""

from __future__ import annotations

import abc
import concurrent.futures as cf
import contextlib
import logging
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from grading.observer import NO_OBSERVER, GradingObserver
from grading.progress import Done, Event
from grading.result import GradeResult
from service.config import Settings
from service.telemetry import logs
from service.telemetry.phases import Phase, PhaseRecorder
from service.workers.engines import engine_spec, grading_engine

log = logging.getLogger("titangrade.executor")


@dataclass(frozen=True, slots=True, kw_only=True)
class GradingTicket:
    """One job handed to an executor; validated again on the executing side."""

    job_id: int
    submission_id: str
    lease_token: str
    device_kind: str = "cpu"
    device_ids: tuple[int, ...] = ()
    lane: str = "short"  # the job's shape, from its queue row (a cluster executor sizes its reservation by it)
    devices: int = 0
    world_size: int = 1


@dataclass(frozen=True, slots=True)
class Graded:
    """The engine ran and produced a GradeResult; the worker stores it, or retries a
    result whose status is not_gradable (a fault the engine caught itself)."""

    result: GradeResult
    phases: tuple[Phase, ...] = ()  # what the grading process timed (service/telemetry/phases.py)


@dataclass(frozen=True, slots=True)
class Faulted:
    """Grading could not produce a result; our fault, never the learner's. `retryable` asks for another
    attempt (until max_attempts); otherwise the submission is not_gradable at once."""

    reason: str
    retryable: bool
    phases: tuple[Phase, ...] = ()


@dataclass(frozen=True, slots=True)
class NotStarted:
    """The job never began on its node (the node is gone, or would not reserve what the job needs): the
    worker hands it back to the queue at once and the attempt does not count, as on a graceful shutdown."""

    reason: str


ExecutionResult = Graded | Faulted | NotStarted  # what an executor's future yields


class ExecutorUnavailable(RuntimeError):
    """The chosen backend cannot start (not installed, cluster unreachable); the message names the fix."""


class Executor(abc.ABC):
    name = "abstract"
    grants_devices = False  # True: the backend assigns devices where the job runs (Ray), not the worker

    def placeable(self) -> list[tuple[str, int, int]] | None:
        """(lane, devices, world_size) job shapes that can start now; None = the worker's own slots and
        device inventory decide (local)."""
        return None

    def offered_devices(self) -> tuple[int, str] | None:
        """(count, kind) of the largest group of one accelerator kind a job can get (what the heartbeat
        offers, and so what intake accepts); None = the worker's own inventory (local)."""
        return None

    @abc.abstractmethod
    def submit(self, ticket: GradingTicket) -> cf.Future:
        """Start grading; the future yields an `ExecutionResult` (Graded, Faulted or NotStarted)."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Stop now: cancel queued work and stop running work (its results would be fenced off anyway)."""

    def wait_ready(self, timeout_s: float) -> None:  # noqa: B027  (optional hook)
        """Block until the backend can start jobs at once (the worker claims nothing before); no-op by default."""


# ---- executing side (runs in a pool process) -------------------------------------------------------

_CHILD: dict = {}


def _die_with_parent(parent_pid: int) -> None:
    """Linux: a SIGKILLed worker takes its grading processes with it, so no orphan keeps grading."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() != parent_pid:  # the parent died while this process was still starting
        os._exit(1)


def _init_child(
    parent_pid: int,
    database_url: str,
    sandbox_mode: str,
    exercises_root: str,
    reference_root: str,
    prewarm: dict[str, int],
    sandbox_options: dict | None = None,
    prewarm_keys: int = 4,
    events_relay: str | None = None,
    ledger_dir: str | None = None,
    engine: tuple[str, tuple[tuple[str, float], ...]] = ("notebook", ()),
) -> None:
    _die_with_parent(parent_pid)
    logs.configure(level=logging.WARNING)  # a spawned process starts unconfigured; warnings carry the job's ids
    from grading.exercise import Catalogue
    from grading.sandbox import make_sandbox
    from service import bootstrap, signals
    from service.db import make_engine

    if events_relay is not None:  # progress committed here wakes the worker process's event streams (serve)
        signals.forward_to_relay(events_relay, signals.EVENTS)

    if ledger_dir is not None:  # which job this process runs, for the worker if the pool breaks
        from service.workers.not_started import PoolLedger

        _CHILD["ledger"] = PoolLedger(ledger_dir)
    _CHILD["sessions"] = bootstrap.sessions(make_engine(database_url))
    _CHILD["engine"] = grading_engine(*engine)
    _CHILD["catalogue"] = Catalogue(Path(exercises_root), Path(reference_root))
    _CHILD["sandbox"] = make_sandbox(
        sandbox_mode, prewarm=prewarm or None, prewarm_keys=prewarm_keys, **(sandbox_options or {})
    )
    if prewarm:
        _prepare_recent(
            _CHILD["sandbox"], _CHILD["catalogue"], _CHILD["sessions"], families=set(prewarm), limit=prewarm_keys
        )


PREPARE_RECENT = 2  # at most this many exercises' kernels a new pool process warms before its first job


def _prepare_recent(sandbox, catalogue, sessions, *, families: set[str], limit: int) -> None:
    """Warm kernels for the exercises submitted most recently (a kernel is keyed by its exercise's limits
    and hidden modules), so the first job after a (re)start need not wait for a cold one. Others warm
    after their first job in this process."""
    from sqlalchemy import select

    from grading.pipeline import kernel_request
    from service.submissions.models import Submission

    try:
        with sessions() as session:
            recent = session.scalars(select(Submission.exercise_id).order_by(Submission.created_at.desc()).limit(200))
            ids = list(dict.fromkeys(recent))
            session.commit()
    except Exception:  # an empty or unreachable database: nothing to guess from
        return
    picked = [catalogue.get(i) for i in ids if i in catalogue]
    for exercise in [e for e in picked if e.manifest.kernel_family in families][: min(limit, PREPARE_RECENT)]:
        sandbox.prepare(kernel_request(exercise))


def _ready() -> int:
    """A no-op job: submitting one per slot starts the pool processes (and their warm kernels) at once."""
    return os.getpid()


def grade_ticket(ticket: GradingTicket) -> ExecutionResult:
    """Load the submission by id, grade it with progress written to the DB, return the result or a fault."""
    ledger = _CHILD.get("ledger")
    recorder = PhaseRecorder()  # the phases travel back with the outcome: the worker makes the spans
    if ledger is None:
        return recorder.attach(_grade_ticket(ticket, observer=recorder))
    ledger.started(ticket.job_id)
    try:
        return recorder.attach(_grade_ticket(ticket, observer=recorder))
    finally:
        ledger.finished(ticket.job_id)


@logs.job_scoped(lambda ticket, **_: ticket)
def _grade_ticket(ticket: GradingTicket, *, observer: GradingObserver = NO_OBSERVER) -> ExecutionResult:
    from grading.errors import GraderFault, HostBusy, InvalidSubmission
    from grading.sandbox import DeviceGrant
    from service.outage import is_unavailable
    from service.queue.models import Job
    from service.submissions.models import Submission
    from service.workers.not_started import FirstStartWatch
    from service.workers.progress import ProgressWriter

    sessions = _CHILD["sessions"]
    try:
        with sessions() as session:
            job = session.get(Job, ticket.job_id)
            sub = session.get(Submission, ticket.submission_id)
            if job is None or sub is None or job.submission_id != sub.id or job.lease_token != ticket.lease_token:
                return Faulted(f"stale ticket for job {ticket.job_id}: lease no longer held", retryable=False)
            notebook, exercise_id, lang = sub.notebook, sub.exercise_id, sub.lang
            session.commit()
    except Exception as exc:  # the database went away between the claim and this read: nothing ran yet
        if is_unavailable(exc):
            return NotStarted(f"database unreachable while loading the submission ({type(exc).__name__})")
        raise

    writer = ProgressWriter(
        sessions, submission_id=ticket.submission_id, job_id=ticket.job_id, lease_token=ticket.lease_token
    )

    def progress(event: Event) -> None:
        if not isinstance(event, Done):  # the worker writes 'done' with the stored grade, in the same transaction
            writer(event)

    sandbox = FirstStartWatch(_CHILD["sandbox"])
    grade_notebook = _CHILD.get("engine") or grading_engine("notebook")
    try:
        result = grade_notebook(
            notebook,
            exercise_id=exercise_id,
            catalogue=_CHILD["catalogue"],
            lang=lang,
            sandbox=sandbox,
            progress=progress,
            devices=DeviceGrant(kind=ticket.device_kind, ids=ticket.device_ids),
            observer=observer,
        )
        if sandbox.busy is not None:  # no kernel, no learner code: the queue keeps the job, unattempted
            return NotStarted(str(sandbox.busy))
    except HostBusy as exc:
        return NotStarted(str(exc))
    except GraderFault as exc:
        return Faulted(str(exc), retryable=exc.retryable)
    except InvalidSubmission as exc:  # valid at intake but not now (e.g. the exercise was removed)
        return Faulted(f"{exc.code}: {exc.message}", retryable=False)
    except Exception as exc:  # an engine bug is our fault: retry, then not_gradable
        return Faulted(f"{type(exc).__name__}: {exc}", retryable=True)
    finally:
        writer.close()
    return Graded(result)


# ---- local backend ---------------------------------------------------------------------------------


class LocalExecutor(Executor):
    """A process pool on this host. A crashed pool (e.g. an OOM-killed process) is rebuilt: the job whose
    process died is retried as an attempt, the jobs the pool stopped with it are handed back uncounted."""

    name = "local"

    def __init__(self, *, settings: Settings, processes: int) -> None:
        from service import signals
        from service.workers.not_started import PoolLedger

        self._relay = signals.DatagramRelay(signals.EVENTS)
        self.ledger = PoolLedger()  # which pool process runs which job: a broken pool counts only its own
        self._initargs = (
            os.getpid(),
            settings.database_url,
            settings.sandbox,
            str(settings.exercises_root),
            str(settings.reference_root),
            settings.prewarm_sizes(),
            settings.sandbox_options(),
            settings.prewarm_keys(),
            self._relay.address,
            self.ledger.path,
            engine_spec(settings),
        )
        self._processes = processes
        self._pool = self._new_pool()
        # start the pool processes now, not at the first submissions: a process's imports and sandbox set-up
        # take a second or two, which would otherwise fall inside the first jobs' leases (and warm kernels
        # start filling at once)
        self._starting = [self._pool.submit(_ready) for _ in range(processes)]

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        # spawn, not fork: the worker has threads (heartbeat) and DB connections that must not be copied.
        return cf.ProcessPoolExecutor(
            max_workers=self._processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_child,
            initargs=self._initargs,
        )

    def wait_ready(self, timeout_s: float) -> None:
        """Until every pool process has run its initializer (each answers with its pid), or `timeout_s`;
        a pool that broke meanwhile is rebuilt by the next submit."""
        deadline = time.monotonic() + timeout_s
        pids: set[int] = set()
        pending = self._starting
        while pending:
            done, _ = cf.wait(pending, timeout=max(deadline - time.monotonic(), 0))
            for future in done:
                with contextlib.suppress(Exception):
                    pids.add(future.result())
            if len(pids) >= self._processes or time.monotonic() > deadline or len(done) < len(pending):
                break
            time.sleep(0.02)  # a ready process took every probe while another still imports: ask again
            try:
                pending = [self._pool.submit(_ready) for _ in range(self._processes - len(pids))]
            except cf.process.BrokenProcessPool:
                break
        self._starting = []

    def submit(self, ticket: GradingTicket) -> cf.Future:
        try:
            inner = self._pool.submit(grade_ticket, ticket)
        except cf.process.BrokenProcessPool:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._new_pool()
            inner = self._pool.submit(grade_ticket, ticket)
        pool, outer = self._pool, cf.Future[ExecutionResult]()
        # runs on the pool's manager thread; for a broken pool, before it terminates the surviving processes
        inner.add_done_callback(lambda done: _settle(outer, self._outcome(ticket, done, pool)))
        return outer

    def _outcome(self, ticket: GradingTicket, done: cf.Future, pool: cf.ProcessPoolExecutor) -> ExecutionResult:
        """The job's outcome; a pool that broke under it costs an attempt only if its own process died."""
        from service.workers.not_started import dead_pool_pids

        try:
            outcome = done.result()
        except cf.process.BrokenProcessPool as exc:
            pid = self.ledger.pid_of(ticket.job_id)
            self.ledger.finished(ticket.job_id)
            dead = dead_pool_pids(dict(getattr(pool, "_processes", None) or {}))  # CPython's pool internals
            if pid is None or (dead and pid not in dead):
                outcome = NotStarted(
                    f"grading pool process {sorted(dead) or '?'} died; this job's run (pid {pid}) was stopped "
                    "with the pool and is repeated without counting an attempt"
                )
            else:
                outcome = Faulted(f"grading process {pid} died: {exc}", retryable=True)
        except Exception as exc:  # the job could not be handed over or returned: our fault, retry
            outcome = Faulted(f"grading process failed: {type(exc).__name__}: {exc}", retryable=True)
        if isinstance(outcome, NotStarted):
            log.warning("job %s not started, handed back to the queue to wait: %s", ticket.job_id, outcome.reason)
        return outcome

    def running(self) -> dict[int, int]:
        """job id -> pid of the pool process grading it now."""
        return self.ledger.running()

    def shutdown(self) -> None:
        processes = list((getattr(self._pool, "_processes", None) or {}).values())  # CPython's pool internals
        self._pool.shutdown(wait=False, cancel_futures=True)
        for proc in processes:  # a running grading would otherwise keep the process alive until it ends
            if proc.is_alive():
                proc.terminate()
        self._relay.close()
        self.ledger.close()


def _settle(future: cf.Future, outcome: ExecutionResult) -> None:
    if future.set_running_or_notify_cancel():
        future.set_result(outcome)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True
