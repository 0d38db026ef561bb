# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   language_info:
#     name: python
# ---

# %% [markdown]
# # 第 8 章 · 练习：训练步数与学习率调度
#
# TorchTitan 的优化器配置把 FSDP 的 `lr_scheduler_type=cosine`、`min_lr_ratio=0.1`、`lr_warmup_steps_ratio=0.03`
# 换成 `optim.decay_type=cosine`、`optim.min_lr_factor=0.1`、`optim.lr_warmup_steps=5`。
# 2000 条训练数据、`train_batch_size=128`、5 个 epoch、`rollout.n=8`、`ppo_mini_batch_size=32`、2 张卡。
#
# ---
#
# # Chapter 8 · Exercise: training steps and the LR schedule
#
# TorchTitan's optimizer config replaces FSDP's `lr_scheduler_type=cosine`, `min_lr_ratio=0.1`,
# `lr_warmup_steps_ratio=0.03` with `optim.decay_type=cosine`, `optim.min_lr_factor=0.1`,
# `optim.lr_warmup_steps=5`. The run has 2000 training rows, `train_batch_size=128`, 5 epochs, `rollout.n=8`,
# `ppo_mini_batch_size=32` and 2 cards.

# %% [markdown]
# ## 任务
# 1. `step_arithmetic(...)` 返回字典：`steps_per_epoch`、`total_steps`、`samples_per_step`（每步样本 = 批大小 × n）、
#    `mini_batch_samples`（mini-batch × n）、`optimizer_steps_per_step`、`samples_per_rank_per_mini_batch`（在各卡间均分）、
#    `max_seq_len`（提示 + 回复）。数据加载器丢弃最后不满一批的数据（`drop_last`），所有除法都是整除。
# 2. `lr_factor(step, total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", decay_ratio=None)`：
#    torchtitan `LRSchedulersContainer` 的 warmup → stable → decay 系数，`step` 从 0 开始。
#    - warmup：`(step+1)/warmup`；warmup 大于总步数时截为总步数。
#    - `decay_steps = total − warmup`（或 `round(total·decay_ratio)`，不超过 `total − warmup`）；`stable = total + 1 − warmup − decay`。
#      `round` 是 Python 的 `round`（与 torchtitan 相同：恰好一半时取偶数，`round(2.5) == 2`）。
#    - 衰减进度 `p = (step + 1 − warmup − stable)/decay`；linear `1−p`、sqrt `1−√p`、cosine `½(1+cos πp)`，
#      再映射为 `min + (1−min)·f`。
#
# **调度要你自己写：** 本练习的内核中 `torchtitan` 不可导入，调用它的 `lr_factor` 得 0 分。你可以阅读 torchtitan 的
# `LRSchedulersContainer` 源码；评分端用它本身的调度器算出期望的系数来核对你的答案。
#
# ---
#
# ## Tasks
# 1. `step_arithmetic(...)` returns a dict: `steps_per_epoch`, `total_steps`, `samples_per_step` (batch × n),
#    `mini_batch_samples` (mini-batch × n), `optimizer_steps_per_step`, `samples_per_rank_per_mini_batch` (split evenly
#    over the cards), `max_seq_len` (prompt + response). The dataloader drops the last partial batch (`drop_last`);
#    every division is a floor division.
# 2. `lr_factor(step, total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", decay_ratio=None)`:
#    the warmup → stable → decay multiplier of torchtitan's `LRSchedulersContainer`, `step` 0-indexed.
#    - warmup: `(step+1)/warmup`; a warmup longer than the run is clamped to the total.
#    - `decay_steps = total − warmup` (or `round(total·decay_ratio)`, at most `total − warmup`);
#      `stable = total + 1 − warmup − decay`. `round` is Python's `round`, as in torchtitan: an exact half goes to
#      the even number (`round(2.5) == 2`).
#    - decay progress `p = (step + 1 − warmup − stable)/decay`; linear `1−p`, sqrt `1−√p`, cosine `½(1+cos πp)`,
#      mapped to `min + (1−min)·f`.
#
# **Writing the schedule is the exercise:** `torchtitan` cannot be imported in this exercise's kernel, and an
# `lr_factor` that calls it scores 0. Read torchtitan's `LRSchedulersContainer` source if you like; the grader
# checks your factors against the ones its own scheduler computes.

# %%
def step_arithmetic(num_train=2000, train_batch_size=128, total_epochs=5, rollout_n=8, ppo_mini_batch_size=32,
                    world_size=2, max_prompt_length=1024, max_response_length=4096):
    ### BEGIN SOLUTION
    """Derived sizes of a GRPO run; the dataloader drops the last partial batch."""
    samples_per_step = train_batch_size * rollout_n
    mini_batch_samples = ppo_mini_batch_size * rollout_n
    return {
        "steps_per_epoch": num_train // train_batch_size,
        "total_steps": num_train // train_batch_size * total_epochs,
        "samples_per_step": samples_per_step,
        "mini_batch_samples": mini_batch_samples,
        "optimizer_steps_per_step": samples_per_step // mini_batch_samples,
        "samples_per_rank_per_mini_batch": mini_batch_samples // world_size,
        "max_seq_len": max_prompt_length + max_response_length,
    }
    ### STUB
    # """Return the dict of derived sizes described above."""
    # raise NotImplementedError("implement step_arithmetic")
    ### END SOLUTION

# %%
import math


def lr_factor(step, total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", decay_ratio=None):
    ### BEGIN SOLUTION
    """torchtitan's linear warmup -> stable -> decay multiplier for 0-indexed `step`."""
    warmup_steps = min(warmup_steps, total_steps)
    if decay_ratio is None:
        decay_steps = total_steps - warmup_steps
    else:
        decay_steps = min(round(total_steps * decay_ratio), total_steps - warmup_steps)
    stable_steps = total_steps + 1 - warmup_steps - decay_steps  # one virtual step keeps the last lr above 0
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if step < warmup_steps + stable_steps:
        return 1.0
    progress = (step + 1 - warmup_steps - stable_steps) / decay_steps
    if decay_type == "linear":
        factor = 1 - progress
    elif decay_type == "sqrt":
        factor = 1 - math.sqrt(progress)
    else:
        factor = 0.5 * (1.0 + math.cos(math.pi * progress))
    return min_lr_factor + (1 - min_lr_factor) * factor
    ### STUB
    # """Return the LR multiplier at 0-indexed `step`."""
    # raise NotImplementedError("implement lr_factor")
    ### END SOLUTION

# %% [markdown]
# ## 自查（仅公开用例）
#
# ---
#
# ## Self-check (public cases only)

# %% tags=["self-check"]
from exercises.lab.selfcheck import show as _show

_show("TorchTitan run: 15 steps/epoch, 75 total", lambda: {k: step_arithmetic()[k] for k in
      ("steps_per_epoch", "total_steps", "samples_per_step", "optimizer_steps_per_step",
       "samples_per_rank_per_mini_batch", "max_seq_len")},
      {"steps_per_epoch": 15, "total_steps": 75, "samples_per_step": 1024, "optimizer_steps_per_step": 4,
       "samples_per_rank_per_mini_batch": 128, "max_seq_len": 5120})
_show("FSDP run: 155 steps", lambda: {"total_steps": step_arithmetic(2000, 64, 5, 8, 16)["total_steps"]},
      {"total_steps": 155})
for _step, _want in zip([0, 4, 5, 6, 40, 74], [0.2, 1.0, 1.0, 0.9995, 0.55, 0.1005]):
    _show(f"lr_factor({_step})", lambda: lr_factor(_step), _want, 1e-4)

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'step_arithmetic': {'compare': 'exact',
                     'feedback': {'en': 'The train dataloader uses drop_last: steps per epoch = num_train // '
                                        'train_batch_size (floor), times the epochs; each prompt yields '
                                        'rollout_n samples, and a mini-batch is split over the ranks.',
                                  'zh': '训练 dataloader 使用 drop_last：每个 epoch 的步数 = num_train // '
                                        'train_batch_size（向下取整），再乘 epoch 数；每个提示产生 rollout_n 个样本，mini-batch '
                                        '再平分到各 rank。'},
                     'calls': [{'args': [],
                                'public': True,
                                'label': 'the TorchTitan run',
                                'expect': {'steps_per_epoch': 15,
                                           'total_steps': 75,
                                           'samples_per_step': 1024,
                                           'mini_batch_samples': 256,
                                           'optimizer_steps_per_step': 4,
                                           'samples_per_rank_per_mini_batch': 128,
                                           'max_seq_len': 5120},
                                'rules': ['drop_last', 'samples', 'floor', 'per_rank', 'max_seq_len']},
                               {'args': [2000, 64, 5, 8, 16],
                                'public': True,
                                'label': 'the FSDP run (batch 64, mini-batch 16)',
                                'expect': {'steps_per_epoch': 31,
                                           'total_steps': 155,
                                           'samples_per_step': 512,
                                           'mini_batch_samples': 128,
                                           'optimizer_steps_per_step': 4,
                                           'samples_per_rank_per_mini_batch': 64,
                                           'max_seq_len': 5120},
                                'rules': ['drop_last', 'samples', 'floor', 'per_rank', 'max_seq_len']},
                               {'args': [2000, 128, 5, 8, 32, 2, 1024, 4096],
                                'public': True,
                                'label': 'the TorchTitan run, every argument given',
                                'expect': {'steps_per_epoch': 15,
                                           'total_steps': 75,
                                           'samples_per_step': 1024,
                                           'mini_batch_samples': 256,
                                           'optimizer_steps_per_step': 4,
                                           'samples_per_rank_per_mini_batch': 128,
                                           'max_seq_len': 5120},
                                'rules': ['drop_last', 'samples', 'floor', 'per_rank', 'max_seq_len']},
                               {'args': [1000, 128, 3, 8, 32, 2],
                                'public': False,
                                'expect': {'steps_per_epoch': 7,
                                           'total_steps': 21,
                                           'samples_per_step': 1024,
                                           'mini_batch_samples': 256,
                                           'optimizer_steps_per_step': 4,
                                           'samples_per_rank_per_mini_batch': 128,
                                           'max_seq_len': 5120},
                                'rules': ['drop_last', 'samples', 'floor', 'per_rank']},
                               {'args': [2000, 128, 5, 5, 32, 4, 512, 2048],
                                'public': False,
                                'expect': {'steps_per_epoch': 15,
                                           'total_steps': 75,
                                           'samples_per_step': 640,
                                           'mini_batch_samples': 160,
                                           'optimizer_steps_per_step': 4,
                                           'samples_per_rank_per_mini_batch': 40,
                                           'max_seq_len': 2560},
                                'rules': ['samples', 'floor', 'per_rank', 'max_seq_len']},
                               {'args': [500, 100, 2, 4, 50, 1, 256, 256],
                                'public': False,
                                'expect': {'steps_per_epoch': 5,
                                           'total_steps': 10,
                                           'samples_per_step': 400,
                                           'mini_batch_samples': 200,
                                           'optimizer_steps_per_step': 2,
                                           'samples_per_rank_per_mini_batch': 200,
                                           'max_seq_len': 512},
                                'rules': ['samples', 'floor', 'per_rank', 'max_seq_len']},
                               {'args': [2000, 256, 1, 8, 64, 8, 1024, 8192],
                                'public': False,
                                'expect': {'steps_per_epoch': 7,
                                           'total_steps': 7,
                                           'samples_per_step': 2048,
                                           'mini_batch_samples': 512,
                                           'optimizer_steps_per_step': 4,
                                           'samples_per_rank_per_mini_batch': 64,
                                           'max_seq_len': 9216},
                                'rules': ['drop_last', 'samples', 'floor', 'per_rank', 'max_seq_len']}]},
 'lr_course': {'compare': 'numeric',
               'rtol': 0.0,
               'atol': 0.0001,
               'feedback': {'en': 'With warmup 5 the factor rises as (step+1)/warmup; afterwards a cosine '
                                  'decay over total - warmup steps is scaled into [min_lr_factor, 1].',
                            'zh': 'warmup 为 5 时系数按 (step+1)/warmup 上升；之后在 total - warmup 步内按 cosine 衰减，并缩放到 '
                                  '[min_lr_factor, 1]。'},
               'calls': [{'args': [0], 'public': True, 'label': 'step 0', 'expect': 0.2, 'rules': ['warmup']},
                         {'args': [4], 'public': True, 'label': 'step 4', 'expect': 1.0, 'rules': ['warmup']},
                         {'args': [5], 'public': True, 'label': 'step 5', 'expect': 1.0, 'rules': ['stable']},
                         {'args': [6],
                          'public': True,
                          'label': 'step 6',
                          'expect': 0.9995468799435916,
                          'rules': ['cosine', 'min_floor', 'stable']},
                         {'args': [40],
                          'public': True,
                          'label': 'step 40',
                          'expect': 0.55,
                          'rules': ['cosine', 'min_floor', 'stable']},
                         {'args': [74],
                          'public': True,
                          'label': 'step 74',
                          'expect': 0.10045312005640844,
                          'rules': ['cosine', 'min_floor', 'stable']}]},
 'lr_short_run': {'compare': 'numeric',
                  'rtol': 0.0,
                  'atol': 1e-06,
                  'feedback': {'en': 'When warmup_steps exceeds total_steps, torchtitan clamps warmup to '
                                     'total_steps (the 3-step run warms up over 3 steps).',
                               'zh': 'warmup_steps 大于 total_steps 时，torchtitan 会把 warmup 截为 total_steps（3 '
                                     '步运行在 3 步内完成 warmup）。'},
                  'calls': [{'args': [0, 3],
                             'public': False,
                             'expect': 0.3333333333333333,
                             'rules': ['clamp']},
                            {'args': [1, 3],
                             'public': False,
                             'expect': 0.6666666666666666,
                             'rules': ['clamp']},
                            {'args': [2, 3], 'public': False, 'expect': 1.0, 'rules': ['clamp']},
                            {'args': [0, 4, 10], 'public': False, 'expect': 0.25, 'rules': ['clamp']},
                            {'args': [3, 4, 10], 'public': False, 'expect': 1.0, 'rules': ['clamp']},
                            {'args': [4, 4, 10], 'public': False, 'expect': 1.0, 'rules': ['clamp']}]},
 'lr_variants': {'compare': 'numeric',
                 'rtol': 0.0,
                 'atol': 1e-06,
                 'feedback': {'en': 'Check the decay phase: stable = total + 1 - warmup - decay steps, '
                                    "decay_ratio gives round(total*ratio) decay steps (Python's round, "
                                    'capped at total - warmup), linear/sqrt/cosine shapes, and the '
                                    'min_lr_factor floor.',
                              'zh': '检查衰减阶段：stable = total + 1 - warmup - decay，decay_ratio 对应 '
                                    'round(total*ratio) 个衰减步（Python 的 round，不超过 total - '
                                    'warmup），linear/sqrt/cosine 三种形状，以及 min_lr_factor 下限。'},
                 'calls': [{'args': [10, 100, 10, 0.1, 'linear'],
                            'public': False,
                            'expect': 1.0,
                            'rules': ['linear', 'stable']},
                           {'args': [55, 100, 10, 0.0, 'linear'],
                            'public': False,
                            'expect': 0.5,
                            'rules': ['linear', 'min_floor']},
                           {'args': [30, 100, 10],
                            'kwargs': {'decay_ratio': 0.5},
                            'public': False,
                            'expect': 1.0,
                            'rules': ['decay_ratio']},
                           {'args': [75, 100, 10],
                            'kwargs': {'decay_ratio': 0.5},
                            'public': False,
                            'expect': 0.55,
                            'rules': ['decay_ratio', 'default_cosine']},
                           {'args': [99, 100, 10, 0.1, 'cosine', 0.5],
                            'public': False,
                            'expect': 0.1008879722072778,
                            'rules': ['decay_ratio', 'min_floor']},
                           {'args': [0, 20, 0], 'public': False, 'expect': 1.0, 'rules': ['no_warmup']},
                           {'args': [19, 20, 0, 0.0, 'sqrt'],
                            'public': False,
                            'expect': 0.025320565519103666,
                            'rules': ['sqrt', 'min_floor']},
                           {'args': [37, 75],
                            'kwargs': {'min_lr_factor': 0.0},
                            'public': False,
                            'expect': 0.5671166329088277,
                            'rules': ['min_floor']},
                           {'args': [80, 100, 10, 0.1, 'linear', 0.257],
                            'public': False,
                            'expect': 0.7923076923076923,
                            'rules': ['round']},
                           {'args': [80, 100, 10, 0.1, 'linear', 0.253],
                            'public': False,
                            'expect': 0.8200000000000001,
                            'rules': ['round']},
                           {'args': [9, 10, 2, 0.0, 'linear', 0.25],
                            'public': False,
                            'expect': 0.5,
                            'rules': ['round']},
                           {'args': [5, 20, 5, 0.1, 'linear', 0.9],
                            'public': False,
                            'expect': 1.0,
                            'rules': ['decay_cap']},
                           {'args': [19, 20, 5, 0.0, 'cosine', 0.9],
                            'public': False,
                            'expect': 0.010926199633097156,
                            'rules': ['decay_cap']}]}}

MISTAKES = [{'name': 'keeps_last_batch',
  'score': 7.4286,
  'fails': {'step_arithmetic': 'drops the last partial batch'},
  'patch': [{'find': '        "steps_per_epoch": num_train // train_batch_size,\n'
                     '        "total_steps": num_train // train_batch_size * total_epochs,',
             'replace': '        "steps_per_epoch": -(-num_train // train_batch_size),  # keeps the last '
                        'partial batch\n'
                        '        "total_steps": -(-num_train // train_batch_size) * total_epochs,'}]},
 {'name': 'no_min_lr_floor',
  'score': 8.3846,
  'fails': {'lr_course': 'min_lr_factor', 'lr_variants': 'mapped into [min_lr_factor, 1]'},
  'patch': [{'find': '    return min_lr_factor + (1 - min_lr_factor) * factor',
             'replace': '    return factor'}]},
 {'name': 'warmup_from_zero',
  'score': 7.3333,
  'fails': {'lr_course': '(step+1)/warmup'},
  'patch': [{'find': '        return (step + 1) / warmup_steps',
             'replace': '        return step / warmup_steps'}]},
 {'name': 'warmup_not_clamped',
  'score': 8.0,
  'fails': {'lr_short_run': 'clamped to total_steps'},
  'patch': [{'find': '    """torchtitan\'s linear warmup -> stable -> decay multiplier for 0-indexed '
                     '`step`."""\n'
                     '    warmup_steps = min(warmup_steps, total_steps)\n'
                     '    if decay_ratio is None:',
             'replace': '    """torchtitan\'s linear warmup -> stable -> decay multiplier for 0-indexed '
                        '`step`."""\n'
                        '    if decay_ratio is None:'}]},
 {'name': 'decay_steps_floored',
  'score': 9.8462,
  'fails': {'lr_variants': '1 of 13 hidden cases failed'},
  'patch': [{'find': 'min(round(total_steps * decay_ratio), total_steps - warmup_steps)',
             'replace': 'min(int(total_steps * decay_ratio), total_steps - warmup_steps)'}]},
 {'name': 'decay_not_capped',
  'score': 9.6923,
  'fails': {'lr_variants': '2 of 13 hidden cases failed'},
  'patch': [{'find': 'min(round(total_steps * decay_ratio), total_steps - warmup_steps)',
             'replace': 'round(total_steps * decay_ratio)'}]}]

RULES = {'step_arithmetic': [{'id': 'drop_last',
                      'stated': 'drops the last partial batch',
                      'hint': {'en': 'Steps per epoch: the dataloader drops the last partial batch '
                                     '(num_train // train_batch_size), then times the epochs.',
                               'zh': '每个 epoch 的步数：dataloader 丢弃最后不满一批的数据（num_train // train_batch_size），再乘 '
                                     'epoch 数。'}},
                     {'id': 'samples',
                      'stated': '(mini-batch × n)',
                      'hint': {'en': 'Each prompt yields rollout_n samples: samples_per_step = batch × n and '
                                     'mini_batch_samples = mini-batch × n.',
                               'zh': '每个提示产生 rollout_n 个样本：samples_per_step = 批大小 × n，mini_batch_samples = '
                                     'mini-batch × n。'}},
                     {'id': 'floor',
                      'stated': 'every division is a floor division',
                      'hint': {'en': 'Every division is a floor division: optimizer_steps_per_step = '
                                     'samples_per_step // mini_batch_samples.',
                               'zh': '所有除法都是整除：optimizer_steps_per_step = samples_per_step // '
                                     'mini_batch_samples。'}},
                     {'id': 'per_rank',
                      'stated': 'split evenly over the cards',
                      'hint': {'en': 'A mini-batch is split evenly over the cards: mini_batch_samples // '
                                     'world_size.',
                               'zh': 'mini-batch 在各卡间均分：mini_batch_samples // world_size。'}},
                     {'id': 'max_seq_len',
                      'stated': '(prompt + response)',
                      'hint': {'en': 'max_seq_len is the prompt length plus the response length.',
                               'zh': 'max_seq_len 是提示长度加回复长度。'}}],
 'lr_course': [{'id': 'warmup',
                'stated': 'warmup: `(step+1)/warmup`',
                'hint': {'en': 'During warmup the factor is (step+1)/warmup, step 0-indexed.',
                         'zh': 'warmup 期间系数为 (step+1)/warmup，step 从 0 开始。'}},
               {'id': 'stable',
                'stated': 'stable = total + 1 − warmup − decay',
                'hint': {'en': 'After warmup come stable = total + 1 - warmup - decay steps at factor 1; '
                               'decay starts after them.',
                         'zh': 'warmup 之后是 stable = total + 1 - warmup - decay 步、系数为 1；之后才开始衰减。'}},
               {'id': 'cosine',
                'stated': 'cosine `½(1+cos πp)`',
                'hint': {'en': 'The course run decays with cosine: f = ½(1 + cos πp), p = (step + 1 - warmup '
                               '- stable)/decay.',
                         'zh': '课程运行使用 cosine 衰减：f = ½(1 + cos πp)，p = (step + 1 - warmup - stable)/decay。'}},
               {'id': 'min_floor',
                'stated': 'mapped to `min + (1−min)·f`',
                'hint': {'en': 'The decay shape f is mapped into [min_lr_factor, 1]: min + (1 - min)·f.',
                         'zh': '衰减形状 f 要映射到 [min_lr_factor, 1]：min + (1 - min)·f。'}}],
 'lr_short_run': [{'id': 'clamp',
                   'stated': 'a warmup longer than the run is clamped to the total',
                   'types': 'total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", '
                            'decay_ratio=None',
                   'hint': {'en': 'A warmup longer than the run is clamped to total_steps (the 3-step run '
                                  'warms up over 3 steps).',
                            'zh': 'warmup 大于总步数时截为 total_steps（3 步运行在 3 步内完成 warmup）。'}}],
 'lr_variants': [{'id': 'linear',
                  'stated': 'linear `1−p`',
                  'types': 'total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", '
                           'decay_ratio=None',
                  'hint': {'en': 'decay_type linear decays as f = 1 - p.',
                           'zh': 'decay_type 为 linear 时 f = 1 - p。'}},
                 {'id': 'default_cosine',
                  'stated': 'decay_type="cosine"',
                  'types': 'total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", '
                           'decay_ratio=None',
                  'hint': {'en': 'decay_type keeps its default (cosine) unless it is passed.',
                           'zh': '未传入 decay_type 时使用默认值 cosine。'}},
                 {'id': 'sqrt',
                  'stated': 'sqrt `1−√p`',
                  'types': 'total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", '
                           'decay_ratio=None',
                  'hint': {'en': 'decay_type sqrt decays as f = 1 - √p.',
                           'zh': 'decay_type 为 sqrt 时 f = 1 - √p。'}},
                 {'id': 'stable',
                  'stated': 'stable = total + 1 − warmup − decay',
                  'types': 'total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", '
                           'decay_ratio=None',
                  'hint': {'en': 'stable = total + 1 - warmup - decay steps keep factor 1 before the decay '
                                 'starts.',
                           'zh': '衰减开始前有 stable = total + 1 - warmup - decay 步保持系数 1。'}},
                 {'id': 'min_floor',
                  'stated': 'mapped to `min + (1−min)·f`',
                  'types': 'total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", '
                           'decay_ratio=None',
                  'hint': {'en': 'Every decay shape is mapped into [min_lr_factor, 1]: min + (1 - min)·f, '
                                 'also with another min_lr_factor.',
                           'zh': '每种衰减形状都要映射到 [min_lr_factor, 1]：min + (1 - min)·f，min_lr_factor 改变时也一样。'}},
                 {'id': 'decay_ratio',
                  'stated': '(or `round(total·decay_ratio)`',
                  'types': 'total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", '
                           'decay_ratio=None',
                  'hint': {'en': 'With decay_ratio the decay lasts round(total·decay_ratio) steps and the '
                                 'steps before it stay at 1.',
                           'zh': '给出 decay_ratio 时衰减持续 round(total·decay_ratio) 步，之前的步保持 1。'}},
                 {'id': 'round',
                  'stated': "`round` is Python's `round`",
                  'types': 'total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", '
                           'decay_ratio=None',
                  'hint': {'en': "decay_steps = round(total·decay_ratio) with Python's round: not floor, not "
                                 'ceil, and an exact half goes to the even number.',
                           'zh': 'decay_steps = round(total·decay_ratio)，用 Python 的 '
                                 'round：不是向下或向上取整，恰好一半时取偶数。'}},
                 {'id': 'decay_cap',
                  'stated': 'at most `total − warmup`',
                  'types': 'total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", '
                           'decay_ratio=None',
                  'hint': {'en': 'decay_steps from decay_ratio is capped at total - warmup, so the decay '
                                 'never starts inside the warmup.',
                           'zh': '由 decay_ratio 得到的 decay_steps 不超过 total - warmup，衰减不会在 warmup 内开始。'}},
                 {'id': 'no_warmup',
                  'stated': 'warmup: `(step+1)/warmup`',
                  'types': 'total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", '
                           'decay_ratio=None',
                  'hint': {'en': 'With warmup_steps 0 there is no warmup phase: step 0 is already at the '
                                 'stable factor.',
                           'zh': 'warmup_steps 为 0 时没有 warmup 阶段：第 0 步已是稳定系数。'}}]}

