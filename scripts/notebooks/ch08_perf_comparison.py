"""ch08.perf_comparison: actor per-token time and step time of FSDP, FSDP2+TND and TND+CP2 from step logs.

The logs are SYNTHETIC: COURSE.md §7 found no public FSDP2+TND or TND+CP2 numbers (only ~250 s/step for the FSDP
recipe), so the builder generates them, deterministically, in verl's console format (`step:N - key:value`, values
through pprint, numpy scalars as `np.float64(...)`, Ray's `(TaskRunner pid=...)` prefix on some lines).
"""
from __future__ import annotations

import random
from pathlib import Path

from nbkit_ch07_08 import REPO, Check, Exercise, Mistake, code, md

LOG_DIR = REPO / "exercises" / "ch08" / "perf_comparison" / "logs"
PATHS = {"FSDP": (0.0412, 251.0), "FSDP2+TND": (0.0296, 212.0), "TND+CP2": (0.0338, 229.0)}  # ms/token, s/step
FILE = {"FSDP": "fsdp", "FSDP2+TND": "fsdp2_tnd", "TND+CP2": "tnd_cp2"}
HEADER = ("# SYNTHETIC log for the ch08.perf_comparison exercise: the numbers are generated, not measured "
          "(no public FSDP2+TND / TND+CP2 figures exist); the line format is verl's console logger.\n")


def _num(v: float, np_style: bool) -> str:
    return f"np.float64({v!r})" if np_style else repr(v)


def make_log(path: str, seed: int, steps: int = 6, warm: float = 1.45, prefix: bool = False,
             scale: tuple[float, float] = (1.0, 1.0), noise: float = 0.03) -> str:
    """One repetition: a few non-step lines, then `steps` step lines (step 1 pays the warm-up)."""
    rng = random.Random(seed)
    actor0, step0 = PATHS[path]
    lines = [HEADER, f"Total training steps: {steps}\n",
             "Initial validation metrics: {'val-core/wordle/reward/mean@5': 0.8213, 'val-aux/num_turns/mean': 4.6}\n"]
    pre = f"(TaskRunner pid={1000 + seed}) " if prefix else ""
    for n in range(1, steps + 1):
        w = warm if n == 1 else 1.0
        tokens = rng.randint(1_700_000, 1_950_000)
        per_tok = round(actor0 * scale[0] * w * (1 + rng.uniform(-noise, noise)), 6)
        step_s = round(step0 * scale[1] * w * (1 + rng.uniform(-noise, noise)), 3)
        upd = round(per_tok * tokens / 1000, 3)
        ref_tok = round(per_tok * 0.31, 6)
        fields = [
            ("training/global_step", str(n)), ("training/epoch", "0"),
            ("actor/pg_loss", _num(round(rng.uniform(-0.05, 0.05), 6), True)),
            ("actor/kl_loss", _num(0.0 if n == 1 else round(rng.uniform(1e-4, 2e-3), 7), True)),
            ("actor/entropy", _num(round(rng.uniform(0.35, 0.55), 5), True)),
            ("actor/grad_norm", _num(round(rng.uniform(0.2, 1.5), 5), False)),
            ("actor/lr", repr(1e-6 * n / 5 if n <= 5 else 1e-6)),
            ("critic/score/mean", _num(round(rng.uniform(0.8, 1.25), 5), True)),
            ("response_length/mean", _num(round(rng.uniform(1200, 1700), 2), True)),
            ("perf/total_num_tokens", str(tokens)),
            ("timing_s/gen", _num(round(step_s * 0.55, 3), False)),
            ("timing_s/ref", _num(round(ref_tok * tokens / 1000, 3), False)),
            ("timing_s/update_actor", _num(upd, False)),
            ("timing_s/step", _num(step_s, n % 2 == 0)),
            ("timing_per_token_ms/ref", _num(ref_tok, True)),
            ("timing_per_token_ms/update_actor", _num(per_tok, True)),
            ("perf/throughput", _num(round(tokens / (step_s * 2), 3), True)),
        ]
        lines.append(pre + f"step:{n} - " + " - ".join(f"{k}:{v}" for k, v in fields) + "\n")
        if n == 3:
            lines.append(pre + "WARNING: vLLM sleep mode released 41.2 GiB of KV cache\n")
    return "".join(lines)


def public_logs() -> dict[str, list[str]]:
    return {p: [make_log(p, seed=10 * i + k) for k in range(1, 4)] for i, p in enumerate(PATHS)}


def write_public_logs() -> None:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    for path, logs in public_logs().items():
        for k, text in enumerate(logs, 1):
            (LOG_DIR / f"{FILE[path]}_run{k}.log").write_text(text, encoding="utf-8")


SOL_PARSE = '''
import re

STEP_LINE = re.compile(r"step:(\\d+) - (.*)$")
NUMBER = re.compile(r"^(?:np\\.\\w+\\((.*)\\)|(.*))$")  # pprint shows numpy scalars as np.float64(...)


def parse_steps(text):
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
'''
SOL_SUMMARY = '''
def summarize(logs, warmup=1):
    """Mean actor per-token time (ms) and step time (s) after the warm-up steps: per repetition, then averaged."""
    actor, step = [], []
    for text in logs:
        kept = [r for r in parse_steps(text) if r["step"] > warmup]
        actor.append(sum(r["timing_per_token_ms/update_actor"] for r in kept) / len(kept))
        step.append(sum(r["timing_s/step"] for r in kept) / len(kept))
    return {"actor_ms_per_token": sum(actor) / len(actor), "step_s": sum(step) / len(step)}


def speedups(runs, baseline="FSDP", warmup=1):
    """{path: {"actor": t_baseline / t_path, "step": ...}}: > 1 means faster than the baseline."""
    base = summarize(runs[baseline], warmup)
    out = {}
    for path, logs in runs.items():
        s = summarize(logs, warmup)
        out[path] = {"actor": base["actor_ms_per_token"] / s["actor_ms_per_token"], "step": base["step_s"] / s["step_s"]}
    return out
'''
TPL_PARSE = '''
import re


def parse_steps(text):
    """Return [{"step": N, key: float, ...}, ...] for every step line of a verl console log."""
    raise NotImplementedError("implement parse_steps")
'''
TPL_SUMMARY = '''
def summarize(logs, warmup=1):
    """Return {"actor_ms_per_token": ..., "step_s": ...} over several repetitions (log texts) of one path."""
    raise NotImplementedError("implement summarize")


def speedups(runs, baseline="FSDP", warmup=1):
    """Return {path: {"actor": ..., "step": ...}} relative to the baseline path."""
    raise NotImplementedError("implement speedups")
'''
NO_WARMUP = SOL_SUMMARY.replace('if r["step"] > warmup]', "]")
WRONG_KEY = SOL_SUMMARY.replace('r["timing_per_token_ms/update_actor"]', 'r["timing_s/update_actor"]')
INVERTED = SOL_SUMMARY.replace('''{"actor": base["actor_ms_per_token"] / s["actor_ms_per_token"], "step": base["step_s"] / s["step_s"]}''',
                               '''{"actor": s["actor_ms_per_token"] / base["actor_ms_per_token"], "step": s["step_s"] / base["step_s"]}''')
POOLED = SOL_SUMMARY.replace('''    actor, step = [], []
    for text in logs:
        kept = [r for r in parse_steps(text) if r["step"] > warmup]
        actor.append(sum(r["timing_per_token_ms/update_actor"] for r in kept) / len(kept))
        step.append(sum(r["timing_s/step"] for r in kept) / len(kept))
    return {"actor_ms_per_token": sum(actor) / len(actor), "step_s": sum(step) / len(step)}''', '''    kept = [r for text in logs for r in parse_steps(text) if r["step"] > warmup]  # all steps in one pool
    return {"actor_ms_per_token": sum(r["timing_per_token_ms/update_actor"] for r in kept) / len(kept),
            "step_s": sum(r["timing_s/step"] for r in kept) / len(kept)}''')
assert len({SOL_SUMMARY, NO_WARMUP, WRONG_KEY, INVERTED, POOLED}) == 5


def _hidden_runs(seed: int, prefix: bool, lengths=(6, 6, 6), scale=(1.0, 1.0)) -> dict[str, list[str]]:
    return {p: [make_log(p, seed=seed + 7 * i + k, steps=lengths[k], prefix=prefix, scale=scale)
                for k in range(len(lengths))] for i, p in enumerate(PATHS)}


def spec() -> Exercise:
    write_public_logs()
    pub = public_logs()
    short = make_log("FSDP", seed=99, steps=3)
    h1, h2 = _hidden_runs(500, True), _hidden_runs(600, False, lengths=(5, 8, 4), scale=(0.9, 1.1))
    h3 = {"TND+CP2": _hidden_runs(700, True, (6, 7))["TND+CP2"], "FSDP": _hidden_runs(800, False, (4, 6))["FSDP"]}
    rel = {"compare": "numeric", "rtol": 1e-6, "atol": 0.0}
    checks = [
        Check("parse_steps", "parse_steps", "function", 3, "Parse verl's step lines", "解析 verl 的 step 行",
              "Keep only `step:N - k:v - ...` lines (they may carry a Ray prefix such as '(TaskRunner pid=...)'); "
              "values may be printed as np.float64(...); return every key as a float.",
              "只保留 `step:N - k:v - ...` 行（行首可能带 Ray 前缀，如 '(TaskRunner pid=...)'）；数值可能打印成 np.float64(...)；"
              "所有键都返回 float。",
              calls=[{"args": [short], "public": True, "label": "3-step FSDP log"},
                     {"args": [h1["FSDP2+TND"][0]], "public": False}, {"args": [h2["TND+CP2"][1]], "public": False},
                     {"args": [h3["TND+CP2"][1]], "public": False}], options=rel),
        Check("summary", "summarize", "function", 3.5, "Per-path averages", "每条路径的平均值",
              "Use timing_per_token_ms/update_actor (per token, not timing_s/update_actor) and timing_s/step; drop "
              "the warm-up steps (step <= warmup) in every repetition, average each repetition, then average the "
              "repetitions.", "使用 timing_per_token_ms/update_actor（按 token，而不是 timing_s/update_actor）和 timing_s/step；"
              "每次重复都去掉 warm-up 步（step <= warmup），先对每次重复求平均，再对各次重复求平均。",
              calls=[{"args": [pub["FSDP"]], "public": True, "label": "public FSDP logs (3 runs)"},
                     {"args": [h1["FSDP"]], "public": False}, {"args": [h2["FSDP2+TND"]], "public": False},
                     {"args": [h2["TND+CP2"], 2], "public": False}, {"args": [h3["FSDP"]], "public": False}],
              options=rel),
        Check("speedup", "speedups", "function", 3.5, "Speed-ups over FSDP", "相对 FSDP 的加速比",
              "Speed-up = baseline time / path time, so a faster path is above 1 and the baseline is exactly 1; "
              "compute both from the warm-up-free averages.", "加速比 = 基线时间 / 该路径时间，更快的路径大于 1，基线恰为 1；两者都用去掉 warm-up 后的平均值。",
              calls=[{"args": [pub], "public": True, "label": "public logs of the three paths"},
                     {"args": [h1], "public": False}, {"args": [h2], "kwargs": {"warmup": 2}, "public": False},
                     {"args": [h3], "public": False}], options=rel),
    ]
    intro = [
        md("""
        # 第 8 章 · 练习：三条路径的性能对比

        第 8 章比较三条路径：FSDP、FSDP2+TND、TND+CP2，指标是 Actor 每 token 时间（`timing_per_token_ms/update_actor`）
        和每步时间（`timing_s/step`）。公平的比较一次只改变一个变量，并且加入 warm-up 和多次重复。
        **注意：本练习的日志是合成数据**（公开资料中没有 FSDP2+TND、TND+CP2 的实测数字），只有格式与 verl 的控制台日志一致。
        """, """
        # Chapter 8 · Exercise: comparing the three paths

        Chapter 8 compares three paths, FSDP, FSDP2+TND and TND+CP2, on the actor per-token time
        (`timing_per_token_ms/update_actor`) and the step time (`timing_s/step`). A fair comparison changes one variable
        at a time and adds warm-up and repetitions.
        **Note: the logs in this exercise are synthetic** (no public FSDP2+TND or TND+CP2 measurements exist); only their
        format follows verl's console logger.
        """),
        md("""
        ## 任务
        1. `parse_steps(text)`：解析 `step:N - key:value - ...` 行。
        2. `summarize(logs, warmup=1)`：一条路径的多次重复；每次重复去掉 `step <= warmup` 的步，先各自求平均再整体平均。
        3. `speedups(runs, baseline="FSDP", warmup=1)`：`runs` 为 `{路径: [日志文本, ...]}`，返回每条路径相对基线的加速比。
        评分时会把**其他**日志传给你的函数，所以不要硬编码数字。
        """, """
        ## Tasks
        1. `parse_steps(text)`: parse the `step:N - key:value - ...` lines.
        2. `summarize(logs, warmup=1)`: several repetitions of one path; drop steps with `step <= warmup` in each, average
           each repetition, then average the repetitions.
        3. `speedups(runs, baseline="FSDP", warmup=1)`: `runs` is `{path: [log text, ...]}`; return each path's speed-up
           over the baseline.
        Grading passes **other** logs to your functions, so do not hard-code numbers.
        """),
        code('''
        from pathlib import Path

        import exercises

        LOG_DIR = Path(exercises.__file__).parent / "ch08" / "perf_comparison" / "logs"
        RUNS = {path: [(LOG_DIR / f"{stem}_run{k}.log").read_text() for k in (1, 2, 3)]
                for path, stem in {"FSDP": "fsdp", "FSDP2+TND": "fsdp2_tnd", "TND+CP2": "tnd_cp2"}.items()}
        print(RUNS["FSDP"][0][:1200])
        '''),
    ]
    return Exercise(
        id="ch08.perf_comparison", title_en="Compare FSDP, FSDP2+TND and TND+CP2", title_zh="对比 FSDP、FSDP2+TND 与 TND+CP2",
        summary_en="actor per-token and step time from (synthetic) verl step logs, warm-up excluded, repetitions averaged",
        summary_zh="从（合成的）verl step 日志计算 Actor 每 token 时间与每步时间，去掉 warm-up 并对重复取平均",
        kernel_family="light",
        answers=[("parse_steps", "function"), ("summarize", "function"), ("speedups", "function")],
        checks=checks, intro=intro,
        answer_cells={"parse": (TPL_PARSE, SOL_PARSE), "summary": (TPL_SUMMARY, SOL_SUMMARY)},
        after=[md("## 自查（仅公开日志）", "## Self-check (public logs only)"), code(SELF_CHECK)],
        mistakes=[
            Mistake("warmup_included", {"summary": NO_WARMUP}, {"summary": "drop the warm-up"}),
            Mistake("actor_seconds_not_per_token", {"summary": WRONG_KEY}, {"summary": "not timing_s/update_actor"}),
            Mistake("speedup_inverted", {"summary": INVERTED}, {"speedup": "baseline time / path time"}),
            Mistake("pooled_repetitions", {"summary": POOLED}, {"summary": "average each repetition"}),
        ],
    )


SELF_CHECK = '''
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
'''
