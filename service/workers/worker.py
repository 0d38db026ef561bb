"""The worker loop: reap expired leases, claim what this host can run, heartbeat, store fenced results.

Slots follow lanes: `short_reserved_slots` slots never take long-lane jobs, so a quiz never waits behind a
training run. The executor and device inventory are injected (chosen once by the caller); what each
lease write is (heartbeat, renewal, reaping) lives in service/workers/leases.py.

The loop outlives every error of its own: while the database is unreachable it backs off and retries
(service/outage.py), keeping finished outcomes in memory until they are stored (fenced by the lease as
always); any other error while handling one job ends that job as a grader fault and the loop goes on.
"""

from __future__ import annotations

import functools
import logging
import os
import queue as stdlib_queue
import socket
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from grading.errors import HostBusy
from grading.sandbox import DeviceGrant
from service import signals
from service.config import Settings
from service.db import transaction
from service.errors import clip
from service.outage import Backoff, Retrier, describe, is_unavailable
from service.queue import service as queue
from service.queue.service import ClaimedJob
from service.states import JobStatus
from service.telemetry import logs
from service.telemetry.spans import GradingTelemetry
from service.workers import outcomes
from service.workers.executor import ExecutionResult, Executor, Faulted, GradingTicket, NotStarted
from service.workers.leases import Leases

log = logging.getLogger("titangrade.worker")
_WAKE = -1  # put on the done-queue by a wake-up: not a job id, "look at the queue now"
READY_TIMEOUT_S = 60.0  # the most a starting worker waits for its executor before claiming anyway


@dataclass(slots=True)
class _InFlight:
    job: ClaimedJob
    grant: DeviceGrant
    future: Future
    started: float = field(default_factory=time.monotonic)
    outcome: ExecutionResult | None = None  # set when grading ended; the flight stays until the outcome is stored


class Worker:
    """One worker process's scheduler; `run()` blocks until `stop` is set (or the queue drains in burst mode)."""

    def __init__(
        self,
        *,
        settings: Settings,
        sessions: sessionmaker[Session],
        executor: Executor,
        devices,
        worker_id: str | None = None,
        telemetry: GradingTelemetry | None = None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.executor = executor
        self.devices = devices
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.stop = threading.Event()
        self.telemetry = telemetry or GradingTelemetry.from_settings(settings)  # spans and phase histograms
        self._inflight: dict[int, _InFlight] = {}
        self._done: stdlib_queue.Queue[int] = stdlib_queue.Queue()
        self._lock = threading.Lock()
        self.stored = 0  # grades this worker stored (for tests and logs)
        self.leases = Leases(settings=settings, sessions=sessions, worker_id=self.id)
        self._retry = Retrier.from_settings(settings, who=f"worker {self.id}", log=log)
        # hand-backs for a host shortage wait longer while they follow each other (reset when a job runs)
        self._shortage = Backoff(
            base_s=settings.retry_backoff_s, cap_s=max(settings.retry_backoff_s, settings.not_started_max_s)
        )
        self.outage = self._retry.outage

    # -- lifecycle ---------------------------------------------------------------------------------
    def run(self, *, burst: bool = False) -> None:
        """Schedule until `stop` (or, in burst mode, until the queue is empty); returns only then."""
        while not self.stop.is_set():  # a worker started while the database is down waits for it
            try:
                self._beat()
                break
            except Exception as exc:
                self._loop_failed(exc, doing="registering the worker")
        self.executor.wait_ready(timeout_s=READY_TIMEOUT_S)  # no lease is taken before grading can start
        beater = threading.Thread(target=self._heartbeat_loop, name="tg-heartbeat", daemon=True)
        beater.start()
        # New work wakes the loop at once: a commit in this process (serve: API and worker together), or
        # NOTIFY from another process on PostgreSQL; poll_s is only the fallback (SQLite across processes).
        unsubscribe = signals.subscribe(signals.JOBS, lambda _key: self.wake())
        retry = {"retry_base_s": self.settings.db_retry_base_s, "retry_max_s": self.settings.db_retry_max_s}
        listener = signals.listen_if_postgresql(self.settings.database_url, (signals.JOBS,), **retry)
        try:
            while not self.stop.is_set():
                try:
                    if self._step(burst=burst):
                        break
                except Exception as exc:  # nothing ends the loop but `stop`
                    self._loop_failed(exc, doing="scheduling")
                else:
                    self._retry.succeeded(held=self._held_text())
        finally:
            unsubscribe()
            if listener is not None:
                listener.close()
            self.stop.set()
            self._drain()

    def _step(self, *, burst: bool) -> bool:
        """One round: store held outcomes, reap, claim, collect; True when a burst run is done. After an
        error the round starts with a heartbeat (a write), so only a database that answers ends an outage."""
        if self.outage.down:  # the writes the heartbeat makes: a half-full disk may take one and not the other
            self._beat()
            self._renew()
        self._store_held()
        self._reap()
        if clean := self.devices.recheck_quarantined():
            log.warning("worker %s: devices %s are clean again and rejoin the pool", self.id, clean)
        claimed = self._fill_slots()
        # idle: a wake-up ends the wait; the heartbeat bound keeps lease reaping on time whatever poll_s
        self._collect(timeout=0 if claimed else min(self.settings.poll_s, self.settings.heartbeat_s))
        return burst and not claimed and not self._inflight and self._queue_empty()

    def _loop_failed(self, exc: Exception, *, doing: str) -> None:
        """Back off after an error of the loop: a database outage is waited out, anything else is logged
        with its traceback (a job it concerned was already ended as a grader fault) and retried."""
        delay_s = self._retry.failed(exc, doing=doing, held=self._held_text())
        deadline = time.monotonic() + delay_s
        while not self.stop.is_set() and (left_s := deadline - time.monotonic()) > 0:
            try:  # gradings that end meanwhile: their outcome is taken now and held until it can be stored
                job_id = self._done.get(timeout=left_s)
            except stdlib_queue.Empty:
                return
            if job_id != _WAKE:
                self._settle(job_id)

    def _held_text(self) -> str:
        with self._lock:
            held = sum(1 for f in self._inflight.values() if f.outcome is not None)
            running = len(self._inflight) - held
        return f"{held} finished result(s) held in memory, {running} job(s) still grading"

    def request_stop(self) -> None:
        """Stop after the current step; safe in a signal handler (the wake-up is put from a new thread, so
        it never waits on a queue lock the interrupted main thread holds). Running jobs drain as on SIGTERM."""
        self.stop.set()
        threading.Thread(target=self.wake, name="tg-stop", daemon=True).start()

    def wake(self) -> None:
        """Look at the queue now instead of at the next poll (thread-safe; called from commit hooks)."""
        self._done.put(_WAKE)

    def _drain(self) -> None:
        """On a graceful stop: give running jobs `shutdown_grace_s` to finish, then hand the rest back to
        the queue at once (not counted as an attempt) instead of making them wait for lease expiry."""
        deadline = time.monotonic() + self.settings.shutdown_grace_s
        while self._inflight and time.monotonic() < deadline:
            try:
                self._renew()
                self._store_held()
                self._collect(timeout=min(self.settings.heartbeat_s, 0.5))
            except Exception as exc:
                if not is_unavailable(exc):
                    log.exception("worker %s: error while draining", self.id)
                time.sleep(min(0.5, max(deadline - time.monotonic(), 0)))
        with self._lock:
            leftover = list(self._inflight.values())
            self._inflight.clear()
        for flight in leftover:
            if flight.outcome is None:
                self.devices.release(flight.grant)
            try:
                with transaction(self.sessions) as s:
                    released = queue.release(s, job=flight.job, reason=f"worker {self.id} shut down")
            except Exception as exc:  # the lease expires and the job is reclaimed: nothing is lost
                log.warning(
                    "worker %s could not hand job %s back (%s); it is reclaimed when its lease expires",
                    self.id,
                    flight.job.job_id,
                    describe(exc),
                )
                continue
            log.info("worker %s handed job %s back to the queue: %s", self.id, flight.job.job_id, released)
        self.executor.shutdown()

    # -- scheduling --------------------------------------------------------------------------------
    def _lanes_open(self) -> tuple[str, ...] | None:
        """Lanes a free slot may take now (None = no free slot); reserved slots never take long jobs."""
        busy = len(self._inflight)
        if busy >= self.settings.worker_slots:
            return None
        long_busy = sum(1 for f in self._inflight.values() if f.job.lane == "long")
        return ("short", "long") if long_busy < self._long_cap() else ("short",)

    def _long_cap(self) -> int:
        slots, reserved = self.settings.worker_slots, self.settings.short_reserved_slots
        return slots - reserved if slots > 1 else 1

    def _fill_slots(self) -> int:
        claimed = 0
        while (lanes := self._lanes_open()) is not None:
            fits = self.executor.placeable()  # a cluster says which job shapes it can start now
            if fits is not None:
                fits = [f for f in fits if f[0] in lanes]
                if not fits:
                    return claimed
            free = self.devices.free if fits is None else max(d for _, d, _ in fits)
            with transaction(self.sessions) as s:
                job = queue.claim(
                    s,
                    worker_id=self.id,
                    lanes=lanes,
                    free_devices=free,
                    fits=fits,
                    installed_devices=None if fits is not None else self.devices.installed,
                    max_world_size=self.settings.worker_max_world_size,
                    lease_s=self.settings.lease_s,
                    policy=self.settings.queue_policy,
                    max_running_per_learner=self.settings.max_running_per_learner,
                )
            if job is None:
                return claimed
            self._start(job)
            claimed += 1
        return claimed

    @logs.job_scoped(lambda self, job: job)
    def _start(self, job: ClaimedJob) -> None:
        """Hand a claimed job to the executor; one that cannot be started ends as a grader fault (retried)."""
        self.telemetry.claimed(job, worker_id=self.id)
        grant = DeviceGrant()
        try:
            if not self.executor.grants_devices:
                grant = self.devices.acquire(job.devices, cpu_fallback=job.cpu_fallback)
            ticket = GradingTicket(
                job_id=job.job_id,
                submission_id=job.submission_id,
                lease_token=job.lease_token,
                device_kind=grant.kind,
                device_ids=tuple(grant.ids),
                lane=job.lane,
                devices=job.devices,
                world_size=job.world_size,
            )
            future = self.executor.submit(ticket)
        except HostBusy as exc:  # its devices are held right now: nothing ran, so no attempt is counted
            log.info("worker %s hands job %s back: %s", self.id, job.job_id, clip(exc, 300))
            future = Future()
            future.set_result(NotStarted(f"{exc.resource} busy: {clip(exc, 300)}"))
        except Exception as exc:
            log.exception("worker %s could not start job %s", self.id, job.job_id)
            future = Future()
            future.set_result(
                Faulted(f"the grading could not be started: {type(exc).__name__}: {clip(exc, 300)}", retryable=True)
            )
        with self._lock:
            self._inflight[job.job_id] = _InFlight(job=job, grant=grant, future=future)
        future.add_done_callback(functools.partial(self._finished, job.job_id))
        log.info(
            "worker %s claimed job %s (submission %s, attempt %s)", self.id, job.job_id, job.submission_id, job.attempt
        )

    def _finished(self, job_id: int, _future: Future[ExecutionResult]) -> None:
        self._done.put(job_id)  # runs on the executor's thread; the worker loop collects it

    def _collect(self, *, timeout: float) -> None:
        try:
            job_id = self._done.get(timeout=timeout) if timeout else self._done.get_nowait()
        except stdlib_queue.Empty:
            return
        while True:
            if job_id != _WAKE:
                self._finish(job_id)
            try:
                job_id = self._done.get_nowait()
            except stdlib_queue.Empty:
                return

    def _finish(self, job_id: int) -> None:
        flight = self._settle(job_id)
        if flight is not None:
            self._store_flight(flight)

    def _settle(self, job_id: int) -> _InFlight | None:
        """Take a finished grading's outcome and free its devices (once); the flight stays until stored."""
        with self._lock:
            flight = self._inflight.get(job_id)
        if flight is None or flight.outcome is not None:
            return flight
        dirty = self.devices.release(flight.grant)
        if dirty:
            log.error(
                "worker %s quarantined %s devices %s left busy by job %s", self.id, flight.grant.kind, dirty, job_id
            )
        try:
            flight.outcome = flight.future.result()
        except Exception as exc:
            if is_unavailable(exc):  # the grading could not even load the submission: not an attempt
                flight.outcome = NotStarted(f"the database was unreachable when grading began ({describe(exc)})")
            else:  # the grading process (or its node) died: our fault, retry
                flight.outcome = Faulted(f"grading process died: {type(exc).__name__}: {exc}", retryable=True)
        return flight

    def _store_held(self) -> None:
        """Store the outcomes kept in memory while the database was unreachable (oldest first)."""
        with self._lock:
            held = sorted((f for f in self._inflight.values() if f.outcome is not None), key=lambda f: f.started)
        for flight in held:
            self._store_flight(flight)

    @logs.job_scoped(lambda self, flight: flight.job)
    def _store_flight(self, flight: _InFlight) -> None:
        """Store one finished job's outcome and free its slot; the database unreachable: raise, it stays held."""
        storing = self.telemetry.storing(job=flight.job, outcome=flight.outcome)
        state = outcomes.store_or_fault(flight, store=self._store_in_transaction, who=f"worker {self.id}")
        storing.done(state=state)
        with self._lock:
            self._inflight.pop(flight.job.job_id, None)
        log.info("worker %s job %s: %s", self.id, flight.job.job_id, state)

    def _store_in_transaction(self, job: ClaimedJob, outcome: ExecutionResult) -> str:
        with transaction(self.sessions) as s:
            done = outcomes.store(
                s, job=job, outcome=outcome, retry_backoff_s=self.settings.retry_backoff_s, shortage=self._shortage
            )
        self.stored += done.graded  # counted once committed
        if done.wake_after_s is not None:
            self._wake_after(done.wake_after_s)
        return done.state

    def _wake_after(self, delay_s: float) -> None:
        """A job requeued with a backoff becomes claimable later: wake then, not a poll later (the commit's
        own wake-up covers a zero delay)."""
        if delay_s > 0:
            timer = threading.Timer(delay_s, self.wake)
            timer.daemon = True
            timer.start()

    def _queue_empty(self) -> bool:
        with transaction(self.sessions) as s:
            return not queue.depth_by_lane(s) and not queue.jobs_by_status(s).get(JobStatus.RUNNING)

    # -- leases and liveness (what each write is: service/workers/leases.py) ---------------------------
    def _reap(self) -> None:
        """Requeue expired leases, at most once per heartbeat interval (it is a write transaction)."""
        if not self.leases.reap_due():
            return
        if not self.leases.fresh:  # after an outage our own leases may look expired: renew them first
            self._renew()
        self.leases.reap()

    def _renew(self) -> None:
        with self._lock:
            held = [f.job for f in self._inflight.values()]
        lost = self.leases.renew(held)
        with self._lock:  # a job stored meanwhile is not lost
            lost = {job_id for job_id in lost if job_id in self._inflight}
        for job_id in lost:
            log.warning("worker %s lost the lease on job %s; its result will be discarded", self.id, job_id)

    def _beat(self) -> None:
        devices, kind = self.executor.offered_devices() or (self.devices.count, self.devices.kind)
        self.leases.beat(
            slots=self.settings.worker_slots, devices=devices, device_kind=kind, long_slots=self._long_cap()
        )

    def _heartbeat_loop(self) -> None:
        while not self.stop.wait(self.settings.heartbeat_s):
            try:
                self._beat()
                self._renew()
            except Exception as exc:  # a DB blip must not kill the heartbeat; the lease has slack
                if not is_unavailable(exc):
                    log.exception("worker %s: heartbeat failed", self.id)
                elif not self.outage.down:
                    self.outage.failed(exc, doing="renewing leases", retry_in_s=None, held=self._held_text())
