"""ch06.npu_converter: counts against the real 1.7B/debug models, numerics against torchtitan's own modules."""
from __future__ import annotations

import pytest
import torch

from grading.exercise import Catalogue
from torchtitan.models.common.nn_modules import RMSNorm
from torchtitan.models.common.rope import CosSinRoPE
from torchtitan.models.qwen3 import model_registry

REF = Catalogue().get("ch06.npu_converter").reference()["checks"]


def _t(v):
    s = v["__tensor__"]
    return torch.tensor(s["data"], dtype=getattr(torch, s["dtype"])).reshape(s["shape"])


@pytest.mark.parametrize(("flavor", "expect"), [("1.7B", REF["counts_1_7b"]["expected"]),
                                                ("debugmodel", REF["registry"]["calls"][0]["expect"])])
def test_module_counts(flavor, expect):
    with torch.device("meta"):
        model = model_registry(flavor, attn_backend="flex").model.build()
    assert sum(isinstance(m, RMSNorm) for m in model.modules()) == expect["npu_rms_norm"]
    assert sum(isinstance(m, CosSinRoPE) for m in model.modules()) == expect["npu_rope"]
    assert all(m.eps == 1e-6 for m in model.modules() if isinstance(m, RMSNorm))


@pytest.mark.parametrize("call", REF["rmsnorm_numerics"]["calls"], ids=lambda c: str(c["args"][2]))
def test_rmsnorm_expectations_equal_torchtitan_rmsnorm(call):
    x, w, eps = _t(call["args"][0]), _t(call["args"][1]), call["args"][2]
    norm = RMSNorm(RMSNorm.Config(normalized_shape=x.shape[-1], eps=eps))
    with torch.no_grad():
        norm.weight.copy_(w)
        torch.testing.assert_close(norm(x), _t(call["expect"]["out"]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", REF["rope_numerics"]["calls"], ids=lambda c: str(c["args"][0]["__tensor__"]["shape"]))
def test_rope_expectations_equal_torchtitan_rope(call):
    q, k = _t(call["args"][0]), _t(call["args"][1])
    rope = CosSinRoPE(CosSinRoPE.Config(dim=q.shape[-1], max_seq_len=q.shape[1], theta=1_000_000.0))
    q_out, k_out = rope(q, k)
    torch.testing.assert_close(q_out, _t(call["expect"]["q"]), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(k_out, _t(call["expect"]["k"]), rtol=1e-5, atol=1e-6)
