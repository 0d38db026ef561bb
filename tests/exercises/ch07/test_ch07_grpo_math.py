"""ch07.grpo_math: every expected value equals what verl 0.9.1's core_algos computes, and COURSE.md §10's numbers."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from grading.exercise import Catalogue

core_algos = pytest.importorskip("verl.trainer.ppo.core_algos", reason="verl is part of the training extra")
REF = Catalogue().get("ch07.grpo_math").reference()["checks"]
ADV_CALLS = REF["course_advantages"]["calls"] + REF["grouped_advantages"]["calls"]


@pytest.mark.parametrize("call", ADV_CALLS, ids=range(len(ADV_CALLS)))
def test_advantages_match_verl(call):
    scores, index = call["args"]
    rewards = torch.zeros(len(scores), 3, dtype=torch.float64)
    rewards[:, -1] = torch.tensor(scores, dtype=torch.float64)  # outcome reward on the last token
    mask = torch.ones_like(rewards)
    adv, _ = core_algos.compute_grpo_outcome_advantage(rewards, mask, np.array(index, dtype=object), epsilon=1e-6)
    # verl keeps a singleton group's mean 0 / std 1 as float32 tensors, hence 1e-6 rather than 1e-9
    assert adv[:, 0].tolist() == pytest.approx(call["expect"], abs=1e-6)


@pytest.mark.parametrize("call", REF["k3_kl"]["calls"], ids=range(len(REF["k3_kl"]["calls"])))
def test_low_var_kl_matches_verl(call):
    logp, ref = (torch.tensor(x, dtype=torch.float64) for x in call["args"])
    got = core_algos.kl_penalty(logp, ref, "low_var_kl")
    assert got.tolist() == pytest.approx(call["expect"], abs=1e-12)


def test_course_numbers():
    stats = REF["course_stats"]["expected"]
    assert stats["mean"] == pytest.approx(0.8125, abs=1e-12)
    assert stats["std"] == pytest.approx(0.78091, abs=1e-5)
    assert REF["course_advantages"]["calls"][0]["expect"] == pytest.approx(
        [1.7768, -0.7843, -0.1441, 1.1365, -0.7843, -0.4002, 0.2401, -1.0405], abs=1e-3)
    assert REF["course_advantages"]["calls"][1]["expect"] == [0.0, 0.0, 0.0, 0.0]
    assert REF["k3_kl"]["calls"][0]["expect"] == pytest.approx([0.018731, 0.005171], abs=1e-5)
