"""The worker's device view over grading's DeviceInventory. The busy check stands in for NPU hardware,
which does not exist on these CPU machines (a fake by necessity)."""
from __future__ import annotations

import pytest

from grading.sandbox.devices import DeviceInventory
from service.workers.devices import WorkerDevices


def test_cpu_only_worker_offers_nothing():
    devices = WorkerDevices.from_setting("")
    assert (devices.count, devices.free, devices.kind) == (0, 0, "cpu")
    assert devices.acquire(0).kind == "cpu"
    with pytest.raises(RuntimeError, match="no device kind"):
        devices.acquire(1)


def test_grants_are_disjoint_and_returned():
    devices = WorkerDevices(DeviceInventory({"npu": range(4)}, busy_check=lambda kind, i: False))
    assert (devices.count, devices.free, devices.kind) == (4, 4, "npu")
    a, b = devices.acquire(2), devices.acquire(2)
    assert set(a.ids).isdisjoint(b.ids) and devices.free == 0
    devices.release(a)
    assert devices.free == 2


def test_a_device_left_busy_is_quarantined():
    devices = WorkerDevices(DeviceInventory({"npu": range(2)}, busy_check=lambda kind, i: i == 1))
    grant = devices.acquire(2)
    assert devices.release(grant) == [1]
    assert (devices.count, devices.free) == (1, 1)
