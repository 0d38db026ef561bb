"""DeviceInventory bookkeeping on a configured inventory. FAKE: no accelerator exists on these
machines, so ids are made up and the busy check is a test double standing in for nvidia-smi/npu-smi."""
from __future__ import annotations

import threading

import pytest

from grading.exercise import Resources
from grading.sandbox import DeviceGrant, KernelRequest
from grading.sandbox.devices import DeviceInventory, detect, device_env, device_nodes, npu_busy


class FakeBusy:
    """Stands in for the vendor tools (cannot run here): devices listed in `held` look busy."""

    def __init__(self) -> None:
        self.held: set[tuple[str, int]] = set()
        self.asked: list[tuple[str, int]] = []

    def __call__(self, kind: str, device: int) -> bool:
        self.asked.append((kind, device))
        return (kind, device) in self.held


def test_grants_are_disjoint_and_exact_under_concurrency():
    inv = DeviceInventory({"npu": range(8)}, busy_check=FakeBusy(), label="fake")
    grants: list[DeviceGrant] = []
    lock = threading.Lock()

    def take():
        g = inv.acquire("npu", 2)
        if g is not None:
            with lock:
                grants.append(g)

    threads = [threading.Thread(target=take) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ids = [i for g in grants for i in g.ids]
    assert len(grants) == 4 and sorted(ids) == list(range(8))  # 4 grants of exactly 2; 6 callers got None
    assert inv.acquire("npu", 1) is None
    inv.release(grants[0])
    assert inv.acquire("npu", 2).ids == grants[0].ids


def test_busy_device_is_quarantined_until_an_operator_clears_it():
    busy = FakeBusy()
    inv = DeviceInventory({"cuda": [0, 1]}, busy_check=busy, label="fake")
    g = inv.acquire("cuda", 2)
    busy.held.add(("cuda", 1))  # a leaked process still holds device 1 after the job
    assert inv.release(g) == [1]
    assert busy.asked == [("cuda", 0), ("cuda", 1)]
    assert inv.total("cuda") == 1 and inv.acquire("cuda", 2) is None
    assert inv.acquire("cuda", 1).ids == (0,)
    inv.unquarantine("cuda", 1)
    assert inv.acquire("cuda", 1).ids == (1,)


def test_a_quarantined_device_comes_back_once_a_recheck_finds_it_clean():
    busy = FakeBusy()
    inv = DeviceInventory({"npu": [0, 1, 2]}, busy_check=busy, label="fake")
    g = inv.acquire("npu", 3)
    busy.held |= {("npu", 0), ("npu", 2)}
    assert inv.release(g) == [0, 2] and inv.total("npu") == 1
    busy.held.discard(("npu", 2))  # the leaked process on device 2 ended
    assert inv.recheck() == {"npu": [2]}
    assert inv.quarantined == {"npu": {0}} and inv.total("npu") == 2
    assert inv.acquire("npu", 2).ids == (1, 2)
    assert inv.recheck() == {}  # device 0 is still held: it stays out


def test_can_satisfy_and_acquire_for_follow_the_exercise():
    inv = DeviceInventory({"npu": [0, 1]}, busy_check=FakeBusy(), label="fake")
    assert inv.can_satisfy(Resources(devices=0))
    assert inv.can_satisfy(Resources(devices=2, device_kinds=("npu",)))
    assert not inv.can_satisfy(Resources(devices=4, device_kinds=("npu", "cuda")))
    assert not inv.can_satisfy(Resources(devices=1, device_kinds=("cuda",)))
    assert inv.acquire_for(Resources(devices=1, device_kinds=("cuda", "npu"))) == DeviceGrant(kind="npu", ids=(0,))
    assert inv.acquire_for(Resources(devices=0)) == DeviceGrant()


def test_a_fallback_job_runs_on_the_cpu_only_where_the_worker_has_too_few_devices():
    """2 NPUs, else 2 GPUs, else 2 CPU ranks: the first kind the worker has wins; busy devices are waited
    for (None), quarantined ones too (they come back when clean), never swapped for the CPU."""
    fallback = Resources(world_size=2, devices=2, device_kinds=("npu", "cuda", "cpu"))
    assert fallback.cpu_fallback and not Resources(devices=2, device_kinds=("npu",)).cpu_fallback
    assert not Resources(devices=2).cpu_fallback  # the default never falls back: the author says so
    cpu_only = DeviceInventory({}, busy_check=FakeBusy(), label="fake")
    assert cpu_only.can_satisfy(fallback) and cpu_only.acquire_for(fallback) == DeviceGrant()
    one_npu = DeviceInventory({"npu": [0]}, busy_check=FakeBusy(), label="fake")
    assert one_npu.kind_for(fallback) is None and one_npu.acquire_for(fallback) == DeviceGrant()
    both = DeviceInventory({"npu": [0, 1], "cuda": [0, 1]}, busy_check=FakeBusy(), label="fake")
    assert both.acquire_for(fallback) == DeviceGrant(kind="npu", ids=(0, 1))
    assert both.acquire_for(fallback) is None  # the NPUs are busy: wait for them, not the GPUs nor the CPU
    busy = FakeBusy()
    gpus = DeviceInventory({"cuda": [0, 1]}, busy_check=busy, label="fake")
    grant = gpus.acquire_for(fallback)
    busy.held.add(("cuda", 1))
    gpus.release(grant)
    assert gpus.total("cuda") == 1 and gpus.kind_for(fallback) == "cuda" and gpus.acquire_for(fallback) is None


@pytest.mark.parametrize(
    ("kinds", "problem"),
    [(("cpu", "npu"), "comes last"), (("cpu",), "names no accelerator"), (("npu", "npu"), "names a kind twice")],
)
def test_a_manifest_with_a_misplaced_fallback_is_refused(kinds, problem):
    with pytest.raises(ValueError, match=problem):
        Resources(devices=2, device_kinds=kinds)
    with pytest.raises(ValueError):
        Resources(devices=2, device_kinds=("tpu",))


def test_spec_parsing_names_the_fix_for_typos():
    inv = DeviceInventory.from_spec("npu:0-3;cuda:1,3")
    assert inv.total("npu") == 4 and inv.total("cuda") == 2
    assert DeviceInventory.from_spec("").total("npu") == 0
    with pytest.raises(ValueError, match="cuda:IDS or npu:IDS"):
        DeviceInventory.from_spec("gpu:0")


def test_sandbox_sees_only_granted_devices():
    cpu = {"CUDA_VISIBLE_DEVICES": "", "ASCEND_RT_VISIBLE_DEVICES": "", "TITANGRADE_DEVICE": "cpu"}
    assert device_env(DeviceGrant()) == cpu
    assert device_env(DeviceGrant(kind="npu", ids=(2, 3))) == {
        "ASCEND_RT_VISIBLE_DEVICES": "2,3",
        "TITANGRADE_DEVICE": "npu",  # the course runtime trains on what was granted, or fails saying so
    }
    assert device_env(DeviceGrant(kind="cuda", ids=(1,)))["CUDA_VISIBLE_DEVICES"] == "1"
    assert device_nodes(DeviceGrant()) == []
    assert device_nodes(DeviceGrant(kind="cuda", ids=(0,))) == []  # no /dev/nvidia* on this host


def test_bwrap_command_binds_granted_nodes_and_drops_address_limit(tmp_path, monkeypatch):
    """The argv for an NPU job (FAKE grant: the nodes do not exist here, so existence is faked)."""
    import grading.sandbox.devices as devices
    from grading.sandbox.bwrap import BwrapSandbox

    monkeypatch.setattr(devices.os.path, "exists", lambda p: p.startswith("/dev/davinci") or p.startswith("/dev/devmm")
                        or p.startswith("/dev/hisi") or __import__("os").access(p, 0))
    sandbox = BwrapSandbox.__new__(BwrapSandbox)
    import pwd

    from grading.sandbox.bwrap import BwrapConfig

    sandbox.config = BwrapConfig()
    argv = sandbox.bwrap_argv(KernelRequest(devices=DeviceGrant(kind="npu", ids=(3,))), pwd.getpwnam("root"), tmp_path)
    pairs = list(zip(argv, argv[1:]))
    assert ("--dev-bind", "/dev/davinci3") in pairs and ("--dev-bind", "/dev/davinci_manager") in pairs
    assert ("--dev-bind", "/dev/davinci2") not in pairs
    assert '"ASCEND_RT_VISIBLE_DEVICES": "3"' in argv[-2] and '"RLIMIT_AS": [-1, -1]' in argv[-2]


def test_detection_survives_a_host_without_accelerators():
    assert detect().get("npu") is None  # torch_npu absent/without CANN must not raise
    assert isinstance(DeviceInventory.detect().total("cuda"), int)


def test_npu_smi_parser_on_a_recorded_table(monkeypatch):
    """FAKE npu-smi output (format from CANN's docs; not run here)."""
    import grading.sandbox.devices as devices

    table = ("+---------------------------+---------------+----------------------------------------------------+\n"
             "| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |\n"
             "+===========================+===============+====================================================+\n"
             "| 1       0                 | 4242          | python                   | 3100                    |\n"
             "+===========================+===============+====================================================+\n")
    monkeypatch.setattr(devices, "_run", lambda argv: table)
    assert npu_busy(1) and not npu_busy(0)
