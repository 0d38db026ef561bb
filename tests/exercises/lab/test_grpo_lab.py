"""GRPO maths through verl's core_algos, checked against COURSE.md section 10's worked numbers."""

from __future__ import annotations

import pytest
import torch

from exercises.lab import grpo

SCORES = [2.2, 0.2, 0.7, 1.7, 0.2, 0.5, 1.0, 0.0]
EXPECTED_ADV = [1.7768, -0.7843, -0.1441, 1.1365, -0.7843, -0.4002, 0.2401, -1.0405]


def _samples(scores, uid="g"):
    return [{"prompt_ids": [1, 2, 3], "response_ids": [4] * (i + 2), "response_mask": [1] * (i + 1) + [0],
             "score": s, "uid": uid} for i, s in enumerate(scores)]


def test_outcome_advantages_match_the_worked_example():
    batch = grpo.collate(_samples(SCORES), pad_id=0)
    adv = grpo.grpo_advantages(batch)
    for i, expected in enumerate(EXPECTED_ADV):
        row = adv[i][batch.response_mask[i].bool()]
        assert row.numel() == i + 1
        assert torch.allclose(row, torch.full_like(row, expected), atol=1e-3)
    assert (adv[batch.response_mask == 0] == 0).all(), "env/padding tokens carry no advantage"


def test_constant_group_gives_zero_advantage():
    batch = grpo.collate(_samples([0.5] * 4), pad_id=0)
    assert grpo.grpo_advantages(batch).abs().max() == 0


def test_collate_places_the_response_after_each_prompt():
    batch = grpo.collate(_samples([1.0, 0.0]), pad_id=0)
    assert batch.input_ids.tolist()[0][:5] == [1, 2, 3, 4, 4]
    assert batch.response_lens.tolist() == [2, 3]
    assert grpo.token_level_rewards(batch).sum(-1).tolist() == [1.0, 0.0]


def test_low_var_kl_loss_matches_the_worked_example():
    logp = torch.tensor([[-1.0, -0.5]])
    ref = torch.tensor([[-1.2, -0.4]])
    mask = torch.ones(1, 2)
    cfg = grpo.actor_loss_config(clip_ratio=0.2, n=2, dp_size=1, batch_num_tokens=2, global_batch_size=1)
    _, parts = grpo.actor_loss(log_prob=logp, old_log_prob=logp, ref_log_prob=ref, entropy=torch.zeros(1, 2),
                               advantages=torch.zeros(1, 2), mask=mask, loss_cfg=cfg, entropy_coeff=0.004,
                               kl_loss_coef=0.001)
    assert float(parts["kl_loss"]) == pytest.approx((0.018731 + 0.005171) / 2, abs=1e-5)


def test_loss_combines_terms_and_clips_at_0_2():
    logp = torch.tensor([[0.0, 0.0]], requires_grad=True)
    old = torch.log(torch.tensor([[0.5, 0.5]]))  # ratio 2 -> clipped at 1.2 for positive advantages
    adv = torch.ones(1, 2)
    ent = torch.full((1, 2), 0.5)
    cfg = grpo.actor_loss_config(clip_ratio=0.2, n=2, dp_size=1, batch_num_tokens=2, global_batch_size=1)
    loss, parts = grpo.actor_loss(log_prob=logp, old_log_prob=old, ref_log_prob=logp.detach(), entropy=ent,
                                  advantages=adv, mask=torch.ones(1, 2), loss_cfg=cfg, entropy_coeff=0.004,
                                  kl_loss_coef=0.001)
    assert float(parts["pg_loss"]) == pytest.approx(-1.2)
    assert parts["actor/pg_clipfrac"] == pytest.approx(1.0)
    assert float(loss) == pytest.approx(-1.2 - 0.004 * 0.5 + 0.001 * 0.0)
