"""Why a grading run was retried, handed back or given up, as one of a few cause keys.

A job row keeps its last fault as text (`Job.last_error`, written by queue.fault, queue.release and the
reaper), and a requeued progress event keeps its reason; neither stores a key, so the key is derived here
from that text. The set is small and fixed, so the queue page, the staff API, /metrics and the learner's
live page can all group and translate by it; text that matches nothing is `other` (its raw text is shown
trimmed as the example). The patterns follow the messages the engine and the workers actually write.
"""

from __future__ import annotations

import re
from enum import StrEnum


class Cause(StrEnum):
    SANDBOX_USERS_EXHAUSTED = "sandbox_users_exhausted"  # every tgsbxN user of the host was in use
    HOST_BUSY = "host_busy"  # devices, control groups or CPU held by other runs
    DB_UNAVAILABLE = "db_unavailable"  # the database could not be reached while loading or storing
    WORKER_LOST = "worker_lost"  # the worker or its grading process died, stopped, or lost its lease
    KERNEL_CRASH = "kernel_crash"  # the learner's kernel would not start, answer, or it died
    OTHER = "other"


EXAMPLE_CHARS = 200  # how much of the raw text an example keeps

# First match wins: a hand-back for want of a sandbox user says "not started: sandbox user busy: no free
# sandbox user ...", which must count as sandbox users, not as the generic "busy".
_PATTERNS: tuple[tuple[Cause, re.Pattern[str]], ...] = (
    (Cause.SANDBOX_USERS_EXHAUSTED, re.compile(r"no free sandbox user|sandbox user busy", re.I)),
    (
        Cause.DB_UNAVAILABLE,
        re.compile(r"database was unreachable|database is unreachable|OperationalError|InterfaceError", re.I),
    ),
    (
        Cause.HOST_BUSY,
        re.compile(r"(device|control group|cgroup)s? busy|host kept the CPU|held by other runs", re.I),
    ),
    (
        Cause.WORKER_LOST,
        re.compile(
            r"lease expired on worker|grading process( \d+)? (died|failed)|process died|worker \S+ shut down|"
            r"Ray task failed|BrokenProcessPool|lease no longer held",
            re.I,
        ),
    ),
    (
        Cause.KERNEL_CRASH,
        re.compile(r"kernel (died|crashed|failed to start|did not become ready)|DeadKernel|kernel.{0,20}respond", re.I),
    ),
)


def cause_of(text: str | None) -> Cause:
    """The cause key of a stored fault or requeue reason."""
    if not text:
        return Cause.OTHER
    for cause, pattern in _PATTERNS:
        if pattern.search(text):
            return cause
    return Cause.OTHER


def example(text: str) -> str:
    """The raw text, trimmed for display (it was cleaned when stored: queue.fault, record_grade)."""
    text = " ".join(text.split())
    return text if len(text) <= EXAMPLE_CHARS else text[: EXAMPLE_CHARS - 1] + "…"


_LOST_ON = re.compile(r"lease expired on worker (\S+)")


def lost_on_worker(text: str) -> str | None:
    """The worker whose lease expired, when the text is the reaper's (`lease expired on worker X (...)`)."""
    found = _LOST_ON.search(text or "")
    return found.group(1) if found else None
