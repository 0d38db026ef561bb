"""Placement on a cluster, as pure functions: which node a job goes to, which job shapes can start now,
and how a shape's demand comes from the exercises that have it (no Ray needed)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from grading.exercise import Catalogue
from service.workers.placement import Demand, NodeView, choose_node, node_views, placeable_shapes, shape_demands

CPU_JOB = Demand(cpus=1, memory_mb=2048)
NPU_JOB = Demand(cpus=2, memory_mb=2048, devices=2, kinds=("npu",))


def _node(node_id, cpus=2.0, memory_mb=8192, npu=0, gpu=0):
    return NodeView(node_id=node_id, cpus=cpus, memory_mb=memory_mb, accelerators={"npu": npu, "cuda": gpu})


def test_device_jobs_go_where_the_devices_are_and_cpu_jobs_keep_off_them():
    nodes = [_node("a-npu", npu=2), _node("b-cpu"), _node("c-npu8", npu=8)]
    assert choose_node(nodes, NPU_JOB) == ("a-npu", "npu")  # tightest fit keeps the 8-NPU node whole
    assert choose_node(nodes, CPU_JOB) == ("b-cpu", "cpu")
    assert choose_node([_node("a-npu", npu=2)], CPU_JOB) == ("a-npu", "cpu")  # but may use it when alone
    assert choose_node(nodes, Demand(cpus=2, memory_mb=1, devices=2, kinds=("cuda",))) is None
    assert choose_node([_node("g", gpu=4)], Demand(cpus=1, memory_mb=1, devices=2)) == ("g", "cuda")


def test_cpus_and_memory_must_both_fit_on_one_node():
    nodes = [_node("a", cpus=1, npu=2), _node("b", cpus=2, memory_mb=1024, npu=2)]
    assert choose_node(nodes, NPU_JOB) is None  # enough NPUs on each, but never CPUs and memory too


def test_a_long_job_leaves_room_for_the_short_lane():
    demands = {("long", 0, 2): Demand(cpus=2, memory_mb=2048), ("short", 0, 1): CPU_JOB}
    one_node = [_node("a", cpus=2)]
    assert placeable_shapes(one_node, demands, reserve=CPU_JOB, reserve_count=1) == [("short", 0, 1)]
    assert placeable_shapes(one_node, demands, reserve=CPU_JOB, reserve_count=0) == [("long", 0, 2), ("short", 0, 1)]
    two_nodes = [_node("a", cpus=2), _node("b", cpus=1)]
    assert placeable_shapes(two_nodes, demands, reserve=CPU_JOB, reserve_count=1) == [("long", 0, 2), ("short", 0, 1)]
    assert placeable_shapes([_node("a", cpus=0.5)], demands, reserve=CPU_JOB, reserve_count=1) == []


def test_node_views_subtract_our_jobs_and_respect_what_ray_reports_free():
    gib = 2**30
    totals = {
        "n1": {"CPU": 4.0, "memory": 8 * gib, "NPU": 2.0},
        "n2": {"CPU": 2.0, "memory": 4 * gib},
        "dead": {"CPU": 8.0, "memory": 8 * gib},
    }
    held = {"n1": [(NPU_JOB, "npu")]}
    available = {"n1": {"CPU": 4.0, "memory": 8 * gib, "NPU": 2.0}, "n2": {"memory": 4 * gib}}  # CPU 0: busy
    views = {v.node_id: v for v in node_views(totals, available, held, excluded=["dead"])}
    assert set(views) == {"n1", "n2"}
    assert (views["n1"].cpus, views["n1"].memory_mb, views["n1"].accelerators["npu"]) == (2.0, 6144, 0)
    assert views["n2"].cpus == 0.0  # someone else's work on a shared cluster
    assert node_views(totals, None, {})[2].cpus == 8.0  # no availability view: totals minus our ledger


def test_shape_demands_come_from_the_catalogue(svc):
    catalogue = Catalogue(svc.catalogue_dir / "exercises", svc.catalogue_dir / "reference")
    demands = shape_demands((e.manifest for e in catalogue), cpus_per_rank=0.5)
    assert demands[("short", 0, 1)] == Demand(cpus=0.5, memory_mb=2048, devices=0, kinds=("npu", "cuda"))
    assert demands[("long", 0, 1)].memory_mb == 2048
    assert demands[("short", 64, 1)].devices == 64


def test_the_course_catalogue_has_a_demand_for_every_exercise():
    catalogue = Catalogue()
    if not list(catalogue):
        pytest.skip("no course exercises")
    demands = shape_demands((e.manifest for e in catalogue), cpus_per_rank=1.0)
    two_ranks = [e.manifest for e in catalogue if e.manifest.resources.world_size == 2]
    assert len(two_ranks) == 3 and all(m.resources.cpu_fallback for m in two_ranks)
    training = demands[("long", 2, 2)]  # the 2-rank exercises: 2 NPUs, else 2 GPUs, else 2 CPU ranks
    assert training.cpus == 2.0 and training.memory_mb == max(m.limits.memory_mb for m in two_ranks)
    assert (training.devices, training.kinds, training.cpu_fallback) == (2, ("npu", "cuda"), True)


def _installed(node_id, *, npu=0, free_npu=None, cpus=4.0):
    free = npu if free_npu is None else free_npu
    return NodeView(
        node_id=node_id, cpus=cpus, memory_mb=8192, accelerators={"npu": free, "cuda": 0}, installed={"npu": npu}
    )


FALLBACK_JOB = Demand(cpus=2, memory_mb=2048, devices=2, kinds=("npu", "cuda"), cpu_fallback=True)


def test_a_fallback_job_takes_devices_where_a_node_has_them_else_cpu_ranks():
    assert choose_node([_installed("npu", npu=2), _installed("cpu")], FALLBACK_JOB) == ("npu", "npu")
    assert choose_node([_installed("cpu")], FALLBACK_JOB) == ("cpu", "cpu")
    assert choose_node([_installed("one", npu=1)], FALLBACK_JOB) == ("one", "cpu")  # too few to use
    # the node has 2 NPUs but both are busy: the job waits for them rather than running on that node's CPU
    assert choose_node([_installed("busy", npu=2, free_npu=0)], FALLBACK_JOB) is None
    assert choose_node([_installed("busy", npu=2, free_npu=0)], replace(FALLBACK_JOB, cpu_fallback=False)) is None
    # a CPU-only node takes it while the busy NPU node is full
    pair = [_installed("busy", npu=2, free_npu=0), _installed("cpu")]
    assert choose_node(pair, FALLBACK_JOB) == ("cpu", "cpu")
    after = pair[1].minus(FALLBACK_JOB, "cpu")
    assert after.cpus == 2.0 and after.accelerators == pair[1].accelerators  # a CPU fallback takes no device


def test_a_shape_falls_back_only_if_every_exercise_of_it_does(svc):
    catalogue = Catalogue()
    training = catalogue.get("ch07.three_step_training").manifest
    strict = training.model_copy(
        update={"resources": training.resources.model_copy(update={"device_kinds": ("npu",)})}
    )
    assert shape_demands([training], cpus_per_rank=1.0)[("long", 2, 2)].cpu_fallback
    assert not shape_demands([training, strict], cpus_per_rank=1.0)[("long", 2, 2)].cpu_fallback
    assert not shape_demands([strict, training], cpus_per_rank=1.0)[("long", 2, 2)].cpu_fallback


def test_withheld_devices_are_not_free_but_still_installed():
    """Devices a job left dirty (ray_hygiene.py) are off the node's free count: no fallback to its CPU."""
    gib = 2**30
    totals = {"n1": {"CPU": 4.0, "memory": 8 * gib, "NPU": 2.0}}
    (view,) = node_views(totals, None, {}, withheld={"n1": {"npu": 1}})
    assert view.accelerators["npu"] == 1 and view.installed["npu"] == 2
    assert view.fits(FALLBACK_JOB) is None


def test_settings_and_cli_select_the_ray_executor():
    from pydantic import ValidationError

    from service.cli import build_parser
    from service.commands import _executor_overrides
    from service.config import Settings

    args = build_parser().parse_args(["worker", "--executor", "ray", "--address", "10.0.0.1:6379"])
    overrides = _executor_overrides(args)
    assert overrides == {"executor": "ray", "ray_address": "10.0.0.1:6379"}
    assert Settings(**overrides).executor == "ray"
    with pytest.raises(ValidationError, match="executor"):
        Settings(executor="slurm")
    with pytest.raises(ValidationError, match="ray_cpus_per_rank"):
        Settings(ray_cpus_per_rank=0)


def test_a_missing_ray_is_refused_with_the_fix(monkeypatch, tmp_path):
    import sys

    from service.config import Settings
    from service.wiring import make_executor
    from service.workers.executor import ExecutorUnavailable

    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    settings = Settings(executor="ray", sandbox="unsafe-local", database_url=f"sqlite:///{tmp_path}/x.db")
    with pytest.raises(ExecutorUnavailable, match=r"pip install -e '\.\[ray\]'"):
        make_executor(settings, processes=1)
