"""ch06.mesh_shapes: reference rows against COURSE.md section 4 and against torchtitan's real ParallelDims.

ParallelDims builds its meshes on a single-process "fake" process group of the row's world size (torch's
FakeStore), with `device_type="cpu"` as PLATFORM.md describes. torchtitan 0.3.0 has no etp, so its sparse mesh is
(pp, rep, efsdp, ep) with etp = 1; rows with etp > 1 are checked against the formula only.
"""
from __future__ import annotations

import pytest
import torch.distributed as dist
from torch.testing._internal.distributed.fake_pg import FakeStore

import torchtitan.distributed.parallel_dims as pd_module
from grading.exercise import Catalogue
from torchtitan.distributed import ParallelDims

REF = Catalogue().get("ch06.mesh_shapes").reference()["checks"]
VALID = REF["course_table"]["calls"] + REF["hidden_rows"]["calls"]

# COURSE.md section 4 table, typed in independently of the builder.
COURSE_TABLE = [
    (2, dict(dp_shard=2), (1, 2, 1, 1), (1, 1, 2, 1), (1, 1, 2, 1, 1), 2, 2),
    (2, dict(dp_shard=1, cp=2), (1, 1, 2, 1), (1, 1, 2, 1), (1, 1, 2, 1, 1), 2, 1),
    (8, dict(dp_shard=-1, cp=2), (1, 4, 2, 1), (1, 1, 8, 1), (1, 1, 8, 1, 1), 8, 4),
    (8, dict(dp_replicate=2, dp_shard=2, tp=2), (1, 4, 1, 2), (1, 2, 2, 2), (1, 2, 4, 1, 1), 4, 4),
    (8, dict(dp_shard=8, ep=4), (1, 8, 1, 1), (1, 1, 8, 1), (1, 1, 2, 4, 1), 8, 8),
    (8, dict(pp=2, dp_shard=2, tp=2), (2, 2, 1, 2), (2, 1, 2, 2), (2, 1, 4, 1, 1), 2, 2),
]


def test_public_rows_are_the_course_table():
    got = [(c["args"][0], c["kwargs"], c["expect"]) for c in REF["course_table"]["calls"]]
    assert len(got) == len(COURSE_TABLE)
    for (world, kw, expect), (w, k, dense, fsdp, expert, loss, dp) in zip(got, COURSE_TABLE):
        assert (world, kw) == (w, k)
        assert expect == {"dense": list(dense), "fsdp": list(fsdp), "expert": list(expert), "loss": loss,
                          "verl_dp": dp}


def _build(world: int, kw: dict) -> ParallelDims:
    pd_module.device_type = "cpu"
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    dims = ParallelDims(dp_replicate=kw.get("dp_replicate", 1), dp_shard=kw.get("dp_shard", -1),
                        cp=kw.get("cp", 1), tp=kw.get("tp", 1), pp=kw.get("pp", 1), ep=kw.get("ep", 1),
                        world_size=world, spmd_backend="partial_dtensor")
    dims.build_mesh()
    return dims


@pytest.fixture(autouse=True)
def _clean_process_group():
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


@pytest.mark.parametrize("call", VALID, ids=[f"{c['args'][0]}-{c['kwargs']}" for c in VALID])
def test_valid_rows_match_parallel_dims(call):
    world, kw, expect = call["args"][0], call["kwargs"], call["expect"]
    dims = _build(world, kw)
    meshes = dims._global_meshes
    assert list(meshes["dataloading"].shape) == expect["dense"]
    assert list(meshes["dense"].shape) == expect["fsdp"]
    assert meshes["loss"].size() == expect["loss"]
    assert dims.dp_replicate * dims.dp_shard == expect["verl_dp"]
    if kw.get("etp", 1) == 1:
        assert list(meshes["sparse"].shape) == expect["expert"][:4]


@pytest.mark.parametrize("call", REF["invalid"]["calls"], ids=lambda c: str(c["kwargs"]))
def test_invalid_rows(call):
    world, kw = call["args"][0], call["kwargs"]
    etp, ep, tp = kw.get("etp", 1), kw.get("ep", 1), kw.get("tp", 1)
    if (ep > 1 and etp not in (tp, 1)) or etp < 1:
        pytest.skip("etp validation exists only in the course's pinned torchtitan (COURSE.md section 4)")
    fsdp = (world // max(1, kw.get("dp_replicate", 1) * kw.get("cp", 1) * tp * kw.get("pp", 1))
            if kw.get("dp_shard", -1) == -1 else kw["dp_shard"]) * kw.get("cp", 1)
    if min(kw.values(), default=1) >= 1 and ep >= 1 and (fsdp * tp) % (etp * ep):
        pytest.skip("torchtitan 0.3.0's ParallelDims does not check a fractional efsdp; the notebook states it")
    with pytest.raises(AssertionError):
        ParallelDims(dp_replicate=kw.get("dp_replicate", 1), dp_shard=kw.get("dp_shard", -1), cp=kw.get("cp", 1),
                     tp=tp, pp=kw.get("pp", 1), ep=ep, world_size=world)
