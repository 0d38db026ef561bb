"""`claim(installed_devices=...)`: a device job that falls back to CPU ranks is claimed by a worker with too
few accelerators; one that does not fall back waits for a worker with the devices; a worker that has the
devices claims fallback jobs only when they are free (it runs them on its devices, never its CPU)."""

from __future__ import annotations

from service.db import transaction
from service.queue import service as queue


def _claim(sessions, *, free: int, installed: int | None):
    with transaction(sessions) as s:
        return queue.claim(
            s,
            worker_id="w",
            lanes=("short", "long"),
            free_devices=free,
            installed_devices=installed,
            max_world_size=8,
            lease_s=30.0,
        )


def _device_job(s, add_submission, *, fallback: bool):
    sub, job = add_submission(s, lane="long", devices=2)
    job.cpu_fallback = fallback
    return sub


def test_a_cpu_worker_claims_the_fallback_job_and_leaves_the_strict_one(sessions, add_submission):
    with transaction(sessions) as s:
        strict = _device_job(s, add_submission, fallback=False)
        fallback = _device_job(s, add_submission, fallback=True)
    got = _claim(sessions, free=0, installed=0)
    assert (got.submission_id, got.devices, got.cpu_fallback) == (fallback.id, 2, True)
    assert _claim(sessions, free=0, installed=0) is None  # the strict job waits for a worker with 2 devices
    assert _claim(sessions, free=2, installed=2).submission_id == strict.id


def test_a_worker_with_the_devices_busy_waits_for_them(sessions, add_submission):
    with transaction(sessions) as s:
        fallback = _device_job(s, add_submission, fallback=True)
    assert _claim(sessions, free=0, installed=2) is None  # its 2 NPUs are busy: not onto its CPU
    assert _claim(sessions, free=1, installed=1).submission_id == fallback.id  # 1 NPU is too few: CPU ranks


def test_without_installed_devices_only_free_devices_decide(sessions, add_submission):
    """A cluster executor passes `fits` and no installed count: its placement already chose."""
    with transaction(sessions) as s:
        _device_job(s, add_submission, fallback=True)
    assert _claim(sessions, free=0, installed=None) is None
    assert _claim(sessions, free=2, installed=None) is not None
