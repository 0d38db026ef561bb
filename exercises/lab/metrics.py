"""verl's per-step metric names (COURSE.md section 7), computed from the gathered samples, and their sinks.

Every step writes one JSON line to `metrics.jsonl` and one verl console line (`step:N - k:v - ...`).
`timing_s/*` and `perf/*` are wall-clock and differ between reruns; everything else is deterministic.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from exercises.lab.metrics_format import format_console_line

#: Keys that legitimately change between two identical-seed runs.
NONDETERMINISTIC_PREFIXES = ("timing_s/", "timing_per_token_ms/", "perf/")

#: The per-step keys the lab always emits, in console order.
STEP_KEYS = (
    "training/global_step",
    "training/epoch",
    "actor/pg_loss",
    "actor/kl_loss",
    "actor/entropy",
    "actor/grad_norm",
    "actor/lr",
    "actor/pg_clipfrac",
    "actor/ppo_kl",
    "actor/pg_clipfrac_lower",
    "actor/entropy_loss",
    "actor/kl_coef",
    "actor/loss",
    "critic/score/mean",
    "critic/score/max",
    "critic/score/min",
    "critic/rewards/mean",
    "critic/rewards/max",
    "critic/rewards/min",
    "critic/advantages/mean",
    "critic/advantages/max",
    "critic/advantages/min",
    "response_length/mean",
    "response_length/max",
    "response_length/min",
    "response_length/clip_ratio",
    "prompt_length/mean",
    "prompt_length/max",
    "prompt_length/min",
    "num_turns/mean",
    "num_turns/min",
    "num_turns/max",
    "timing_s/gen",
    "timing_s/reward",
    "timing_s/old_log_prob",
    "timing_s/ref",
    "timing_s/adv",
    "timing_s/update_actor",
    "timing_s/update_weights",
    "timing_s/step",
    "timing_per_token_ms/update_actor",
    "perf/total_num_tokens",
    "perf/time_per_step",
    "perf/throughput",
)


class Timer:
    """Collects `timing_s/<name>` sections of one step."""

    def __init__(self) -> None:
        self.timing: dict[str, float] = {}

    @contextmanager
    def section(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timing[name] = self.timing.get(name, 0.0) + time.perf_counter() - start


def _mmm(prefix: str, values: Sequence[float]) -> dict[str, float]:
    return {f"{prefix}/mean": sum(values) / len(values), f"{prefix}/max": max(values), f"{prefix}/min": min(values)}


def data_metrics(samples: Sequence[Mapping], adv_stats: Sequence[float], *, max_response_length: int) -> dict:
    """critic/*, response_length/*, prompt_length/*, num_turns/* over all ranks' samples.

    `adv_stats` is (sum, count, max, min) of the advantages on loss tokens, already reduced over ranks.
    """
    scores = [float(s["score"]) for s in samples]
    resp = [float(s["response_length"]) for s in samples]
    out = {}
    out.update(_mmm("critic/score", scores))
    out.update(_mmm("critic/rewards", scores))  # no KL-in-reward (use_kl_in_reward=False): rewards == scores
    adv_sum, adv_count, adv_max, adv_min = adv_stats
    out["critic/advantages/mean"] = adv_sum / adv_count if adv_count else 0.0
    out["critic/advantages/max"] = adv_max if adv_count else 0.0
    out["critic/advantages/min"] = adv_min if adv_count else 0.0
    out.update(_mmm("response_length", resp))
    out["response_length/clip_ratio"] = sum(r >= max_response_length for r in resp) / len(resp)
    out.update(_mmm("prompt_length", [float(s["prompt_length"]) for s in samples]))
    turns = [float(s["num_turns"]) for s in samples]
    out.update({"num_turns/mean": sum(turns) / len(turns), "num_turns/min": min(turns), "num_turns/max": max(turns)})
    return out


def timing_metrics(timing: Mapping[str, float], *, total_tokens: int, world_size: int) -> dict:
    """timing_s/*, timing_per_token_ms/update_actor and perf/* (tokens = prompt + response, all ranks)."""
    out = {f"timing_s/{k}": v for k, v in timing.items()}
    step_s = timing.get("step", 0.0)
    out["timing_per_token_ms/update_actor"] = timing.get("update_actor", 0.0) * 1000.0 / max(total_tokens, 1)
    out["perf/total_num_tokens"] = total_tokens
    out["perf/time_per_step"] = step_s
    out["perf/throughput"] = total_tokens / (step_s * world_size) if step_s > 0 else 0.0
    return out


def ordered(metrics: Mapping[str, float]) -> dict:
    """STEP_KEYS first (in that order), then any extras alphabetically."""
    out = {k: metrics[k] for k in STEP_KEYS if k in metrics}
    out.update({k: metrics[k] for k in sorted(metrics) if k not in out})
    return out


def deterministic_view(record: Mapping[str, float]) -> dict:
    """The record without wall-clock keys: what must match between identical-seed runs."""
    return {k: v for k, v in record.items() if not k.startswith(NONDETERMINISTIC_PREFIXES)}


def all_finite(record: Mapping[str, object]) -> bool:
    """True when every numeric value is finite."""
    return all(math.isfinite(float(v)) for v in record.values() if isinstance(v, (int, float)))


class MetricsSink:
    """Rank 0's writer: JSON lines to `metrics.jsonl` and verl console lines to stdout."""

    def __init__(self, out_dir: Path, *, console: bool = True) -> None:
        self.path = Path(out_dir) / "metrics.jsonl"
        self.path.write_text("")
        self.console = console

    def log(self, step: int, metrics: Mapping[str, float]) -> dict:
        record = {"step": int(step), **ordered(metrics)}
        with self.path.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        if self.console:
            print(format_console_line(step, ordered(metrics)), flush=True)
        return record
