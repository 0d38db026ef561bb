"""The Ray device-hygiene ledger and the node-side hold, as plain code (the Ray cluster test of the same
behaviour is tests/service/workers/test_ray_executor.py::test_a_device_left_busy_is_withheld_until_clean).
The busy checks here are test doubles standing in for npu-smi (no NPU on these machines)."""

from __future__ import annotations

import time

from service.workers.ray_hygiene import DirtyDevices, hold_until_clean


def test_a_dirty_device_is_withheld_probed_on_schedule_and_released_when_clean():
    ledger = DirtyDevices(probe_s=0.05)
    ledger.add("n1", "npu", [3])
    ledger.add("n1", "npu", (5,))
    ledger.add("n2", "cpu", [0])  # a CPU job holds no device
    assert ledger.withheld() == {"n1": {"npu": 2}}
    assert ledger.due() == []  # first probe after probe_s
    time.sleep(0.06)
    (due,) = ledger.due()
    assert due == ("n1", "npu", (3, 5)) and ledger.due() == []  # one probe in flight at a time
    assert ledger.probed("n1", "npu", (3, 5), [5]) == [3]
    assert ledger.withheld() == {"n1": {"npu": 1}}
    time.sleep(0.06)
    assert ledger.probed("n1", "npu", (5,), None) == []  # a failed probe changes nothing
    time.sleep(0.06)
    assert ledger.due() == [("n1", "npu", (5,))]
    assert ledger.probed("n1", "npu", (5,), []) == [5]
    assert ledger.withheld() == {"n1": {}} and ledger.due() == []


def test_a_node_that_left_is_forgotten():
    ledger = DirtyDevices(probe_s=10)
    ledger.add("gone", "cuda", [0, 1])
    ledger.forget("gone")
    assert ledger.withheld() == {} and ledger.due() == []


def test_the_task_holds_its_devices_until_they_are_clean_or_the_hold_ends():
    calls = []

    def busy(kind, ids):
        calls.append(ids)
        return [i for i in ids if i == 1 and len(calls) < 3]  # device 1 comes clean at the third look

    assert hold_until_clean("npu", (0, 1), hold_s=5, poll_s=0.01, busy=busy) == []
    assert calls == [(0, 1), (1,), (1,)]
    start = time.monotonic()
    assert hold_until_clean("npu", (0, 1), hold_s=0.1, poll_s=0.02, busy=lambda k, ids: [1]) == [1]
    assert 0.09 <= time.monotonic() - start < 2
    assert hold_until_clean("cpu", (), hold_s=5) == []
