"""The worker's device view over grading's DeviceInventory. The busy check stands in for NPU hardware,
which does not exist on these CPU machines (a fake by necessity)."""
from __future__ import annotations

import pytest

from grading.errors import HostBusy
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


def test_a_fallback_job_gets_the_cpu_only_where_the_worker_has_too_few():
    cpu = WorkerDevices.from_setting("")
    assert cpu.acquire(2, cpu_fallback=True).kind == "cpu"
    one = WorkerDevices(DeviceInventory({"npu": [0]}, busy_check=lambda kind, i: False))
    assert one.acquire(2, cpu_fallback=True).kind == "cpu" and one.free == 1
    two = WorkerDevices(DeviceInventory({"npu": [0, 1]}, busy_check=lambda kind, i: False))
    assert two.acquire(2, cpu_fallback=True).ids == (0, 1)
    with pytest.raises(HostBusy):  # its NPUs are held: it waits for them
        two.acquire(2, cpu_fallback=True)


def test_quarantined_devices_are_waited_for_and_rechecked():
    dirty = {1}
    devices = WorkerDevices(DeviceInventory({"npu": [0, 1]}, busy_check=lambda kind, i: i in dirty), recheck_s=0)
    devices.release(devices.acquire(2))
    assert (devices.count, devices.installed) == (1, 2)
    with pytest.raises(HostBusy):  # 2 installed, 1 quarantined: a fallback job waits, never the CPU
        devices.acquire(2, cpu_fallback=True)
    assert devices.recheck_quarantined() == {}  # still held
    dirty.clear()
    assert devices.recheck_quarantined() == {"npu": [1]}
    assert devices.acquire(2, cpu_fallback=True).ids == (0, 1)


def test_rechecks_are_rate_limited():
    probes = []
    devices = WorkerDevices(
        DeviceInventory({"npu": [0]}, busy_check=lambda kind, i: probes.append(i) or True), recheck_s=3600
    )
    devices.release(devices.acquire(1))
    probes.clear()
    assert devices.recheck_quarantined() == {} and devices.recheck_quarantined() == {}
    assert probes == [0]  # one probe an hour, not one per scheduling round
