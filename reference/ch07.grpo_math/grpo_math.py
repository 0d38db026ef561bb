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
# # 第 7 章 · 练习：GRPO 优势与 KL 惩罚
#
# 后端从 FSDP 切换到 TorchTitan 后，GRPO 的数学**不变**：`algorithm.adv_estimator=grpo`（eps 1e-6，`torch.std`
# 无偏），Actor 损失里 `use_kl_loss=True`、`kl_loss_type=low_var_kl`、`kl_loss_coef=0.001`。每个提示采样
# `rollout.n=8` 条回复，同一提示的 8 条回复构成一组。
#
# ---
#
# # Chapter 7 · Exercise: GRPO advantages and the KL penalty
#
# Switching the backend from FSDP to TorchTitan leaves the GRPO maths **unchanged**: `algorithm.adv_estimator=grpo`
# (eps 1e-6, unbiased `torch.std`), and the actor loss uses `use_kl_loss=True`, `kl_loss_type=low_var_kl`,
# `kl_loss_coef=0.001`. Each prompt gets `rollout.n=8` responses; the 8 responses to one prompt form a group.

# %% [markdown]
# ## 任务
# 1. `group_mean_std(values)` 与 `course_stats`：课程示例组 `[2.2, 0.2, 0.7, 1.7, 0.2, 0.5, 1.0, 0.0]` 的均值和标准差。
# 2. `grpo_advantages(scores, index, epsilon=1e-6)`：同一 `index` 的样本为一组，返回 `(s − 组均值)/(组标准差 + eps)`；
#    只有一个样本的组使用均值 0、标准差 1（与 verl 相同）。`index` 中的组标识可以是整数或字符串。
# 3. `low_var_kl(logp, ref_logp)`：k3 估计（verl 的 `low_var_kl`），逐 token 返回列表：`kl = ref_logp − logp`，先截断到
#    [−20, 20]；惩罚为 `exp(kl) − kl − 1`，再截断到 [−10, 10]（verl 用这两个界防止数值爆炸）。
# 都返回普通 Python 数值/列表（numpy 也可以，但请转成 list）。
#
# ---
#
# ## Tasks
# 1. `group_mean_std(values)` and `course_stats`: mean and std of the course group `[2.2, 0.2, 0.7, 1.7, 0.2, 0.5, 1.0, 0.0]`.
# 2. `grpo_advantages(scores, index, epsilon=1e-6)`: samples sharing an `index` form a group; return
#    `(s − group mean)/(group std + eps)`; a group of one uses mean 0 and std 1 (as verl does). The group ids in
#    `index` may be ints or strings.
# 3. `low_var_kl(logp, ref_logp)`: the k3 estimator (verl's `low_var_kl`), one value per token, as a list:
#    `kl = ref_logp − logp` clamped to [−20, 20]; the penalty is `exp(kl) − kl − 1` clamped to [−10, 10] (verl's
#    bounds against numerical blow-up).
# Return plain Python numbers/lists (numpy is fine, convert with `.tolist()`).

# %%
import math
from collections import defaultdict


def group_mean_std(values):
    ### BEGIN SOLUTION
    """Mean and unbiased (n-1) standard deviation, as torch.std does by default."""
    n = len(values)
    mean = sum(values) / n
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    ### STUB
    # """Return (mean, std) of one group, with the std GRPO uses."""
    # raise NotImplementedError("implement group_mean_std")
    ### END SOLUTION


course_scores = [2.2, 0.2, 0.7, 1.7, 0.2, 0.5, 1.0, 0.0]
### BEGIN SOLUTION
_mean, _std = group_mean_std(course_scores)
course_stats = {"mean": _mean, "std": _std}
### STUB
# course_stats = None  # {"mean": ..., "std": ...} of course_scores
### END SOLUTION

# %%
def grpo_advantages(scores, index, epsilon=1e-6):
    ### BEGIN SOLUTION
    """(score - group mean) / (group std + epsilon) per sample; a group of one uses mean 0 and std 1."""
    groups = defaultdict(list)
    for score, group in zip(scores, index):
        groups[group].append(score)
    stats = {g: (0.0, 1.0) if len(v) == 1 else group_mean_std(v) for g, v in groups.items()}
    return [(s - stats[g][0]) / (stats[g][1] + epsilon) for s, g in zip(scores, index)]
    ### STUB
    # """Return one advantage per sample (a list of floats); samples with the same index form a group."""
    # raise NotImplementedError("implement grpo_advantages")
    ### END SOLUTION

# %%
def low_var_kl(logp, ref_logp):
    ### BEGIN SOLUTION
    """k3 estimator per token: kl = ref - logp clamped to [-20, 20]; exp(kl) - kl - 1 clamped to [-10, 10]."""
    out = []
    for lp, rp in zip(logp, ref_logp):
        kl = min(max(rp - lp, -20.0), 20.0)
        out.append(min(max(math.exp(kl) - kl - 1.0, -10.0), 10.0))
    return out
    ### STUB
    # """Return the per-token low_var_kl (k3) penalty as a list of floats."""
    # raise NotImplementedError("implement low_var_kl")
    ### END SOLUTION

# %% [markdown]
# ## 自查（仅公开用例）
#
# ---
#
# ## Self-check (public cases only)

# %% tags=["self-check"]
from exercises.lab.selfcheck import show as _show

_show("course mean", lambda: course_stats["mean"], 0.8125, 1e-9)
_show("course std (5 digits)", lambda: course_stats["std"], 0.78091, 1e-5)
_show("course advantages (4 digits)", lambda: grpo_advantages(course_scores, [0] * 8),
      [1.7768, -0.7843, -0.1441, 1.1365, -0.7843, -0.4002, 0.2401, -1.0405], 1e-3)
_show("constant group", lambda: grpo_advantages([1.0, 1.0, 1.0, 1.0], ["p"] * 4), [0.0] * 4, 1e-9)
_show("low_var_kl course example", lambda: low_var_kl([-1.0, -0.5], [-1.2, -0.4]), [0.018731, 0.005171], 1e-5)

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'course_stats': {'rtol': 0.0,
                  'atol': 1e-05,
                  'feedback': {'en': 'GRPO normalises with torch.std, which is the unbiased (n-1) standard '
                                     'deviation; check mean and std.',
                               'zh': 'GRPO 使用 torch.std 归一化，即无偏（n-1）标准差；检查 mean 与 std。'},
                  'expected': {'mean': 0.8125000000000001, 'std': 0.7809106405802322}},
 'course_advantages': {'compare': 'numeric',
                       'rtol': 0.0,
                       'atol': 0.0001,
                       'feedback': {'en': 'Advantage = (score - group mean) / (unbiased group std + 1e-6); a '
                                          'constant group gives zeros.',
                                    'zh': '优势 = (得分 - 组均值) / (组内无偏标准差 + 1e-6)；得分全相同的组优势为 0。'},
                       'calls': [{'args': [[2.2, 0.2, 0.7, 1.7, 0.2, 0.5, 1.0, 0.0],
                                           [0, 0, 0, 0, 0, 0, 0, 0]],
                                  'public': True,
                                  'label': 'course group of 8',
                                  'expect': [1.7767695189804844,
                                             -0.7843396975679616,
                                             -0.14406239343085028,
                                             1.1364922148433727,
                                             -0.7843396975679616,
                                             -0.4001733150856948,
                                             0.24010398905141664,
                                             -1.0404506192228062],
                                  'rules': ['formula', 'unbiased_std']},
                                 {'args': [[1.0, 1.0, 1.0, 1.0], ['p', 'p', 'p', 'p']],
                                  'public': True,
                                  'label': 'constant group',
                                  'expect': [0.0, 0.0, 0.0, 0.0],
                                  'rules': ['formula']}]},
 'grouped_advantages': {'compare': 'numeric',
                        'rtol': 0.0,
                        'atol': 0.0001,
                        'feedback': {'en': 'Samples are normalised within their own group (same index), not '
                                           'across the batch; a group of one keeps its raw score (mean 0, '
                                           "std 1), as in verl's compute_grpo_outcome_advantage.",
                                     'zh': '每个样本只在自己的组（相同 index）内归一化，而不是整个批次；只有一个样本的组保留原始得分（均值 0、标准差 1），与 '
                                           'verl 的 compute_grpo_outcome_advantage 一致。'},
                        'calls': [{'args': [[1.2, 0.1, 2.2, 0.3, 0.8, 0.3, 1.7, 0.0],
                                            ['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']],
                                   'public': False,
                                   'expect': [-0.4526064502701653,
                                              -0.49999666668888865,
                                              1.19323518707589,
                                              0.8333277778148146,
                                              -1.110943105208587,
                                              0.8333277778148146,
                                              0.37031436840286214,
                                              -1.1666588889407403],
                                   'rules': ['per_group']},
                                  {'args': [[2.2, 0.0], [7, 7]],
                                   'public': False,
                                   'expect': [0.7071063266413853, -0.7071063266413853],
                                   'rules': ['per_group', 'formula']},
                                  {'args': [[0.4, 1.46667, 0.56667, 0.9, 0.2, 0.2], [1, 1, 1, 2, 2, 2]],
                                   'public': False,
                                   'expect': [-0.7164582750767594,
                                              1.1424562536244747,
                                              -0.42599797854771604,
                                              1.154697681243464,
                                              -0.577348840621732,
                                              -0.577348840621732],
                                   'rules': ['per_group']},
                                  {'args': [[1.3, 0.6, 0.6, 2.0, 0.1], ['x', 'y', 'y', 'y', 'z']],
                                   'public': False,
                                   'expect': [1.2999987000013002,
                                              -0.5773495549047951,
                                              -0.5773495549047951,
                                              1.1546991098095902,
                                              0.09999990000010002],
                                   'rules': ['per_group', 'singleton']},
                                  {'args': [[0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0],
                                            [3, 3, 3, 3, 3, 3, 3, 3]],
                                   'public': False,
                                   'expect': [-1.4288666832939976,
                                              -1.0206190594957125,
                                              -0.6123714356974276,
                                              -0.20412381189914253,
                                              0.20412381189914253,
                                              0.6123714356974276,
                                              1.0206190594957125,
                                              1.4288666832939976],
                                   'rules': ['formula']},
                                  {'args': [[0.0, 2e-06], [5, 5]],
                                   'public': False,
                                   'expect': [-0.4142135623730951, 0.4142135623730951],
                                   'rules': ['formula']}]},
 'k3_kl': {'compare': 'numeric',
           'rtol': 0.0,
           'atol': 1e-06,
           'feedback': {'en': 'k3 uses kl = ref_logp - logp (reference minus current), clamped to [-20, 20], '
                              'then exp(kl) - kl - 1 clamped to [-10, 10].',
                        'zh': 'k3 使用 kl = ref_logp - logp（参考减当前），先截断到 [-20, 20]，再计算 exp(kl) - kl - 1 并截断到 '
                              '[-10, 10]。'},
           'calls': [{'args': [[-1.0, -0.5], [-1.2, -0.4]],
                      'public': True,
                      'label': 'course example',
                      'expect': [0.018730753077981888, 0.005170918075647624],
                      'rules': ['direction']},
                     {'args': [[-0.3, -2.0, -0.05, -4.0], [-0.3, -1.0, -0.25, -3.1]],
                      'public': False,
                      'expect': [0.0, 0.7182818284590451, 0.018730753077981888, 0.5596031111569495],
                      'rules': ['direction']},
                     {'args': [[-30.0, -0.1], [-1.0, -25.0]],
                      'public': False,
                      'expect': [10.0, 10.0],
                      'rules': ['clamp_penalty']},
                     {'args': [[-2.5, -0.7, -1.1], [-2.0, -0.9, -1.6]],
                      'public': False,
                      'expect': [0.1487212707001282, 0.018730753077981888, 0.10653065971263342],
                      'rules': ['direction']},
                     {'args': [[-5.0], [-8.0]],
                      'public': False,
                      'expect': [2.049787068367864],
                      'rules': ['direction']},
                     {'args': [[-800.0, 0.0], [0.0, -800.0]],
                      'public': False,
                      'expect': [10.0, 10.0],
                      'rules': ['clamp_kl', 'clamp_penalty']}]}}

MISTAKES = [{'name': 'batch_wide_baseline',
  'score': 8.5,
  'fails': {'grouped_advantages': 'within its own group'},
  'patch': [{'find': '    groups = defaultdict(list)\n'
                     '    for score, group in zip(scores, index):\n'
                     '        groups[group].append(score)\n'
                     '    stats = {g: (0.0, 1.0) if len(v) == 1 else group_mean_std(v) for g, v in '
                     'groups.items()}\n'
                     '    return [(s - stats[g][0]) / (stats[g][1] + epsilon) for s, g in zip(scores, '
                     'index)]',
             'replace': '    mean, std = group_mean_std(scores)  # one batch-wide baseline\n'
                        '    return [(s - mean) / (std + epsilon) for s in scores]'}]},
 {'name': 'biased_std',
  'score': 5.25,
  'fails': {'course_advantages': 'unbiased (n-1) standard deviation', 'course_stats': 'unbiased (n-1)'},
  'patch': [{'find': '    """Mean and unbiased (n-1) standard deviation, as torch.std does by default."""\n'
                     '    n = len(values)\n'
                     '    mean = sum(values) / n\n'
                     '    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))',
             'replace': '    """Mean and population standard deviation, as torch.std does by default."""\n'
                        '    n = len(values)\n'
                        '    mean = sum(values) / n\n'
                        '    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / n)'}]},
 {'name': 'kl_direction_swapped',
  'score': 7.6667,
  'fails': {'k3_kl': 'ref_logp - logp'},
  'patch': [{'find': '        kl = min(max(rp - lp, -20.0), 20.0)',
             'replace': '        kl = min(max(lp - rp, -20.0), 20.0)'}]},
 {'name': 'k3_unclamped',
  'score': 8.8333,
  'fails': {'k3_kl': 'clamped to [-10, 10]'},
  'patch': [{'find': '        kl = min(max(rp - lp, -20.0), 20.0)\n'
                     '        out.append(min(max(math.exp(kl) - kl - 1.0, -10.0), 10.0))',
             'replace': '        kl = rp - lp\n        out.append(math.exp(kl) - kl - 1.0)  # no bounds'}]}]

RULES = {'course_stats': [{'id': 'unbiased_std',
                   'stated': 'unbiased `torch.std`',
                   'hint': {'en': 'GRPO normalises with torch.std, the unbiased (n-1) standard deviation.',
                            'zh': 'GRPO 用 torch.std 归一化，即无偏（n-1）标准差。'}}],
 'course_advantages': [{'id': 'formula',
                        'stated': '`(s − group mean)/(group std + eps)`',
                        'hint': {'en': 'Advantage = (score - group mean) / (group std + eps); a constant '
                                       'group gives zeros.',
                                 'zh': '优势 = (得分 - 组均值) / (组标准差 + eps)；得分全相同的组得到 0。'}},
                       {'id': 'unbiased_std',
                        'stated': 'unbiased `torch.std`',
                        'hint': {'en': "The group std is torch.std's unbiased (n-1) standard deviation.",
                                 'zh': '组标准差是 torch.std 的无偏（n-1）标准差。'}}],
 'grouped_advantages': [{'id': 'per_group',
                         'stated': 'samples sharing an `index` form a group',
                         'types': 'may be ints or strings',
                         'hint': {'en': 'Normalise each sample within its own group (same index), not across '
                                        'the batch.',
                                  'zh': '每个样本在自己的组（相同 index）内归一化，而不是在整个批次内。'}},
                        {'id': 'singleton',
                         'stated': 'a group of one uses mean 0 and std 1',
                         'types': 'may be ints or strings',
                         'hint': {'en': 'A group with a single sample uses mean 0 and std 1, as verl does.',
                                  'zh': '只有一个样本的组使用均值 0、标准差 1，与 verl 相同。'}},
                        {'id': 'formula',
                         'stated': '`(s − group mean)/(group std + eps)`',
                         'types': 'may be ints or strings',
                         'hint': {'en': 'Advantage = (score - group mean) / (unbiased group std + eps) '
                                        'within each group.',
                                  'zh': '组内优势 = (得分 - 组均值) / (无偏组标准差 + eps)。'}}],
 'k3_kl': [{'id': 'direction',
            'stated': '`kl = ref_logp − logp`',
            'hint': {'en': 'k3 uses kl = ref_logp - logp (reference minus current), then exp(kl) - kl - 1.',
                     'zh': 'k3 使用 kl = ref_logp - logp（参考减当前），再算 exp(kl) - kl - 1。'}},
           {'id': 'clamp_kl',
            'stated': 'clamped to [−20, 20]',
            'hint': {'en': 'Clamp kl to [-20, 20] before exp(kl), so a huge log-ratio cannot overflow.',
                     'zh': '在 exp(kl) 之前把 kl 截断到 [-20, 20]，极大的对数比也不会溢出。'}},
           {'id': 'clamp_penalty',
            'stated': '`exp(kl) − kl − 1` clamped to [−10, 10]',
            'hint': {'en': 'The penalty exp(kl) - kl - 1 is clamped to [-10, 10].',
                     'zh': '惩罚 exp(kl) - kl - 1 要截断到 [-10, 10]。'}}]}

EQUIVALENT = [{'mutant': 'const_inc:0bfbbe71:1',
  'reason': 'a kl below -11 already gives exp(kl) - kl - 1 > 10, clamped to 10, so a lower kl bound of -21 '
            'instead of -20 changes no penalty'},
 {'mutant': 'const_inc:0bfbbe71:2',
  'reason': 'a kl above 3 already gives a penalty past 10, clamped to 10, and exp(21) does not overflow, so '
            'an upper kl bound of 21 instead of 20 changes no penalty'},
 {'mutant': 'const_inc:78bd8dab:2',
  'reason': 'exp(kl) - kl - 1 >= 0 for every kl (convexity), so the lower penalty bound (-10 or -11) is '
            'never reached'},
 {'mutant': 'const_zero:78bd8dab:2',
  'reason': 'exp(kl) - kl - 1 >= 0 for every kl (convexity), so max(x, -0.0) is x'}]
