"""service/queue/causes.py: the fault texts the engine and the workers write map to a few cause keys."""

from __future__ import annotations

import pytest

from grading.steps.whose_time import RETRIED, STARVED
from service.queue.causes import EXAMPLE_CHARS, Cause, cause_of, example, lost_on_worker

TEXTS = [
    # the worker's hand-back of a HostBusy from grading/sandbox/users.py, and the HostBusy itself
    (
        "not started: sandbox user busy: no free sandbox user: all 6 are in use (6 by this process, 0 by other "
        "titangrade processes on this host)",
        Cause.SANDBOX_USERS_EXHAUSTED,
    ),
    ("no free sandbox user: all 3 are in use", Cause.SANDBOX_USERS_EXHAUSTED),
    ("not started: device busy: cuda device 1 is held by other runs", Cause.HOST_BUSY),
    ("not started: control group busy: no free control group", Cause.HOST_BUSY),
    (f"{STARVED} learner cell 2 (cpu 1.0 s of 10 s); {RETRIED}", Cause.HOST_BUSY),
    ("not started: the database was unreachable when grading began (OperationalError)", Cause.DB_UNAVAILABLE),
    ("the result could not be stored: OperationalError: server closed the connection", Cause.DB_UNAVAILABLE),
    ("lease expired on worker host-1-77 (attempt 2)", Cause.WORKER_LOST),
    ("grading process 4242 died: A process in the process pool was terminated abruptly", Cause.WORKER_LOST),
    ("grading process failed: BrokenProcessPool: ...", Cause.WORKER_LOST),
    ("worker host-1-77 shut down", Cause.WORKER_LOST),
    ("Ray task failed: node died", Cause.WORKER_LOST),
    ("kernel failed to start: [Errno 2]", Cause.KERNEL_CRASH),
    ("kernel failed to start or respond: timeout", Cause.KERNEL_CRASH),
    ("sandboxed kernel did not become ready: timeout; bwrap said: ", Cause.KERNEL_CRASH),
    ("reference for ch05.svc_sum has no check 'x'", Cause.OTHER),
    ("", Cause.OTHER),
]


@pytest.mark.parametrize(("text", "cause"), TEXTS, ids=[c for _, c in TEXTS])
def test_each_known_text_has_its_cause(text, cause):
    assert cause_of(text) is cause


def test_every_cause_key_is_reached_and_the_page_words_cover_them():
    from service.messages import WEB

    assert {c for _, c in TEXTS} == set(Cause)
    for cause in Cause:
        assert f"cause_{cause}" in WEB and f"why_{cause}" in WEB


def test_examples_are_trimmed_and_reaped_workers_named():
    long = "no free sandbox user: " + "x" * 500
    assert len(example(long)) == EXAMPLE_CHARS and example(long).endswith("…")
    assert example("a\n  b") == "a b"
    assert lost_on_worker("lease expired on worker w-9 (attempt 1)") == "w-9"
    assert lost_on_worker("kernel failed to start") is None


def test_the_live_page_knows_every_cause_key():
    from pathlib import Path

    web = Path(__file__).resolve().parents[3] / "service" / "web"
    template = (web / "templates" / "_live_status.html").read_text()
    script = (web / "static" / "submission.js").read_text()
    for cause in Cause:
        assert f"'{cause}'" in template and f'"{cause}"' in script
