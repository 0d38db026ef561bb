"""UploadWriter: one thread per API process that stores the uploads the requests have validated, many per
transaction (group commit).

Each request does its own authentication, parsing and validation concurrently, then hands an `Upload` to
the writer and awaits it. The writer takes everything queued (up to `max_batch`), stores it with
`batch.write` in one transaction and resolves each request once that transaction has committed, so a
202 is never sent for a row that is not stored. On SQLite this replaces eight threads queueing on the
single writer lock (and sleeping in its busy handler) with one writer that never waits for another
request; on PostgreSQL it turns N commits (N WAL flushes) into one.

Failures are scoped: one item's refusal (429, 403, 422) answers only that request. A database error
rolls the whole transaction back; the batch is then retried one item per transaction, so a row the
database refuses fails alone, and an unreachable database answers each request 503 (nothing stored).

While uploads keep coming the writer keeps its connection: a checkout per transaction cost a pool round
and, on PostgreSQL, a pre-ping (`SELECT 1`), one more round trip a batch. After a database error the
connection is dropped (the retry checks out a fresh, pinged one), and after `IDLE_RELEASE_S` without
uploads it goes back to the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from grading.messages import Message
from service.config import Settings
from service.errors import ServiceError
from service.messages import error
from service.outbox.receivers import Receivers
from service.submissions import batch

log = logging.getLogger("titangrade.intake")
MAX_BATCH = 64  # one transaction's uploads: bounds its size (10 KB-1 MB notebooks) and its lock hold time
IDLE_RELEASE_S = 1.0  # an idle writer hands its connection back to the pool after this long
RETRY_AFTER_S = 5


class UploadUnavailable(ServiceError):
    """The upload could not be stored now (database unreachable or failing, or the service stopping)."""

    status_code, code = 503, "intake_unavailable"

    def __init__(self, message: Message) -> None:
        super().__init__(message, headers={"Retry-After": str(RETRY_AFTER_S)})


def _db_failed(exc: Exception) -> UploadUnavailable:
    return UploadUnavailable(error("intake_db_failed", error=type(exc).__name__, retry_after_s=RETRY_AFTER_S))


def _stopping() -> UploadUnavailable:
    return UploadUnavailable(error("intake_stopping", retry_after_s=RETRY_AFTER_S))


@dataclass(slots=True)
class _Waiting:
    item: batch.Upload
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future


class UploadWriter:
    """Group commit of uploads for one process; `submit` from the event loop, `close` at shutdown."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        settings: Callable[[], Settings],
        *,
        max_batch: int = MAX_BATCH,
        receivers: Receivers | None = None,
    ) -> None:
        self.sessions = sessions
        self.settings = settings  # read per batch: the app's current settings
        self.receivers = receivers  # who listens for "submission received" (batch.write)
        self.max_batch = max_batch
        self.batches = 0  # transactions committed, and the uploads they held (tests and logs read them)
        self.stored = 0
        self._queue: deque[_Waiting] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._conn: Connection | None = None  # the writer thread's, between its transactions

    async def submit(self, item: batch.Upload) -> batch.Accepted:
        """Store `item` with whatever else is waiting; returns once it is committed, or raises its refusal."""
        loop = asyncio.get_running_loop()
        waiting = _Waiting(item, loop, loop.create_future())
        with self._cond:
            if self._closed:
                raise _stopping()
            if self._thread is None:  # started on first use: an app built without its lifespan still works
                self._thread = threading.Thread(target=self._run, name="tg-intake-writer", daemon=True)
                self._thread.start()
            self._queue.append(waiting)
            self._cond.notify()
        return await waiting.future

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, timeout_s: float = 30.0) -> None:
        """Refuse new uploads (503) and store those already handed over before returning."""
        with self._cond:
            self._closed = True
            self._cond.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=timeout_s)
            log.info("intake writer stopped: %d uploads stored in %d transactions", self.stored, self.batches)

    def _run(self) -> None:
        while True:
            taken = self._next_batch()
            if taken is None:  # closed and drained
                self._release()
                return
            try:
                outcomes: Sequence[batch.Admission | BaseException] = self.store([w.item for w in taken])
                if len(outcomes) != len(taken):
                    raise RuntimeError(f"{len(outcomes)} outcomes for {len(taken)} uploads")
            except BaseException as exc:  # a bug: each request gets a 500 (logged there); the writer lives on
                log.exception("intake writer failed on a batch of %d", len(taken))
                outcomes = [exc] * len(taken)
            for waiting, outcome in zip(taken, outcomes, strict=True):
                # RuntimeError: that request's event loop is closed, nobody is waiting any more
                with contextlib.suppress(RuntimeError):
                    waiting.loop.call_soon_threadsafe(_resolve, waiting.future, outcome)

    def _next_batch(self) -> list[_Waiting] | None:
        """Wait for uploads (at most max_batch of them); None once closed with nothing left to store."""
        while True:
            with self._cond:
                if self._queue:
                    return [self._queue.popleft() for _ in range(min(self.max_batch, len(self._queue)))]
                if self._closed:
                    return None
                if self._conn is None:
                    self._cond.wait()
                    continue
                idle = not self._cond.wait(timeout=IDLE_RELEASE_S) and not self._queue and not self._closed
            if idle:  # back to the pool, outside the lock: a slow server must not hold up a request's hand-over
                self._release()

    def _connection(self) -> Connection:
        if self._conn is None:
            self._conn = self.sessions.kw["bind"].connect()  # a checkout, pinged where the pool pre-pings
        return self._conn

    def _release(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(SQLAlchemyError):
                conn.close()

    def store(self, items: list[batch.Upload]) -> list[batch.Admission]:
        """One transaction for all of `items`; after a database error, one transaction per item."""
        try:
            return self._transaction(items)
        except SQLAlchemyError as exc:
            if len(items) > 1:
                log.warning("a batch of %d uploads failed (%s); storing them one by one", len(items), exc)
                return [outcome for item in items for outcome in self.store([item])]
            if isinstance(exc, IntegrityError) and items[0].idempotency_key:
                try:  # the same key raced in from another API process: now the lookup replays it
                    return self._transaction(items)
                except SQLAlchemyError as again:
                    exc = again
            log.error("an upload could not be stored: %s", exc)
            return [_db_failed(exc)]

    def _transaction(self, items: list[batch.Upload]) -> list[batch.Admission]:
        held = self._conn is not None
        try:
            return self._attempt(items)
        except DBAPIError as exc:
            if held and exc.connection_invalidated:  # the held connection died between batches (a server
                return self._attempt(items)  # restart, an idle timeout): once more on a fresh, pinged one
            raise

    def _attempt(self, items: list[batch.Upload]) -> list[batch.Admission]:
        with self.sessions(bind=self._connection()) as session:
            try:
                outcomes = batch.write(session, items, settings=self.settings(), receivers=self.receivers)
            except BaseException:
                with contextlib.suppress(SQLAlchemyError):
                    session.rollback()
                self._release()  # it may be the connection that failed: the retry gets a fresh one
                raise
        self.batches += 1
        self.stored += len(items)
        return outcomes


def _resolve(future: asyncio.Future, outcome: batch.Admission | BaseException) -> None:
    if future.done():  # the request was cancelled (client gone); its row is stored all the same
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
