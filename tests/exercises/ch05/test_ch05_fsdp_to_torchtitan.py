"""ch05.fsdp_to_torchtitan: the answer file's script keys agree with COURSE.md and with verl's own engine config."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

import verl
from grading.exercise import Catalogue
from verl.workers.config import TorchtitanEngineConfig

REF = Catalogue().get("ch05.fsdp_to_torchtitan").reference()["checks"]
SCRIPT = REF["script_keys"]["expected"]
ENGINE_YAML = yaml.safe_load((Path(verl.__file__).parent / "trainer/config/engine/torchtitan.yaml").read_text())
A = "actor_rollout_ref.actor."


def test_plus_prefix_exactly_for_keys_missing_from_verls_yaml():
    """Hydra needs '+' for a key the yaml lacks: expert_tensor_parallel_size is in the dataclass, not the yaml."""
    fields = {f.name for f in dataclasses.fields(TorchtitanEngineConfig)}
    for key in SCRIPT:
        if ".torchtitan." not in key:
            continue
        leaf = key.rsplit(".", 1)[1]
        assert leaf in fields, f"{leaf} is not a TorchtitanEngineConfig field"
        assert key.startswith("+") == (leaf not in ENGINE_YAML), f"{key}: '+' prefix disagrees with engine yaml"
    assert "+" + A + "torchtitan.expert_tensor_parallel_size" in SCRIPT


def test_reshard_values_are_torchtitan_policies():
    allowed = {"default", "always", "never"}
    assert SCRIPT[A + "torchtitan.reshard_after_forward"] in allowed
    for call in REF["hidden_cases"]["calls"] + REF["public_cases"]["calls"]:
        for key, value in call["expect"].items():
            if key.endswith("reshard_after_forward"):
                assert value in allowed


def test_course_values():
    """COURSE.md section 1: two-card FSDP2, varlen, 5120, warm-up 5, cosine with floor 0.1, ref keys."""
    assert SCRIPT["model_engine"] == "torchtitan"
    assert SCRIPT[A + "torchtitan.data_parallel_shard_size"] == 2
    assert SCRIPT[A + "torchtitan.context_parallel_size"] == 1
    assert SCRIPT[A + "torchtitan.attn_type"] == "varlen"
    assert SCRIPT[A + "torchtitan.max_seq_len"] == SCRIPT["actor_rollout_ref.ref.torchtitan.max_seq_len"] == 5120
    assert SCRIPT[A + "optim.lr_warmup_steps"] == 5
    assert SCRIPT[A + "optim.min_lr_factor"] == 0.1 and SCRIPT[A + "optim.decay_type"] == "cosine"
    assert SCRIPT["actor_rollout_ref.ref.torchtitan.param_offload"] is True
    assert len(SCRIPT) == 22
    # verl's yaml defaults that the script has to override
    assert ENGINE_YAML["attn_type"] == "flex" and ENGINE_YAML["use_torch_compile"] is True
