"""Sandbox users are a host resource shared by every titangrade process: running out is HostBusy (not a
plain grader fault), and a one-shot caller can wait for a user instead of failing. Real users, real flocks."""

from __future__ import annotations

import pwd
import threading

import pytest

from grading.errors import GraderFault, HostBusy
from grading.sandbox.users import UidPool

USERS = ("tgsbx30", "tgsbx31")
LOCK_DIR = "/run/titangrade/users"  # the host-wide locks every bwrap sandbox takes

pytestmark = pytest.mark.skipif(
    any(name not in {p.pw_name for p in pwd.getpwall()} for name in USERS),
    reason="needs sandbox users tgsbx30 and tgsbx31 (TITANGRADE_SANDBOX_USERS=32 scripts/install-system-deps.sh)",
)


def test_no_free_user_is_host_busy_and_says_who_holds_them():
    other_service, pool = UidPool(USERS, LOCK_DIR), UidPool(USERS, LOCK_DIR)
    held = [other_service.acquire(), other_service.acquire()]
    try:
        with pytest.raises(HostBusy) as caught:
            pool.acquire()
        assert isinstance(caught.value, GraderFault) and caught.value.retryable
        assert caught.value.resource == "sandbox user"
        assert "all 2 are in use (0 by this process, 2 by other titangrade processes" in str(caught.value)
        assert "TITANGRADE_SANDBOX_USERS" in str(caught.value)
    finally:
        for user in held:
            other_service.release(user)


def test_a_pool_told_to_wait_gets_the_first_user_another_service_frees():
    other_service = UidPool(USERS, LOCK_DIR)
    held = [other_service.acquire(), other_service.acquire()]
    told: list[str] = []
    pool = UidPool(USERS, LOCK_DIR, wait_s=60, on_wait=told.append)
    freed = threading.Event()

    def free_one_when_told() -> None:
        while not told:
            threading.Event().wait(0.01)
        other_service.release(held[1])
        freed.set()

    helper = threading.Thread(target=free_one_when_told)
    helper.start()
    try:
        got = pool.acquire()
        helper.join(10)
        assert freed.is_set() and got.pw_uid == held[1].pw_uid
        assert len(told) == 1 and "no free sandbox user" in told[0] and "waiting up to" in told[0]
        pool.release(got)
    finally:
        other_service.release(held[0])
        other_service.release(held[1])


def test_a_bounded_wait_ends_in_host_busy():
    other_service = UidPool(USERS, LOCK_DIR)
    held = [other_service.acquire(), other_service.acquire()]
    told: list[str] = []
    try:
        with pytest.raises(HostBusy):
            UidPool(USERS, LOCK_DIR, wait_s=0.3, on_wait=told.append).acquire()
        assert len(told) == 1
    finally:
        for user in held:
            other_service.release(user)
