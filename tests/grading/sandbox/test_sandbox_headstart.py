"""HeadStart: the one-shot CLI's kernel, launched before the grader's imports, handed to the first matching
start, alive after its launching thread's work is done, and closed when no grade takes it."""
from __future__ import annotations

import time

import pytest
from sandbox_helpers import Recording, Runner, needs_bwrap, uid_is_clean, wait_gone

from grading.exercise import Limits
from grading.sandbox import KernelRequest
from grading.sandbox.headstart import HeadStart

pytestmark = [needs_bwrap, pytest.mark.slow]
REQUEST = KernelRequest(kernel_family="light", limits=Limits(memory_mb=1536, run_timeout_s=30))


def test_first_matching_start_gets_the_head_started_kernel_and_it_outlives_the_launch(bwrap_sandbox):
    inner = Recording(bwrap_sandbox)
    head = HeadStart(inner, REQUEST)
    time.sleep(3.0)  # long after the kernel was ready: bwrap's parent-death signal must not have fired
    session = head.start(REQUEST)
    assert inner.sessions == [session]  # no second, cold start
    run = Runner(session)
    status, out = run("import resource\nprint(resource.getrlimit(resource.RLIMIT_AS)[0] >> 20)")
    run.close()
    assert status == "ok" and "1536" in out
    later = head.start(REQUEST)  # a restart after a kernel death: a fresh kernel, never the same one
    assert later is not session and len(inner.sessions) == 2
    for s in (session, later):
        s.close()
    head.close()


def test_hand_over_restarts_the_wall_clock_backstop(bwrap_sandbox):
    head = HeadStart(bwrap_sandbox, REQUEST)
    time.sleep(2.0)
    before = time.monotonic()
    session = head.start(REQUEST)
    grace = bwrap_sandbox.config.wall_grace_s
    assert session.watcher.deadline >= before + REQUEST.limits.run_timeout_s + grace  # counted from now
    session.close()
    head.close()


def test_an_untaken_kernel_is_closed_and_another_request_starts_cold(bwrap_sandbox):
    inner = Recording(bwrap_sandbox)
    head = HeadStart(inner, REQUEST)
    other = KernelRequest(kernel_family="light", limits=Limits(memory_mb=2048))  # >= 1 GB: see docs/sandbox.md
    session = head.start(other)  # e.g. the notebook named another exercise than the one peeked
    assert head._ready.wait(120)
    assert session.limits.memory_mb == 2048 and len(inner.sessions) == 2
    session.close()
    unused = head._session
    assert unused is not None
    head.close()  # the refused-notebook path: nothing took it
    assert wait_gone(lambda: not unused.km.is_alive())
    assert uid_is_clean(bwrap_sandbox, unused.user)
