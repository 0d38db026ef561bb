"""ch06.varlen_metadata: reference vectors against verl's real builder, torchtitan's, and COURSE.md section 5."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

import torchtitan.components.optimizer.lr_scheduler as _lr
import verl
from grading.exercise import Catalogue
from torchtitan.models.common.attention import create_varlen_metadata_for_document

REF = Catalogue().get("ch06.varlen_metadata").reference()["checks"]


def _verl_utils():
    """Loaded by path: verl.workers.engine's __init__ needs peft; torchtitan 0.3.0 needs PLATFORM.md's shim."""
    sys.modules.setdefault("torchtitan.components.lr_scheduler", _lr)
    spec = importlib.util.spec_from_file_location(
        "verl_torchtitan_utils_ch06", Path(verl.__file__).parent / "workers/engine/torchtitan/utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VERL = _verl_utils()


def _decode(t):
    spec = t["__tensor__"]
    return torch.tensor(spec["data"], dtype=getattr(torch, spec["dtype"])).reshape(spec["shape"])


@pytest.mark.parametrize("call", REF["positions_builder"]["calls"], ids=lambda c: str(c["args"][0]["__tensor__"]["data"]))
def test_positions_cases_match_verl(call):
    positions = _decode(call["args"][0])
    meta = VERL._create_varlen_metadata_for_document(torch.zeros_like(positions), positions)
    assert torch.equal(meta.cu_seq_q, _decode(call["expect"]["cu_seq_q"]))
    assert meta.cu_seq_q.dtype == torch.int32
    assert meta.max_q == call["expect"]["max_q"]
    if bool(((positions[:, 1:] - positions[:, :-1]) != 1).eq(positions[:, 1:] == 0).all()) and bool((positions[:, 0] == 0).all()):
        # where documents start exactly at position 0, torchtitan's own builder agrees as well
        assert torch.equal(create_varlen_metadata_for_document(positions).cu_seq_q, meta.cu_seq_q)


def test_course_vectors():
    pos = REF["positions_builder"]["calls"]
    assert _decode(pos[0]["expect"]["cu_seq_q"]).tolist() == [0, 3, 5, 6, 8, 12] and pos[0]["expect"]["max_q"] == 4
    assert _decode(pos[1]["expect"]["cu_seq_q"]).tolist() == [0, 5, 8] and pos[1]["expect"]["max_q"] == 5
    eos = REF["eos_builder"]["calls"][0]
    assert _decode(eos["expect"]["cu_seq_q"]).tolist() == [0, 2, 7, 8]
    fa = REF["fa_args"]["calls"][0]["expect"]
    assert fa["q_shape"] == [8, 16, 128] and fa["kv_shape"] == [8, 8, 128] and fa["actual_seq_qlen"] == [3, 8]
    assert fa["scale"] == pytest.approx(0.0883883, abs=1e-7) and fa["sparse_mode"] == 7
    assert fa["input_layout"] == "TND"
