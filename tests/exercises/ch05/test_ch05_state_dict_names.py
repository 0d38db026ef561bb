"""ch05.state_dict_names: reference names against torchtitan's real Qwen3StateDictAdapter on the 1.7B layout.

torchtitan 0.3.0 (installed) differs from the course's pinned commit in two names, normalized here:
`attention.qkv_linear.w{q,k,v}` (pinned: `attention.w{q,k,v}`) and `lm_head.weight` (pinned: `output.weight`).
"""
from __future__ import annotations

import re

import torch

from grading.exercise import Catalogue
from torchtitan.models.qwen3 import Qwen3StateDictAdapter, model_registry

REF = Catalogue().get("ch05.state_dict_names").reference()["checks"]


def _to_pinned(name: str) -> str:
    return re.sub(r"attention\.qkv_linear\.", "attention.", name).replace("lm_head.weight", "output.weight")


def _model_1_7b():
    spec = model_registry("1.7B", attn_backend="flex")
    with torch.device("meta"):
        return spec.model, spec.model.build()


def test_adapter_to_hf_matches_reference_mapping_for_every_1_7b_key():
    config, model = _model_1_7b()
    adapter = Qwen3StateDictAdapter(config, None)
    sd = model.state_dict()
    hf = adapter.to_hf(sd)
    assert len(hf) == 310  # 11 x 28 + 2, output skipped because weights are tied
    expected = {}
    for call in REF["titan_to_hf_public"]["calls"] + REF["titan_to_hf_hidden"]["calls"]:
        if "expect" in call:
            expected[call["args"][0]] = call["expect"]
    checked = 0
    for titan_name in sd:
        if _to_pinned(titan_name) in expected:
            hf_name = expected[_to_pinned(titan_name)]
            if titan_name != "lm_head.weight":
                assert hf_name in hf and hf[hf_name] is sd[titan_name], titan_name
            checked += 1
    assert checked >= 10


def test_vllm_names_for_1_7b_equal_adapter_keys_plus_lm_head():
    config, model = _model_1_7b()
    hf = Qwen3StateDictAdapter(config, None).to_hf(model.state_dict())
    call = REF["vllm_names"]["calls"][1]
    assert len(call["args"][0]) == 311 and call["args"][1] is True
    assert set(call["expect"]) == set(hf) | {"lm_head.weight"}
    assert len(call["expect"]) == REF["count_1_7b"]["expected"] == 311


def test_hf_to_titan_drops_inv_freq_like_the_adapter():
    config, _ = _model_1_7b()
    adapter = Qwen3StateDictAdapter(config, None)
    assert adapter.from_hf_map["model.layers.{}.self_attn.rotary_emb.inv_freq"] is None
    for call in REF["hf_to_titan"]["calls"]:
        if "expect" not in call:
            continue
        name = call["args"][0]
        abstract = re.sub(r"\d+", "{}", name, count=1)
        mapped = adapter.from_hf_map[abstract]
        got = None if mapped is None else _to_pinned(mapped.format(*re.findall(r"\d+", name)[:1]))
        assert got == call["expect"], name
