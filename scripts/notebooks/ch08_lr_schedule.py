"""ch08.lr_schedule: step arithmetic of the run (§3) and torchtitan's warmup-stable-decay LR factor (§10 items 10-11)."""
from __future__ import annotations

from nbkit_ch07_08 import Check, Exercise, Mistake, code, md

SOL_STEPS = '''
def step_arithmetic(num_train=2000, train_batch_size=128, total_epochs=5, rollout_n=8, ppo_mini_batch_size=32,
                    world_size=2, max_prompt_length=1024, max_response_length=4096):
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
'''
SOL_LR = '''
import math


def lr_factor(step, total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", decay_ratio=None):
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
'''
TPL_STEPS = '''
def step_arithmetic(num_train=2000, train_batch_size=128, total_epochs=5, rollout_n=8, ppo_mini_batch_size=32,
                    world_size=2, max_prompt_length=1024, max_response_length=4096):
    """Return the dict of derived sizes described above."""
    raise NotImplementedError("implement step_arithmetic")
'''
TPL_LR = '''
import math


def lr_factor(step, total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", decay_ratio=None):
    """Return the LR multiplier at 0-indexed `step`."""
    raise NotImplementedError("implement lr_factor")
'''

CEIL = SOL_STEPS.replace('''        "steps_per_epoch": num_train // train_batch_size,
        "total_steps": num_train // train_batch_size * total_epochs,''', '''        "steps_per_epoch": -(-num_train // train_batch_size),  # keeps the last partial batch
        "total_steps": -(-num_train // train_batch_size) * total_epochs,''')
WARMUP_FROM_ZERO = SOL_LR.replace("return (step + 1) / warmup_steps", "return step / warmup_steps")
NO_CLAMP = SOL_LR.replace("    warmup_steps = min(warmup_steps, total_steps)\n", "")
NO_FLOOR = SOL_LR.replace("return min_lr_factor + (1 - min_lr_factor) * factor", "return factor")
assert len({CEIL, SOL_STEPS}) == 2 and len({WARMUP_FROM_ZERO, NO_CLAMP, NO_FLOOR, SOL_LR}) == 4

STEPS_PUBLIC = [("the TorchTitan run", []), ("the FSDP run (batch 64, mini-batch 16)",
                                             [2000, 64, 5, 8, 16])]
STEPS_HIDDEN = [[1000, 128, 3, 8, 32, 2], [2000, 128, 5, 5, 32, 4, 512, 2048], [500, 100, 2, 4, 50, 1, 256, 256],
                [2000, 256, 1, 8, 64, 8, 1024, 8192]]
COURSE_STEPS = [0, 4, 5, 6, 40, 74]
SHORT = [[0, 3], [1, 3], [2, 3], [0, 4, 10], [3, 4, 10], [4, 4, 10]]
VARIANTS = [
    {"args": [10, 100, 10, 0.1, "linear"]}, {"args": [55, 100, 10, 0.0, "linear"]},
    {"args": [30, 100, 10], "kwargs": {"decay_ratio": 0.5}}, {"args": [75, 100, 10], "kwargs": {"decay_ratio": 0.5}},
    {"args": [99, 100, 10, 0.1, "cosine", 0.5]}, {"args": [0, 20, 0]}, {"args": [19, 20, 0, 0.0, "sqrt"]},
    {"args": [37, 75], "kwargs": {"min_lr_factor": 0.0}},
]


def spec() -> Exercise:
    lr_num = {"compare": "numeric", "rtol": 0.0, "atol": 1e-6}
    checks = [
        Check("step_arithmetic", "step_arithmetic", "function", 3, "Steps and batch sizes", "步数与批大小",
              "The train dataloader uses drop_last: steps per epoch = num_train // train_batch_size (floor), times the "
              "epochs; each prompt yields rollout_n samples, and a mini-batch is split over the ranks.",
              "训练 dataloader 使用 drop_last：每个 epoch 的步数 = num_train // train_batch_size（向下取整），再乘 epoch 数；"
              "每个提示产生 rollout_n 个样本，mini-batch 再平分到各 rank。",
              calls=[{"args": a, "public": True, "label": lab} for lab, a in STEPS_PUBLIC]
              + [{"args": a, "public": False} for a in STEPS_HIDDEN], options={"compare": "exact"}),
        Check("lr_course", "lr_factor", "function", 3, "LR factors of the 75-step run", "75 步运行的学习率系数",
              "With warmup 5 the factor rises as (step+1)/warmup; afterwards a cosine decay over "
              "total - warmup steps is scaled into [min_lr_factor, 1].",
              "warmup 为 5 时系数按 (step+1)/warmup 上升；之后在 total - warmup 步内按 cosine 衰减，并缩放到 [min_lr_factor, 1]。",
              calls=[{"args": [s], "public": True, "label": f"step {s}"} for s in COURSE_STEPS],
              options={"compare": "numeric", "rtol": 0.0, "atol": 1e-4}),
        Check("lr_short_run", "lr_factor", "function", 2, "Runs shorter than the warmup", "比 warmup 更短的运行",
              "When warmup_steps exceeds total_steps, torchtitan clamps warmup to total_steps (the 3-step run warms up "
              "over 3 steps).", "warmup_steps 大于 total_steps 时，torchtitan 会把 warmup 截为 total_steps（3 步运行在 3 步内完成 warmup）。",
              calls=[{"args": a, "public": False} for a in SHORT], options=lr_num),
        Check("lr_variants", "lr_factor", "function", 2, "Other decay settings", "其他衰减设置",
              "Check the decay phase: stable = total + 1 - warmup - decay steps, decay_ratio gives round(total*ratio) "
              "decay steps, linear/sqrt/cosine shapes, and the min_lr_factor floor.",
              "检查衰减阶段：stable = total + 1 - warmup - decay，decay_ratio 对应 round(total*ratio) 个衰减步，"
              "linear/sqrt/cosine 三种形状，以及 min_lr_factor 下限。",
              calls=[{**v, "public": False} for v in VARIANTS], options=lr_num),
    ]
    intro = [
        md("""
        # 第 8 章 · 练习：训练步数与学习率调度

        TorchTitan 的优化器配置把 FSDP 的 `lr_scheduler_type=cosine`、`min_lr_ratio=0.1`、`lr_warmup_steps_ratio=0.03`
        换成 `optim.decay_type=cosine`、`optim.min_lr_factor=0.1`、`optim.lr_warmup_steps=5`。
        2000 条训练数据、`train_batch_size=128`、5 个 epoch、`rollout.n=8`、`ppo_mini_batch_size=32`、2 张卡。
        """, """
        # Chapter 8 · Exercise: training steps and the LR schedule

        TorchTitan's optimizer config replaces FSDP's `lr_scheduler_type=cosine`, `min_lr_ratio=0.1`,
        `lr_warmup_steps_ratio=0.03` with `optim.decay_type=cosine`, `optim.min_lr_factor=0.1`,
        `optim.lr_warmup_steps=5`. The run has 2000 training rows, `train_batch_size=128`, 5 epochs, `rollout.n=8`,
        `ppo_mini_batch_size=32` and 2 cards.
        """),
        md("""
        ## 任务
        1. `step_arithmetic(...)` 返回字典：`steps_per_epoch`、`total_steps`、`samples_per_step`（每步样本 = 批大小 × n）、
           `mini_batch_samples`、`optimizer_steps_per_step`、`samples_per_rank_per_mini_batch`、`max_seq_len`（提示 + 回复）。
        2. `lr_factor(step, total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", decay_ratio=None)`：
           torchtitan `LRSchedulersContainer` 的 warmup → stable → decay 系数，`step` 从 0 开始。
           - warmup：`(step+1)/warmup`；warmup 大于总步数时截为总步数。
           - `decay_steps = total − warmup`（或 `round(total·decay_ratio)`，不超过 `total − warmup`）；`stable = total + 1 − warmup − decay`。
           - 衰减进度 `p = (step + 1 − warmup − stable)/decay`；linear `1−p`、sqrt `1−√p`、cosine `½(1+cos πp)`，
             再映射为 `min + (1−min)·f`。
        """, """
        ## Tasks
        1. `step_arithmetic(...)` returns a dict: `steps_per_epoch`, `total_steps`, `samples_per_step` (batch × n),
           `mini_batch_samples`, `optimizer_steps_per_step`, `samples_per_rank_per_mini_batch`, `max_seq_len`
           (prompt + response).
        2. `lr_factor(step, total_steps=75, warmup_steps=5, min_lr_factor=0.1, decay_type="cosine", decay_ratio=None)`:
           the warmup → stable → decay multiplier of torchtitan's `LRSchedulersContainer`, `step` 0-indexed.
           - warmup: `(step+1)/warmup`; a warmup longer than the run is clamped to the total.
           - `decay_steps = total − warmup` (or `round(total·decay_ratio)`, at most `total − warmup`);
             `stable = total + 1 − warmup − decay`.
           - decay progress `p = (step + 1 − warmup − stable)/decay`; linear `1−p`, sqrt `1−√p`, cosine `½(1+cos πp)`,
             mapped to `min + (1−min)·f`.
        """),
    ]
    return Exercise(
        id="ch08.lr_schedule", title_en="Training steps and the LR schedule", title_zh="训练步数与学习率调度",
        summary_en="15/75/155 steps, batch arithmetic and torchtitan's warmup-stable-decay factors",
        summary_zh="15/75/155 步、批大小推算与 torchtitan 的 warmup-stable-decay 系数",
        kernel_family="light",
        answers=[("step_arithmetic", "function"), ("lr_factor", "function")],
        checks=checks, intro=intro,
        answer_cells={"steps": (TPL_STEPS, SOL_STEPS), "lr": (TPL_LR, SOL_LR)},
        after=[md("## 自查（仅公开用例）", "## Self-check (public cases only)"), code(SELF_CHECK)],
        mistakes=[
            Mistake("keeps_last_batch", {"steps": CEIL}, {"step_arithmetic": "drop_last"}),
            Mistake("warmup_from_zero", {"lr": WARMUP_FROM_ZERO}, {"lr_course": "(step+1)/warmup"}),
            Mistake("warmup_not_clamped", {"lr": NO_CLAMP}, {"lr_short_run": "clamps warmup"}),
            Mistake("no_min_lr_floor", {"lr": NO_FLOOR}, {"lr_course": "min_lr_factor",
                                                          "lr_variants": "min_lr_factor floor"}),
        ],
    )


SELF_CHECK = '''
def _show(label, fn, want, tol=0.0):
    try:
        got = fn()
    except NotImplementedError:
        return print("…", label, "- not implemented yet")
    except Exception as exc:
        return print("✗", label, "- raised", type(exc).__name__, exc)
    ok = got == want if isinstance(want, dict) else abs(got - want) <= tol
    print("✓" if ok else "✗", label, "" if ok else f"- got {got!r}")


_show("TorchTitan run: 15 steps/epoch, 75 total", lambda: {k: step_arithmetic()[k] for k in
      ("steps_per_epoch", "total_steps", "samples_per_step", "optimizer_steps_per_step",
       "samples_per_rank_per_mini_batch", "max_seq_len")},
      {"steps_per_epoch": 15, "total_steps": 75, "samples_per_step": 1024, "optimizer_steps_per_step": 4,
       "samples_per_rank_per_mini_batch": 128, "max_seq_len": 5120})
_show("FSDP run: 155 steps", lambda: {"total_steps": step_arithmetic(2000, 64, 5, 8, 16)["total_steps"]},
      {"total_steps": 155})
for _step, _want in zip([0, 4, 5, 6, 40, 74], [0.2, 1.0, 1.0, 0.9995, 0.55, 0.1005]):
    _show(f"lr_factor({_step})", lambda: lr_factor(_step), _want, 1e-4)
'''
