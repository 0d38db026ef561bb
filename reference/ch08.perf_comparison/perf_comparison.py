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
# # 第 8 章 · 练习：三条路径的性能对比
#
# 第 8 章比较三条路径：FSDP、FSDP2+TND、TND+CP2，指标是 Actor 每 token 时间（`timing_per_token_ms/update_actor`）
# 和每步时间（`timing_s/step`）。公平的比较一次只改变一个变量，并且加入 warm-up 和多次重复。
# **注意：本练习的日志是合成数据**（公开资料中没有 FSDP2+TND、TND+CP2 的实测数字），只有格式与 verl 的控制台日志一致。
#
# ---
#
# # Chapter 8 · Exercise: comparing the three paths
#
# Chapter 8 compares three paths, FSDP, FSDP2+TND and TND+CP2, on the actor per-token time
# (`timing_per_token_ms/update_actor`) and the step time (`timing_s/step`). A fair comparison changes one variable
# at a time and adds warm-up and repetitions.
# **Note: the logs in this exercise are synthetic** (no public FSDP2+TND or TND+CP2 measurements exist); only their
# format follows verl's console logger.

# %% [markdown]
# ## 任务
# 1. `parse_steps(text)`：解析 `step:N - key:value - ...` 行。真实的 Ray 日志里这些行可能带进程前缀，如
#    `(TaskRunner pid=1507) step:1 - ...`；数值可能打印成 `np.float64(0.5)`；其他行忽略。每个键（包括 `step`）都返回数字。
# 2. `summarize(logs, warmup=1)`：一条路径的多次重复；每次重复去掉 `step <= warmup` 的步，先各自求平均再整体平均。
# 3. `speedups(runs, baseline="FSDP", warmup=1)`：`runs` 为 `{路径: [日志文本, ...]}`，返回每条路径相对基线的加速比。
#    加速比 = 基线时间 / 该路径时间（大于 1 表示更快，基线自身为 1）；`runs` 里路径的顺序不固定。
# 评分时会把**其他**日志传给你的函数，所以不要硬编码数字。
#
# ---
#
# ## Tasks
# 1. `parse_steps(text)`: parse the `step:N - key:value - ...` lines. In real Ray logs these lines may carry a process
#    prefix such as `(TaskRunner pid=1507) step:1 - ...`; values may be printed as `np.float64(0.5)`; ignore other lines.
#    Return every key (`step` included) as a number.
# 2. `summarize(logs, warmup=1)`: several repetitions of one path; drop steps with `step <= warmup` in each, average
#    each repetition, then average the repetitions.
# 3. `speedups(runs, baseline="FSDP", warmup=1)`: `runs` is `{path: [log text, ...]}`; return each path's speed-up
#    over the baseline: speed-up = baseline time / path time (above 1 is faster; the baseline itself is 1). The
#    paths in `runs` may come in any order.
# Grading passes **other** logs to your functions, so do not hard-code numbers.

# %%
from pathlib import Path

import exercises

LOG_DIR = Path(exercises.__file__).parent / "ch08" / "perf_comparison" / "logs"
RUNS = {path: [(LOG_DIR / f"{stem}_run{k}.log").read_text() for k in (1, 2, 3)]
        for path, stem in {"FSDP": "fsdp", "FSDP2+TND": "fsdp2_tnd", "TND+CP2": "tnd_cp2"}.items()}
print(RUNS["FSDP"][0][:1200])

# %%
import re
### BEGIN SOLUTION

STEP_LINE = re.compile(r"step:(\d+) - (.*)$")
NUMBER = re.compile(r"^(?:np\.\w+\((.*)\)|(.*))$")  # pprint shows numpy scalars as np.float64(...)
### STUB
### END SOLUTION


def parse_steps(text):
    ### BEGIN SOLUTION
    """[{"step": N, key: value, ...}, ...] for every `step:N - k:v - ...` line, in order; other lines ignored."""
    records = []
    for line in text.splitlines():
        m = STEP_LINE.search(line)
        if not m:
            continue
        record = {"step": int(m.group(1))}
        for item in m.group(2).split(" - "):
            key, _, raw = item.rpartition(":")
            inner = NUMBER.match(raw.strip())
            record[key] = float(inner.group(1) or inner.group(2))
        records.append(record)
    return records
    ### STUB
    # """Return [{"step": N, key: float, ...}, ...] for every step line of a verl console log."""
    # raise NotImplementedError("implement parse_steps")
    ### END SOLUTION

# %%
def summarize(logs, warmup=1):
    ### BEGIN SOLUTION
    """Mean actor per-token time (ms) and step time (s) after the warm-up steps: per repetition, then averaged."""
    actor, step = [], []
    for text in logs:
        kept = [r for r in parse_steps(text) if r["step"] > warmup]
        actor.append(sum(r["timing_per_token_ms/update_actor"] for r in kept) / len(kept))
        step.append(sum(r["timing_s/step"] for r in kept) / len(kept))
    return {"actor_ms_per_token": sum(actor) / len(actor), "step_s": sum(step) / len(step)}
    ### STUB
    # """Return {"actor_ms_per_token": ..., "step_s": ...} over several repetitions (log texts) of one path."""
    # raise NotImplementedError("implement summarize")
    ### END SOLUTION


def speedups(runs, baseline="FSDP", warmup=1):
    ### BEGIN SOLUTION
    """{path: {"actor": t_baseline / t_path, "step": ...}}: > 1 means faster than the baseline."""
    base = summarize(runs[baseline], warmup)
    out = {}
    for path, logs in runs.items():
        s = summarize(logs, warmup)
        out[path] = {"actor": base["actor_ms_per_token"] / s["actor_ms_per_token"], "step": base["step_s"] / s["step_s"]}
    return out
    ### STUB
    # """Return {path: {"actor": ..., "step": ...}} relative to the baseline path."""
    # raise NotImplementedError("implement speedups")
    ### END SOLUTION

# %% [markdown]
# ## 自查（仅公开日志）
#
# ---
#
# ## Self-check (public logs only)

# %%
try:
    _records = parse_steps(RUNS["FSDP"][0])
    print("parsed", len(_records), "step records; step 2 keys:", sorted(_records[1])[:6], "...")
    _s = summarize(RUNS["FSDP"])
    print("FSDP:", {k: round(v, 6) for k, v in _s.items()}, "(expect roughly 0.041 ms/token and 250 s/step)")
    for _path, _sp in speedups(RUNS).items():
        print(f"{_path:10s} actor x{_sp['actor']:.3f}  step x{_sp['step']:.3f}")
    print("FSDP's own speed-up is 1:", speedups(RUNS)["FSDP"] == {"actor": 1.0, "step": 1.0})
except NotImplementedError as exc:
    print("…", exc)

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (the bulky per-check data is in cases.json next to this file), and typical mistakes as
# patches of the solution with the score and the check each must fail.
MISTAKES = [{'name': 'actor_seconds_not_per_token',
  'score': 3.0,
  'fails': {'summary': 'not timing_s/update_actor'},
  'patch': [{'find': '        actor.append(sum(r["timing_per_token_ms/update_actor"] for r in kept) / '
                     'len(kept))',
             'replace': '        actor.append(sum(r["timing_s/update_actor"] for r in kept) / len(kept))'}]},
 {'name': 'pooled_repetitions',
  'score': 6.15,
  'fails': {'summary': 'Average each repetition on its own'},
  'patch': [{'find': '    actor, step = [], []\n'
                     '    for text in logs:\n'
                     '        kept = [r for r in parse_steps(text) if r["step"] > warmup]\n'
                     '        actor.append(sum(r["timing_per_token_ms/update_actor"] for r in kept) / '
                     'len(kept))\n'
                     '        step.append(sum(r["timing_s/step"] for r in kept) / len(kept))\n'
                     '    return {"actor_ms_per_token": sum(actor) / len(actor), "step_s": sum(step) / '
                     'len(step)}',
             'replace': '    kept = [r for text in logs for r in parse_steps(text) if r["step"] > warmup]  # '
                        'all steps in one pool\n'
                        '    return {"actor_ms_per_token": sum(r["timing_per_token_ms/update_actor"] for r '
                        'in kept) / len(kept),\n'
                        '            "step_s": sum(r["timing_s/step"] for r in kept) / len(kept)}'}]},
 {'name': 'speedup_inverted',
  'score': 6.5,
  'fails': {'speedup': 'baseline time / path time'},
  'patch': [{'find': '        out[path] = {"actor": base["actor_ms_per_token"] / s["actor_ms_per_token"], '
                     '"step": base["step_s"] / s["step_s"]}',
             'replace': '        out[path] = {"actor": s["actor_ms_per_token"] / base["actor_ms_per_token"], '
                        '"step": s["step_s"] / base["step_s"]}'}]},
 {'name': 'warmup_included',
  'score': 3.0,
  'fails': {'summary': 'Drop the warm-up steps'},
  'patch': [{'find': '        kept = [r for r in parse_steps(text) if r["step"] > warmup]',
             'replace': '        kept = [r for r in parse_steps(text) ]'}]},
 {'name': 'anchored_step_line',
  'score': 6.05,
  'fails': {'parse_steps': 'Ray process prefix'},
  'patch': [{'find': 'STEP_LINE = re.compile(r"step:(\\d+) - (.*)$")',
             'replace': 'STEP_LINE = re.compile(r"^step:(\\d+) - (.*)$")  # lines that start with step:'}]}]

RULES = {'parse_steps': [{'id': 'step_lines',
                  'stated': 'parse the `step:N - key:value - ...` lines',
                  'hint': {'en': 'Keep only the step:N - key:value - ... lines, one record per line in '
                                 'order, and ignore the other lines.',
                           'zh': '只保留 step:N - key:value - ... 行，每行一条记录、保持顺序，其他行忽略。'}},
                 {'id': 'ray_prefix',
                  'stated': 'prefix such as `(TaskRunner pid=1507) step:1 - ...`',
                  'hint': {'en': "Step lines may carry a Ray process prefix such as '(TaskRunner pid=...)' "
                                 'before step:N.',
                           'zh': "step 行前面可能带有 Ray 进程前缀，如 '(TaskRunner pid=...)'。"}},
                 {'id': 'np_values',
                  'stated': 'values may be printed as `np.float64(0.5)`',
                  'hint': {'en': 'A value printed as np.float64(...) is the number inside the parentheses.',
                           'zh': '打印成 np.float64(...) 的值就是括号里的数。'}},
                 {'id': 'numbers',
                  'stated': 'Return every key (`step` included) as a number',
                  'hint': {'en': 'Every key, step included, maps to a number.',
                           'zh': '每个键（包括 step）都对应一个数字。'}}],
 'summary': [{'id': 'per_token',
              'stated': '(`timing_per_token_ms/update_actor`)',
              'hint': {'en': 'The actor time is timing_per_token_ms/update_actor (per token), not '
                             'timing_s/update_actor.',
                       'zh': 'Actor 时间用 timing_per_token_ms/update_actor（每 token），不是 '
                             'timing_s/update_actor。'}},
             {'id': 'step_time',
              'stated': 'the step time (`timing_s/step`)',
              'hint': {'en': 'The step time is timing_s/step.', 'zh': '每步时间用 timing_s/step。'}},
             {'id': 'warmup_drop',
              'stated': 'drop steps with `step <= warmup` in each',
              'hint': {'en': 'Drop the warm-up steps (step <= warmup) in every repetition before averaging.',
                       'zh': '在每次重复里先去掉 warm-up 步（step <= warmup）再求平均。'},
              'types': '`summarize(logs, warmup=1)`'},
             {'id': 'rep_mean',
              'stated': 'average each repetition, then average the repetitions',
              'hint': {'en': 'Average each repetition on its own, then average the repetitions (not one '
                             'pooled mean of all steps).',
                       'zh': '先对每次重复各自求平均，再对各次重复求平均（不是把所有步合在一起求平均）。'}}],
 'speedup': [{'id': 'ratio',
              'stated': 'speed-up = baseline time / path time',
              'types': '`runs` is `{path: [log text, ...]}`',
              'hint': {'en': 'Speed-up = baseline time / path time for both the actor per-token time and the '
                             'step time, so the baseline is exactly 1.',
                       'zh': '加速比 = 基线时间 / 该路径时间，Actor 每 token 时间与每步时间都如此，基线正好为 1。'}},
             {'id': 'warmup_passed',
              'stated': 'drop steps with `step <= warmup` in each',
              'types': '`runs` is `{path: [log text, ...]}`',
              'hint': {'en': 'speedups passes its warmup on to the averages of every path.',
                       'zh': 'speedups 要把它的 warmup 传给每条路径的平均计算。'}},
             {'id': 'any_order',
              'stated': 'may come in any order',
              'types': '`runs` is `{path: [log text, ...]}`',
              'hint': {'en': 'Find the baseline by its name, whatever order the paths come in, and give '
                             'every path in runs a speed-up.',
                       'zh': '按名字找到基线，无论路径顺序如何，并为 runs 中的每条路径给出加速比。'}}]}

EQUIVALENT = [{'mutant': 'const_zero:9d08b85e:1',
  'reason': "group(0) adds the leading 'step:N' item, which parses to the key step with the same number (as "
            'a float), so every record holds the same numbers'},
 {'mutant': 'const_zero:d749ff1e:2',
  'reason': 'when group(1) is empty the NUMBER regex matched the whole raw value as group(2), so group(0) is '
            'the same text'}]
