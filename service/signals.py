"""Wake-ups on commit, so an idle worker or an open event stream need not wait for its next poll.

Every queue change that makes a job claimable writes a `queued` or `requeued` progress event (intake,
regrade, retry, shutdown hand-back, lease reaping), and every progress event is a row; so one hook on
flushed `ProgressEvent` rows covers them all:
- in one process (`serve` with local workers), subscribers are called after the transaction commits;
- from the grading pool processes to their worker's process (and so to `serve`'s event streams), on any
  database, by Unix datagrams (`DatagramRelay`);
- across processes on PostgreSQL, the same transaction sends NOTIFY (delivered at commit, never for a
  rolled-back transaction) and `PgListener` relays it to this process's subscribers.
Polling (`poll_s`, `events_poll_s`) stays as the fallback, e.g. SQLite across processes.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from sqlalchemy import event, text
from sqlalchemy.orm import Session, sessionmaker

from service.outage import Retrier
from service.submissions.models import ProgressEvent

log = logging.getLogger("titangrade.signals")

JOBS = "titangrade_jobs"  # key "": a job may be claimable now
EVENTS = "titangrade_events"  # key: the submission id that has a new progress event
_PENDING = "tg_signals"  # session.info: (channel, key) pairs to publish after commit
_SENT = "tg_signals_sent"  # session.info: pairs already NOTIFYed in this transaction

Callback = Callable[[str], None]
_lock = threading.Lock()
_subscribers: dict[str, list[Callback]] = {JOBS: [], EVENTS: []}


def subscribe(channel: str, callback: Callback) -> Callable[[], None]:
    """Call `callback(key)` after each commit that signals `channel`; returns the unsubscribe function.
    Callbacks run on the committing thread: they must only hand off (set an event, put on a queue)."""
    with _lock:
        _subscribers[channel] = [*_subscribers[channel], callback]

    def unsubscribe() -> None:
        with _lock:
            _subscribers[channel] = [c for c in _subscribers[channel] if c is not callback]

    return unsubscribe


def publish(channel: str, key: str = "") -> None:
    for callback in _subscribers.get(channel, ()):
        try:
            callback(key)
        except Exception:  # a wake-up is an optimisation; the poll still finds the work
            log.exception("signal subscriber failed")


def install(factory: sessionmaker[Session]) -> None:
    """Hook a session factory: flushed progress events are signalled after their transaction commits."""
    event.listen(factory, "after_flush", _after_flush)
    event.listen(factory, "after_commit", _after_commit)
    event.listen(factory, "after_rollback", _after_rollback)


def _after_flush(session: Session, _context) -> None:
    found: set[tuple[str, str]] = set()
    for obj in session.new:
        if isinstance(obj, ProgressEvent):
            found.add((EVENTS, obj.submission_id))
            if obj.event in ("queued", "requeued"):
                found.add((JOBS, ""))
    written(session, found)


def written(session: Session, found: set[tuple[str, str]]) -> None:
    """Signal (channel, key) pairs after `session`'s transaction commits: what the flush hook does for ORM
    progress events, for rows inserted with plain INSERTs (the intake's group commit). On PostgreSQL the
    NOTIFY is sent now, in the transaction, so it is delivered at commit and never for a rollback."""
    if not found:
        return
    session.info.setdefault(_PENDING, set()).update(found)
    if session.get_bind().dialect.name == "postgresql":
        sent = session.info.setdefault(_SENT, set())
        new = sorted(found - sent)
        if new:  # one round trip for all of them; NOTIFY is transactional
            calls = ", ".join(f"pg_notify(:c{i}, :k{i})" for i in range(len(new)))
            params = {f"{n}{i}": v for i, pair in enumerate(new) for n, v in zip("ck", pair, strict=True)}
            session.connection().execute(text(f"select {calls}"), params)
            sent.update(new)


def _after_commit(session: Session) -> None:
    # SQLAlchemy fires after_commit on a savepoint's RELEASE too (record_grade writes `done` in one): the
    # rows are not visible to other connections until the outer COMMIT, so a stream woken now reads
    # nothing and sleeps a whole poll. Publish only at the outermost commit.
    if session.in_nested_transaction():
        return
    pending = session.info.pop(_PENDING, None)
    session.info.pop(_SENT, None)
    for channel, key in sorted(pending or ()):
        publish(channel, key)


def _after_rollback(session: Session) -> None:
    if session.in_nested_transaction():
        # a savepoint rolled back: its NOTIFYs are discarded with it, so later flushes must send again;
        # the pairs stay pending (a spare wake-up after the outer commit costs one empty read)
        session.info.pop(_SENT, None)
        return
    session.info.pop(_PENDING, None)
    session.info.pop(_SENT, None)


class PgListener:
    """A daemon thread holding one PostgreSQL connection that LISTENs on `channels` and publishes each
    notification in this process. A lost connection is retried with the workers' backoff (service/outage.py:
    one warning, a line per retry, one when back); until then the poll fallback covers. On reconnecting it
    publishes an empty JOBS key, since NOTIFYs sent while it was away are lost: a worker looks at the queue."""

    def __init__(
        self, database_url: str, channels: tuple[str, ...], *, retry_base_s: float = 0.5, retry_max_s: float = 10.0
    ) -> None:
        self.url = database_url
        self.channels = channels
        self.stop = threading.Event()
        self.listening = threading.Event()  # set once LISTEN has been issued (tests wait on it)
        self.backend_pid: int | None = None  # the server process of the LISTEN connection (tests end it)
        self.retry = Retrier(
            who="LISTEN connection", log=log, base_s=retry_base_s, cap_s=retry_max_s, resumes="wake-ups go on"
        )
        self._thread = threading.Thread(target=self._run, name="tg-pg-listen", daemon=True)

    def start(self) -> PgListener:
        self._thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self._thread.join(timeout=5)

    def _connect(self):
        import psycopg
        from sqlalchemy.engine import make_url

        # the SQLAlchemy URL as a libpq URI (options such as search_path carry over)
        conninfo = make_url(self.url).set(drivername="postgresql").render_as_string(hide_password=False)
        return psycopg.connect(conninfo, autocommit=True, connect_timeout=10)

    def _run(self) -> None:
        lost = False
        while not self.stop.is_set():
            try:
                with self._connect() as conn:
                    for channel in self.channels:
                        conn.execute(f"LISTEN {channel}")  # channel names are our constants, not input
                    self.backend_pid = conn.info.backend_pid
                    self.listening.set()
                    self.retry.succeeded()
                    if lost and JOBS in self.channels:
                        publish(JOBS, "")
                    while not self.stop.is_set():
                        for note in conn.notifies(timeout=0.25):
                            publish(note.channel, note.payload)
            except Exception as exc:
                self.listening.clear()
                lost = True
                self.stop.wait(self.retry.failed(exc, doing="listening for wake-ups (polling covers meanwhile)"))


class DatagramRelay:
    """Relays one channel from child processes (grading pool processes) to this process's subscribers over
    a Unix datagram socket: a datagram is whole or absent, and a sender never blocks or holds a lock, so a
    killed or busy child cannot stall the others. A lost datagram only means the poll finds the event."""

    def __init__(self, channel: str) -> None:
        import os
        import socket
        import uuid

        self.channel = channel
        self.address = f"\0titangrade-{channel}-{os.getpid()}-{uuid.uuid4().hex[:8]}"  # abstract: no file
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(self.address)
        self._sock.settimeout(0.5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tg-relay", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                key = self._sock.recv(512)
            except TimeoutError:
                continue
            except OSError:
                return
            publish(self.channel, key.decode(errors="replace"))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._sock.close()


def forward_to_relay(address: str, channel: str) -> None:
    """In a child process: send every key published on `channel` here to the parent's DatagramRelay."""
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setblocking(False)

    def send(key: str) -> None:
        with contextlib.suppress(OSError):  # the relay is gone or its buffer is full: the poll finds the event
            sock.sendto(key.encode()[:512], address)

    subscribe(channel, send)


def listen_if_postgresql(
    database_url: str, channels: tuple[str, ...], *, retry_base_s: float = 0.5, retry_max_s: float = 10.0
) -> PgListener | None:
    """Start a listener when the database is PostgreSQL; None for SQLite (polling is the fallback there).
    The retry delays are the `db_retry_base_s`/`db_retry_max_s` settings (their defaults here)."""
    if not database_url.startswith(("postgresql", "postgres:")):
        return None
    return PgListener(database_url, channels, retry_base_s=retry_base_s, retry_max_s=retry_max_s).start()
