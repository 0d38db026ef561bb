"""`claim(fits=...)`: a cluster executor claims only the (lane, devices, world_size) shapes it can start now."""

from __future__ import annotations

from service.db import transaction
from service.queue import service as queue


def _claim(sessions, fits, lanes=("short", "long")):
    with transaction(sessions) as s:
        return queue.claim(s, worker_id="ray", lanes=lanes, free_devices=8, max_world_size=8, lease_s=30.0, fits=fits)


def test_only_placeable_shapes_are_claimed_in_queue_order(sessions, add_submission):
    with transaction(sessions) as s:
        training, job = add_submission(s, lane="long", devices=2)
        job.world_size = 2
        short, _ = add_submission(s)
        other, _ = add_submission(s, devices=1)
    assert _claim(sessions, []) is None  # nothing can be placed: nothing is claimed
    assert _claim(sessions, [("short", 0, 1)]).submission_id == short.id  # the older training job waits
    assert _claim(sessions, [("short", 0, 1), ("long", 0, 2)]) is None  # shapes match exactly, not "at most"
    got = _claim(sessions, [("long", 2, 2), ("short", 1, 1)])
    assert (got.submission_id, got.devices, got.world_size) == (training.id, 2, 2)
    assert _claim(sessions, [("long", 2, 2), ("short", 1, 1)]).submission_id == other.id


def test_no_fits_means_no_extra_filter(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s, lane="long")
    assert _claim(sessions, None).submission_id == sub.id
