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
#    over the baseline.
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
  'fails': {'summary': 'average each repetition'},
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
  'fails': {'summary': 'drop the warm-up'},
  'patch': [{'find': '        kept = [r for r in parse_steps(text) if r["step"] > warmup]',
             'replace': '        kept = [r for r in parse_steps(text) ]'}]},
 {'name': 'anchored_step_line',
  'score': 6.05,
  'fails': {'parse_steps': 'Ray prefix'},
  'patch': [{'find': 'STEP_LINE = re.compile(r"step:(\\d+) - (.*)$")',
             'replace': 'STEP_LINE = re.compile(r"^step:(\\d+) - (.*)$")  # lines that start with step:'}]}]
