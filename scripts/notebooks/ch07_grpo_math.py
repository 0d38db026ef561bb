"""ch07.grpo_math: GRPO group advantages (unbiased std, eps 1e-6) and the k3 / low_var_kl penalty (§3, §10)."""
from __future__ import annotations

from nbkit_ch07_08 import Check, Exercise, Mistake, code, md

SOL_STATS = '''
import math
from collections import defaultdict


def group_mean_std(values):
    """Mean and unbiased (n-1) standard deviation, as torch.std does by default."""
    n = len(values)
    mean = sum(values) / n
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


course_scores = [2.2, 0.2, 0.7, 1.7, 0.2, 0.5, 1.0, 0.0]
_mean, _std = group_mean_std(course_scores)
course_stats = {"mean": _mean, "std": _std}
'''
SOL_ADV = '''
def grpo_advantages(scores, index, epsilon=1e-6):
    """(score - group mean) / (group std + epsilon) per sample; a group of one uses mean 0 and std 1."""
    groups = defaultdict(list)
    for score, group in zip(scores, index):
        groups[group].append(score)
    stats = {g: (0.0, 1.0) if len(v) == 1 else group_mean_std(v) for g, v in groups.items()}
    return [(s - stats[g][0]) / (stats[g][1] + epsilon) for s, g in zip(scores, index)]
'''
SOL_KL = '''
def low_var_kl(logp, ref_logp):
    """k3 estimator per token: kl = ref - logp clamped to [-20, 20]; exp(kl) - kl - 1 clamped to [-10, 10]."""
    out = []
    for lp, rp in zip(logp, ref_logp):
        kl = min(max(rp - lp, -20.0), 20.0)
        out.append(min(max(math.exp(kl) - kl - 1.0, -10.0), 10.0))
    return out
'''
TPL_STATS = '''
import math
from collections import defaultdict


def group_mean_std(values):
    """Return (mean, std) of one group, with the std GRPO uses."""
    raise NotImplementedError("implement group_mean_std")


course_scores = [2.2, 0.2, 0.7, 1.7, 0.2, 0.5, 1.0, 0.0]
course_stats = None  # {"mean": ..., "std": ...} of course_scores
'''
TPL_ADV = '''
def grpo_advantages(scores, index, epsilon=1e-6):
    """Return one advantage per sample (a list of floats); samples with the same index form a group."""
    raise NotImplementedError("implement grpo_advantages")
'''
TPL_KL = '''
def low_var_kl(logp, ref_logp):
    """Return the per-token low_var_kl (k3) penalty as a list of floats."""
    raise NotImplementedError("implement low_var_kl")
'''

BIASED = SOL_STATS.replace("/ (n - 1))", "/ n)").replace("unbiased (n-1)", "population")
SWAPPED = SOL_KL.replace("kl = min(max(rp - lp, -20.0), 20.0)", "kl = min(max(lp - rp, -20.0), 20.0)")
GLOBAL = SOL_ADV.replace('''    groups = defaultdict(list)
    for score, group in zip(scores, index):
        groups[group].append(score)
    stats = {g: (0.0, 1.0) if len(v) == 1 else group_mean_std(v) for g, v in groups.items()}
    return [(s - stats[g][0]) / (stats[g][1] + epsilon) for s, g in zip(scores, index)]''', '''    mean, std = group_mean_std(scores)  # one batch-wide baseline
    return [(s - mean) / (std + epsilon) for s in scores]''')
assert BIASED != SOL_STATS and SWAPPED != SOL_KL and GLOBAL != SOL_ADV

COURSE = [2.2, 0.2, 0.7, 1.7, 0.2, 0.5, 1.0, 0.0]
ADV_PUBLIC = [("course group of 8", [COURSE, [0] * 8]), ("constant group", [[1.0, 1.0, 1.0, 1.0], ["p", "p", "p", "p"]])]
ADV_HIDDEN = [
    [[1.2, 0.1, 2.2, 0.3, 0.8, 0.3, 1.7, 0.0], ["a", "b", "a", "b", "a", "b", "a", "b"]],
    [[2.2, 0.0], [7, 7]],
    [[0.4, 1.46667, 0.56667, 0.9, 0.2, 0.2], [1, 1, 1, 2, 2, 2]],
    [[1.3, 0.6, 0.6, 2.0, 0.1], ["x", "y", "y", "y", "z"]],
    [[0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0], [3, 3, 3, 3, 3, 3, 3, 3]],
]
KL_PUBLIC = [("course example", [[-1.0, -0.5], [-1.2, -0.4]])]
KL_HIDDEN = [
    [[-0.3, -2.0, -0.05, -4.0], [-0.3, -1.0, -0.25, -3.1]],
    [[-30.0, -0.1], [-1.0, -25.0]],
    [[-2.5, -0.7, -1.1], [-2.0, -0.9, -1.6]],
    [[-5.0], [-8.0]],
]


def _calls(public, hidden):
    return ([{"args": a, "public": True, "label": lab} for lab, a in public]
            + [{"args": a, "public": False} for a in hidden])


def spec() -> Exercise:
    num = {"compare": "numeric", "rtol": 0.0}
    checks = [
        Check("course_stats", "course_stats", "mapping", 1.5, "Mean and std of the course group", "课程示例组的均值与标准差",
              "GRPO normalises with torch.std, which is the unbiased (n-1) standard deviation; check mean and std.",
              "GRPO 使用 torch.std 归一化，即无偏（n-1）标准差；检查 mean 与 std。",
              options={"rtol": 0.0, "atol": 1e-5}),
        Check("course_advantages", "grpo_advantages", "function", 2, "Advantages of the public groups", "公开组的优势值",
              "Advantage = (score - group mean) / (unbiased group std + 1e-6); a constant group gives zeros.",
              "优势 = (得分 - 组均值) / (组内无偏标准差 + 1e-6)；得分全相同的组优势为 0。",
              calls=_calls(ADV_PUBLIC, []), options={**num, "atol": 1e-4}),
        Check("grouped_advantages", "grpo_advantages", "function", 3, "Hidden batches with several groups",
              "包含多个组的隐藏批次",
              "Samples are normalised within their own group (same index), not across the batch; a group of one "
              "keeps its raw score (mean 0, std 1), as in verl's compute_grpo_outcome_advantage.",
              "每个样本只在自己的组（相同 index）内归一化，而不是整个批次；只有一个样本的组保留原始得分（均值 0、标准差 1），与 verl 的 "
              "compute_grpo_outcome_advantage 一致。",
              calls=_calls([], ADV_HIDDEN), options={**num, "atol": 1e-4}),
        Check("k3_kl", "low_var_kl", "function", 3.5, "low_var_kl (k3) penalty", "low_var_kl（k3）惩罚",
              "k3 uses kl = ref_logp - logp (reference minus current), clamped to [-20, 20], then exp(kl) - kl - 1 "
              "clamped to [-10, 10].", "k3 使用 kl = ref_logp - logp（参考减当前），先截断到 [-20, 20]，再计算 exp(kl) - kl - 1 并截断到 [-10, 10]。",
              calls=_calls(KL_PUBLIC, KL_HIDDEN), options={**num, "atol": 1e-6}),
    ]
    intro = [
        md("""
        # 第 7 章 · 练习：GRPO 优势与 KL 惩罚

        后端从 FSDP 切换到 TorchTitan 后，GRPO 的数学**不变**：`algorithm.adv_estimator=grpo`（eps 1e-6，`torch.std`
        无偏），Actor 损失里 `use_kl_loss=True`、`kl_loss_type=low_var_kl`、`kl_loss_coef=0.001`。每个提示采样
        `rollout.n=8` 条回复，同一提示的 8 条回复构成一组。
        """, """
        # Chapter 7 · Exercise: GRPO advantages and the KL penalty

        Switching the backend from FSDP to TorchTitan leaves the GRPO maths **unchanged**: `algorithm.adv_estimator=grpo`
        (eps 1e-6, unbiased `torch.std`), and the actor loss uses `use_kl_loss=True`, `kl_loss_type=low_var_kl`,
        `kl_loss_coef=0.001`. Each prompt gets `rollout.n=8` responses; the 8 responses to one prompt form a group.
        """),
        md("""
        ## 任务
        1. `group_mean_std(values)` 与 `course_stats`：课程示例组 `[2.2, 0.2, 0.7, 1.7, 0.2, 0.5, 1.0, 0.0]` 的均值和标准差。
        2. `grpo_advantages(scores, index, epsilon=1e-6)`：同一 `index` 的样本为一组，返回 `(s − 组均值)/(组标准差 + eps)`；
           只有一个样本的组使用均值 0、标准差 1（与 verl 相同）。
        3. `low_var_kl(logp, ref_logp)`：k3 估计，逐 token 返回列表。
        都返回普通 Python 数值/列表（numpy 也可以，但请转成 list）。
        """, """
        ## Tasks
        1. `group_mean_std(values)` and `course_stats`: mean and std of the course group `[2.2, 0.2, 0.7, 1.7, 0.2, 0.5, 1.0, 0.0]`.
        2. `grpo_advantages(scores, index, epsilon=1e-6)`: samples sharing an `index` form a group; return
           `(s − group mean)/(group std + eps)`; a group of one uses mean 0 and std 1 (as verl does).
        3. `low_var_kl(logp, ref_logp)`: the k3 estimator, one value per token, as a list.
        Return plain Python numbers/lists (numpy is fine, convert with `.tolist()`).
        """),
    ]
    return Exercise(
        id="ch07.grpo_math", title_en="GRPO advantages and the k3 KL penalty", title_zh="GRPO 优势与 k3 KL 惩罚",
        summary_en="group-normalised advantages and low_var_kl, checked against verl's core_algos",
        summary_zh="组内归一化优势与 low_var_kl，并与 verl core_algos 对照",
        kernel_family="light",
        answers=[("course_stats", "value"), ("grpo_advantages", "function"), ("low_var_kl", "function")],
        checks=checks, intro=intro,
        answer_cells={"stats": (TPL_STATS, SOL_STATS), "adv": (TPL_ADV, SOL_ADV), "kl": (TPL_KL, SOL_KL)},
        after=[md("## 自查（仅公开用例）", "## Self-check (public cases only)"), code(SELF_CHECK)],
        mistakes=[
            Mistake("biased_std", {"stats": BIASED}, {"course_stats": "unbiased (n-1)",
                                                      "course_advantages": "unbiased group std"}),
            Mistake("kl_direction_swapped", {"kl": SWAPPED}, {"k3_kl": "ref_logp - logp"}),
            Mistake("batch_wide_baseline", {"adv": GLOBAL}, {"grouped_advantages": "within their own group"}),
        ],
    )


SELF_CHECK = '''
def _close(got, want, tol):
    if isinstance(want, (list, tuple)):
        return len(got) == len(want) and all(abs(g - w) <= tol for g, w in zip(got, want))
    return abs(got - want) <= tol


def _show(label, fn, want, tol):
    try:
        got = fn()
    except NotImplementedError:
        return print("…", label, "- not implemented yet")
    except Exception as exc:
        return print("✗", label, "- raised", type(exc).__name__, exc)
    ok = got is not None and _close(got, want, tol)
    print("✓" if ok else "✗", label, "" if ok else f"- got {got!r}")


_show("course mean", lambda: course_stats["mean"], 0.8125, 1e-9)
_show("course std (5 digits)", lambda: course_stats["std"], 0.78091, 1e-5)
_show("course advantages (4 digits)", lambda: grpo_advantages(course_scores, [0] * 8),
      [1.7768, -0.7843, -0.1441, 1.1365, -0.7843, -0.4002, 0.2401, -1.0405], 1e-3)
_show("constant group", lambda: grpo_advantages([1.0, 1.0, 1.0, 1.0], ["p"] * 4), [0.0] * 4, 1e-9)
_show("low_var_kl course example", lambda: low_var_kl([-1.0, -0.5], [-1.2, -0.4]), [0.018731, 0.005171], 1e-5)
'''
