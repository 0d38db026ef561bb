"""ch05.per_tensor_param: recompute the reference names/shapes/checksums with the lab on 2 gloo ranks (drift guard)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grading.exercise import REPO_ROOT, Catalogue

sys.path.insert(0, str(REPO_ROOT / "scripts" / "notebooks"))
import ch05_per_tensor  # noqa: E402


@pytest.mark.slow
def test_lab_materialization_matches_answer_file():
    ref = Catalogue().get("ch05.per_tensor_param").reference()["checks"]
    run = ch05_per_tensor.reference_run()
    assert sorted(ref["hf_names"]["expected"]) == run["names"]
    assert ref["full_shapes"]["expected"] == run["shapes"]
    assert run["dtypes"] == ["torch.bfloat16"]
    assert run["tied"] == {"lm_head_is_embedding": True, "ranks_agree": True}
    for name, (abs_sum, sq_sum) in ref["checksums"]["expected"].items():
        assert run["checksums"][name] == pytest.approx([abs_sum, sq_sum], rel=1e-2, abs=1e-3), name
    # full shapes really are global: embedding = vocab x dim of the shipped checkpoint
    assert run["shapes"]["model.embed_tokens.weight"] == [128, 128]


def test_answer_checksums_are_the_shipped_checkpoint_in_bf16():
    """Materializing the sharded model must give back exactly what from_hf loaded: the SFT checkpoint."""
    import torch
    from safetensors.torch import load_file

    from exercises.lab.checkpoint import SHIPPED_CHECKPOINT

    ref = Catalogue().get("ch05.per_tensor_param").reference()["checks"]["checksums"]["expected"]
    weights = load_file(str(SHIPPED_CHECKPOINT / "model.safetensors"))
    weights.setdefault("lm_head.weight", weights["model.embed_tokens.weight"])
    assert sorted(ref) == sorted(weights)
    for name, (abs_sum, sq_sum) in ref.items():
        t = weights[name].to(torch.bfloat16).float()
        assert [float(t.abs().sum()), float(t.pow(2).sum())] == pytest.approx([abs_sum, sq_sum], rel=1e-5), name
