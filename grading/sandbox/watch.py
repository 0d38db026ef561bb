"""Resource accounting while a sandboxed kernel runs.

A second IOPub subscriber (its own sockets, its own thread) reads every output the kernel publishes,
recognises limit breaches (MemoryError, EFBIG, ENOSPC, EAGAIN on fork, ...) and enforces two hard
backstops the engine cannot: total output volume and total wall clock. Text a learner prints can fake
a breach message; that only ever hurts the learner's own result.
"""
from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable

import zmq
from jupyter_client.session import Session

INTERRUPT_GRACE_S = 5.0
MEMORY, CPU, FILE_SIZE, DISK, PROCESSES, OUTPUT, TIME = (
    "memory limit", "cpu time limit", "file size limit", "disk limit", "process limit", "output limit",
    "time limit")

_EDGE = 64 * 1024
_ENAME = {"MemoryError": MEMORY, "OutOfMemoryError": MEMORY}
_PATTERNS = [
    (re.compile(r"MemoryError|Cannot allocate memory|can't allocate memory|std::bad_alloc|"
                r"failed to map segment|Memory allocation still failed|out of memory", re.I), MEMORY),
    (re.compile(r"File too large|\[Errno 27\]"), FILE_SIZE),
    (re.compile(r"No space left on device|\[Errno 28\]"), DISK),
    (re.compile(r"Cannot fork|can't start new thread|fork(?:\(\))?: (?:retry: )?Resource temporarily "
                r"unavailable|BlockingIOError: \[Errno 11\]|pthread_create failed|"
                r"RuntimeError: Resource temporarily unavailable", re.I), PROCESSES),
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


def message_size(msg: dict[str, Any]) -> int:
    """Bytes of learner-visible payload in an IOPub message (stream text, display/result data)."""
    content = msg.get("content", {})
    if "text" in content:
        return len(content["text"])
    data = content.get("data")
    if isinstance(data, dict):
        return sum(len(v) if isinstance(v, str) else len(str(v)) for v in data.values())
    if "traceback" in content:
        return sum(len(line) for line in content["traceback"])
    return 0


class LimitWatcher(threading.Thread):
    """Watches one kernel until stopped; `hits` is the set of limits seen so far.

    One cell's output over `output_cap_bytes` interrupts it; over twice that, or past `deadline`
    (monotonic seconds), `kill()` ends the sandbox so a runaway kernel never takes the worker down.
    """

    def __init__(self, km: Any, *, output_cap_bytes: int, deadline: float | None,
                 kill: Callable[[], None], stream_limit_bytes: int | None = None) -> None:
        super().__init__(daemon=True, name="tg-limit-watcher")
        self.km = km
        self.output_cap_bytes = output_cap_bytes
        self.stream_limit_bytes = stream_limit_bytes  # the exercise's max_output_kb: reported, not enforced
        self.stream_bytes = 0
        self.deadline = deadline
        self._kill = kill
        self._halt = threading.Event()
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._hits: set[str] = set()
        self.output_bytes = 0
        self._interrupted: float | bool = False
        self._killed = False

    @property
    def hits(self) -> set[str]:
        with self._lock:
            return set(self._hits)

    def reset(self, *, deadline: float | None) -> None:
        """Start accounting afresh (a pre-warmed kernel handed to its submission)."""
        with self._lock:
            self._hits.clear()
            self.output_bytes = self.stream_bytes = 0
            self._interrupted = self._killed = False
            self.deadline = deadline

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)

    def wait_subscribed(self, timeout: float = 10) -> bool:
        return self._ready.wait(timeout)

    def _add(self, hits: set[str]) -> None:
        if hits:
            with self._lock:
                self._hits |= hits

    def run(self) -> None:
        # Raw sockets in a private context: jupyter_client's blocking client batches messages behind
        # its event loop, which let a flood run for seconds before the watcher saw any of it.
        ctx = zmq.Context()
        session = Session(key=self.km.session.key, signature_scheme=self.km.session.signature_scheme)
        iopub = ctx.socket(zmq.SUB)
        iopub.setsockopt(zmq.SUBSCRIBE, b"")
        iopub.connect(self.km._make_url("iopub"))
        control = ctx.socket(zmq.DEALER)
        control.connect(self.km._make_url("control"))
        self._ready.set()
        try:
            while not self._halt.is_set():
                if self.deadline is not None and time.monotonic() > self.deadline and not self._killed:
                    self._add({TIME})
                    self._killed = True
                    self._kill()
                if not iopub.poll(50):
                    continue
                try:
                    _, parts = session.feed_identities(iopub.recv_multipart())
                    msg = session.deserialize(parts)
                except Exception:  # a malformed or unsigned message is not ours to judge
                    continue
                self._add(classify_message(msg))
                if msg.get("msg_type") == "execute_input":  # the output cap is per cell
                    with self._lock:
                        self.output_bytes, self.stream_bytes, self._interrupted = 0, 0, False
                elif msg.get("msg_type") == "stream":  # learner prints (grader payloads are display_data)
                    self.stream_bytes += message_size(msg)
                    if self.stream_limit_bytes is not None and self.stream_bytes > self.stream_limit_bytes:
                        self._add({OUTPUT})  # also when the flood then kills the kernel before the engine sees it
                self._account(lambda: session.send(control, "interrupt_request", {}), message_size(msg))
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
            interrupt()
        elif (self._interrupted and total > 2 * self.output_cap_bytes and not self._killed
              and time.monotonic() - self._interrupted > INTERRUPT_GRACE_S):
            self._killed = True  # the interrupt was ignored (or caught) and the flood goes on
            self._kill()
