"""Resource accounting while a sandboxed kernel runs.

A second IOPub subscriber (its own sockets, its own thread) reads every output the kernel publishes,
recognises limit breaches (MemoryError, EFBIG, ENOSPC, EAGAIN on fork, ...) and enforces two hard
backstops the engine cannot: total output volume and total wall clock. Text a learner prints can fake
a breach message; that only ever hurts the learner's own result.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any, cast

import zmq
from jupyter_client.session import Session

from grading.sandbox.channels import MiB, bounded_socket, recv_bounded, rss_bytes

INTERRUPT_GRACE_S = 5.0
MEMORY, CPU, FILE_SIZE, DISK, PROCESSES, OUTPUT, TIME = (
    "memory limit",
    "cpu time limit",
    "file size limit",
    "disk limit",
    "process limit",
    "output limit",
    "time limit",
)

_EDGE = 64 * 1024
_POLL_MS = 10  # the loop's longest sleep: the memory guard below is sampled at least this often
RSS_GUARD_BYTES = 120 * MiB  # this process grew that much while the kernel ran: no socket bound explains it
_ENAME = {"MemoryError": MEMORY, "OutOfMemoryError": MEMORY}
_PATTERNS = [
    (
        re.compile(
            r"MemoryError|Cannot allocate memory|can't allocate memory|std::bad_alloc|"
            r"failed to map segment|Memory allocation still failed|out of memory",
            re.I,
        ),
        MEMORY,
    ),
    (re.compile(r"File too large|\[Errno 27\]"), FILE_SIZE),
    (re.compile(r"No space left on device|\[Errno 28\]"), DISK),
    (
        re.compile(
            r"Cannot fork|can't start new thread|fork(?:\(\))?: (?:retry: )?Resource temporarily "
            r"unavailable|BlockingIOError: \[Errno 11\]|pthread_create failed|"
            r"RuntimeError: Resource temporarily unavailable",
            re.I,
        ),
        PROCESSES,
    ),
    (re.compile(r"CPU time limit exceeded"), CPU),
]


def classify_text(text: str) -> set[str]:
    """Limits whose usual failure message appears in `text` (a traceback or a stream chunk)."""
    return {limit for pattern, limit in _PATTERNS if pattern.search(text)}


def classify_message(msg: dict[str, Any]) -> set[str]:
    """Limits a single IOPub message reveals."""
    kind = msg.get("msg_type") or msg.get("header", {}).get("msg_type")
    content = msg.get("content", {})
    if kind == "error":
        found = {_ENAME[content.get("ename")]} if content.get("ename") in _ENAME else set()
        return found | classify_text(f"{content.get('ename')}: {content.get('evalue')}")
    if kind == "stream":  # limit messages sit at a chunk's start or end; a 30 MB flood is not regexed whole
        text = content.get("text", "")
        return classify_text(text if len(text) <= 2 * _EDGE else text[:_EDGE] + "\n" + text[-_EDGE:])
    return set()


class LimitWatcher(threading.Thread):
    """Watches one kernel until stopped; `hits` is the set of limits seen so far.

    It counts every iopub message's bytes over the whole run (cells are the engine's business: a kernel
    can forge cell boundaries). Past `output_cap_bytes` it interrupts the kernel once; past twice that
    after INTERRUPT_GRACE_S, or past `deadline` (monotonic seconds), or when this process's memory grows
    by RSS_GUARD_BYTES, `kill()` ends the sandbox, so a runaway kernel never takes the worker down.
    """

    def __init__(
        self,
        urls: dict[str, str],
        session: Session,
        *,
        output_cap_bytes: int,
        deadline: float | None,
        kill: Callable[[], None],
    ) -> None:
        super().__init__(daemon=True, name="tg-limit-watcher")
        self.urls = urls
        self.session = Session(key=session.key, signature_scheme=session.signature_scheme)
        self.output_cap_bytes = output_cap_bytes
        self.deadline = deadline
        self._kill = kill
        self._halt = threading.Event()
        self._wake_r, self._wake_w = os.pipe()  # stop() wakes the loop at once instead of after its poll
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._hits: set[str] = set()
        self.output_bytes = 0
        self._interrupted: float | bool = False
        self._killed = False
        self._rss0 = 0

    @property
    def hits(self) -> set[str]:
        with self._lock:
            return set(self._hits)

    def reset(self, *, deadline: float | None) -> None:
        """Start accounting afresh (a pre-warmed kernel handed to its submission)."""
        with self._lock:
            self._hits.clear()
            self.output_bytes = 0
            self._interrupted = self._killed = False
            self.deadline = deadline
            self._rss0 = rss_bytes()

    def extend(self, by_s: float) -> None:
        """Move the wall-clock backstop on: the engine gave a run held back by a busy host that much more
        time (grading/steps/cpu_clock.py), and the backstop must not kill it meanwhile."""
        with self._lock:
            if self.deadline is not None and by_s > 0:
                self.deadline += by_s

    def stop(self) -> None:
        self._halt.set()
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        self.join(timeout=5)
        if not self.is_alive():  # the loop closed its end on the way out
            with contextlib.suppress(OSError):
                os.close(self._wake_w)

    def wait_subscribed(self, timeout: float = 10) -> bool:
        return self._ready.wait(timeout)

    def _add(self, hits: set[str]) -> None:
        if hits:
            with self._lock:
                self._hits |= hits

    def _kill_once(self, limit: str) -> None:
        self._add({limit})
        if not self._killed:
            self._killed = True
            self._kill()

    def run(self) -> None:
        try:
            self._watch()
        finally:
            os.close(self._wake_r)  # stop() closes the other end once this thread is gone

    def _watch(self) -> None:
        # Raw, bounded sockets in a private context (channels.py); messages are read frame by frame.
        ctx = zmq.Context()
        iopub = bounded_socket(ctx, zmq.SUB, self.urls["iopub"])
        control = bounded_socket(ctx, zmq.DEALER, self.urls["control"])
        poller = zmq.Poller()
        poller.register(iopub, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        self._rss0 = rss_bytes()
        self._ready.set()
        next_rss = 0.0
        try:
            while not self._halt.is_set():
                now = time.monotonic()
                if self.deadline is not None and now > self.deadline:
                    self._kill_once(TIME)
                if now >= next_rss:
                    next_rss = now + _POLL_MS / 1000
                    if self._rss0 and rss_bytes() - self._rss0 > RSS_GUARD_BYTES:
                        self._kill_once(OUTPUT)
                        break  # hang up now: libzmq queues a message still arriving until its socket closes
                if control.poll(0):
                    recv_bounded(control)  # interrupt replies (or anything else): read, never kept
                if iopub not in dict(poller.poll(_POLL_MS)):
                    continue
                got = recv_bounded(iopub)
                if got.endless:
                    self._kill_once(OUTPUT)
                    break
                if got.frames is not None:
                    self._add(_classify_frames(self.session, got.frames))
                self._account(lambda: self.session.send(control, "interrupt_request", {}), got.charged)
        finally:
            iopub.close(linger=0)
            control.close(linger=0)
            ctx.term()

    def _account(self, interrupt: Callable[[], Any], size: int) -> None:
        with self._lock:
            self.output_bytes += size
            total = self.output_bytes
        if total > self.output_cap_bytes and not self._interrupted:
            self._add({OUTPUT})
            self._interrupted = time.monotonic()
            with contextlib.suppress(zmq.ZMQError):  # a full send queue: the kill backstop decides
                interrupt()
        elif (
            self._interrupted
            and total > 2 * self.output_cap_bytes
            and not self._killed
            and time.monotonic() - self._interrupted > INTERRUPT_GRACE_S
        ):
            self._kill_once(OUTPUT)  # the interrupt was ignored (or caught) and the flood goes on


def _classify_frames(session: Session, frames: list[bytes]) -> set[str]:
    """Limits one raw iopub message reveals; a big content frame is only scanned at its edges."""
    try:
        _, parts = session.feed_identities(frames, copy=True)
        header = json.loads(cast(bytes, parts[1]))  # recv_bounded keeps frames as bytes
        kind = header.get("msg_type") if isinstance(header, dict) else None
        if kind not in ("error", "stream"):
            return set()
        raw = cast(bytes, parts[4])
        if len(raw) <= 2 * _EDGE:
            content = json.loads(raw)
            return classify_message({"msg_type": kind, "content": content}) if isinstance(content, dict) else set()
        return classify_text(raw[:_EDGE].decode("utf-8", "replace") + "\n" + raw[-_EDGE:].decode("utf-8", "replace"))
    except (ValueError, IndexError, TypeError):  # not a message we can read: nothing to learn from it
        return set()
