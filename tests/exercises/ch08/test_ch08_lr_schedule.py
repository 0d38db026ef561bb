"""ch08.lr_schedule: every expected LR factor equals torchtitan 0.3.0's own LRSchedulersContainer, and the step
arithmetic and course factors equal COURSE.md §3/§10."""
from __future__ import annotations

import pytest
import torch

from grading.exercise import Catalogue

lr_mod = pytest.importorskip("torchtitan.components.optimizer.lr_scheduler", reason="torchtitan is in the training extra")
REF = Catalogue().get("ch08.lr_schedule").reference()["checks"]
LR_CALLS = REF["lr_course"]["calls"] + REF["lr_short_run"]["calls"] + REF["lr_variants"]["calls"]
DEFAULTS = {"total_steps": 75, "warmup_steps": 5, "min_lr_factor": 0.1, "decay_type": "cosine", "decay_ratio": None}


def _torchtitan_factor(step, total_steps, warmup_steps, min_lr_factor, decay_type, decay_ratio):
    cfg = lr_mod.LRSchedulersContainer.Config(warmup_steps=warmup_steps, decay_ratio=decay_ratio,
                                              decay_type=decay_type, min_lr_factor=min_lr_factor)
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    container = cfg.build(optimizers=[opt], training_steps=total_steps)
    return container.schedulers[0].lr_lambdas[0](step)


@pytest.mark.parametrize("call", LR_CALLS, ids=range(len(LR_CALLS)))
def test_lr_factor_matches_torchtitan(call):
    names = list(DEFAULTS)
    step, *rest = call["args"]
    kwargs = {**DEFAULTS, **dict(zip(names, rest)), **call.get("kwargs", {})}
    assert _torchtitan_factor(step, **kwargs) == pytest.approx(call["expect"], abs=1e-12)


def test_lr_factors_match_course():
    got = [c["expect"] for c in REF["lr_course"]["calls"]]
    assert [c["args"][0] for c in REF["lr_course"]["calls"]] == [0, 4, 5, 6, 40, 74]
    assert got == pytest.approx([0.2, 1.0, 1.0, 0.9995, 0.55, 0.1005], abs=1e-4)
    short = [c["expect"] for c in REF["lr_short_run"]["calls"][:3]]
    assert short == pytest.approx([1 / 3, 2 / 3, 1.0], abs=1e-4)


def test_step_arithmetic_matches_course():
    course, fsdp = (c["expect"] for c in REF["step_arithmetic"]["calls"][:2])
    assert (course["steps_per_epoch"], course["total_steps"], course["samples_per_step"],
            course["optimizer_steps_per_step"], course["samples_per_rank_per_mini_batch"],
            course["max_seq_len"]) == (15, 75, 1024, 4, 128, 5120)
    assert course["mini_batch_samples"] == 256
    assert fsdp["total_steps"] == 155

