"""ch07.three_step_training: configure the lab trainer as the course's TorchTitan run, scaled down, and run 3 steps.

Graded on the run itself (metric_trace on metrics.jsonl / run.json / files). The reference band comes from a
run of the solution config recorded by this builder (`--retrace` re-records it): CPU, profile cpu-tiny.
"""
from __future__ import annotations

import json
import sys
import tempfile

from nbkit_ch07_08 import REPO, Check, Exercise, Mistake, code, md

EX_ID = "ch07.three_step_training"
TRACE = REPO / "reference" / EX_ID / "cpu_tiny_trace.json"
LAB_BAND = REPO / "reference" / "traces" / "cpu-tiny" / "band.json"  # the trainer's multi-seed band, when recorded
LAB_BAND_SKIP = {"actor/lr", "actor/kl_loss"}  # already exact in trace_values
BAND_METRICS = {"critic/score/mean": (0.5, 0.15), "actor/entropy": (0.15, 0.0),
                "response_length/mean": (0.35, 0.0), "actor/grad_norm": (1.0, 0.1)}
PROFILE_LR = 2e-5  # exercises.lab.train.TrainConfig.lr for cpu-tiny (the course's 1e-6 is for the 1.7B model)
CONFIG = {
    "profile": "cpu-tiny", "steps": 3, "save_freq": -1, "test_freq": -1, "data_parallel_shard_size": 2,
    "context_parallel_size": 1, "world_size": 2, "reshard_after_forward": "always", "warmup_steps": 5,
    "decay_type": "cosine", "min_lr_factor": 0.1, "kl_loss_coef": 0.001, "kl_loss_type": "low_var_kl",
    "entropy_coeff": 0.004,
}
COMMENTS = {
    "profile": "tiny Qwen3 + 2 CPU ranks (gloo); the NPU run uses Qwen3-1.7B",
    "steps": "TOTAL_TRAINING_STEPS=3", "save_freq": "SAVE_FREQ=-1: no checkpoint", "test_freq": "TEST_FREQ=-1",
    "data_parallel_shard_size": "actor.torchtitan.data_parallel_shard_size=2 (FSDP2)",
    "context_parallel_size": "actor.torchtitan.context_parallel_size=1", "world_size": "1 node x 2 devices",
    "reshard_after_forward": "actor.torchtitan.reshard_after_forward=always", "warmup_steps": "optim.lr_warmup_steps=5",
    "decay_type": "optim.decay_type=cosine", "min_lr_factor": "optim.min_lr_factor=0.1",
    "kl_loss_coef": "actor.kl_loss_coef=0.001", "kl_loss_type": "actor.kl_loss_type=low_var_kl",
    "entropy_coeff": "actor.entropy_coeff=0.004",
}


def _config_src(cfg: dict) -> str:
    body = "".join(f"    {k!r}: {v!r},{' ' * max(1, 30 - len(repr(k)) - len(repr(v)))}# {COMMENTS[k]}\n"
                   for k, v in cfg.items())
    return "config = {\n" + body + "    'out_dir': 'runs/three_step',\n}\n"


SOL_CONFIG = _config_src(CONFIG)
TPL_CONFIG = '''
config = None  # a dict of TrainConfig fields, see the table above
'''
SOL_RUN = '''
from exercises.lab.train import run

result = run(config)  # ~40 s on two CPU cores: 2 ranks x 3 GRPO steps
print(result["out_dir"], "wall", round(result["wall_s"], 1), "s")
'''
TPL_RUN = '''
from exercises.lab.train import run

result = None  # result = run(config)
'''
SAVE_25 = _config_src({**CONFIG, "save_freq": 25})
RESHARD_DEFAULT = _config_src({**CONFIG, "reshard_after_forward": "default"})
METRICS = ["training/global_step", "actor/pg_loss", "actor/kl_loss", "actor/entropy", "actor/grad_norm", "actor/lr",
           "critic/score/mean", "response_length/mean", "num_turns/mean", "timing_s/step",
           "timing_per_token_ms/update_actor", "perf/total_num_tokens"]


def record_trace(force: bool = False) -> None:
    """Run the solution config once on this machine and keep the band metrics as the reference trace."""
    if TRACE.exists() and not force:
        return
    from exercises.lab.train import run

    with tempfile.TemporaryDirectory() as tmp:
        result = run({**CONFIG, "out_dir": tmp})
    rows = sorted(result["metrics"], key=lambda r: r["step"])
    data = {m: [r[m] for r in rows] for m in BAND_METRICS}
    TRACE.parent.mkdir(parents=True, exist_ok=True)
    data["_about"] = ("Recorded by scripts/notebooks/build_ch07.py from the solution config on CPU "
                      f"(torch {result['run']['versions']['torch']}, profile cpu-tiny, seed 1).")
    TRACE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def band_spec() -> dict:
    """Band sub-check: the lab's recorded multi-seed band (reference/traces/cpu-tiny/band.json) when present,
    else a relative band around this builder's own single-seed trace."""
    if LAB_BAND.exists():
        doc = json.loads(LAB_BAND.read_text(encoding="utf-8"))
        steps = [str(s) for s in doc["steps"]]
        return {m: {"lower": [per[s]["lo"] for s in steps], "upper": [per[s]["hi"] for s in steps]}
                for m, per in sorted(doc["metrics"].items()) if m not in LAB_BAND_SKIP}
    return {m: {"reference": "cpu_tiny_trace", "rel": rel, "abs": ab} for m, (rel, ab) in BAND_METRICS.items()}


def _score(parts: dict[str, tuple[float, float]]) -> float:
    return round(sum(round(points * frac, 4) for points, frac in parts.values()), 4)


def spec() -> Exercise:
    record_trace(force="--retrace" in sys.argv)
    n = len(CONFIG)
    checks = [
        Check("config", "config", "mapping", 2, "The course settings, scaled down", "按课程设置（缩小版）",
              "Translate the course's TorchTitan run into TrainConfig fields: the keys named above do not match "
              "the 3-step run (TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1) or the actor's torchtitan/optim "
              "settings.", "把课程的 TorchTitan 运行翻译成 TrainConfig 字段：上面列出的键与 3 步运行"
              "（TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1）或 actor 的 torchtitan/optim 设置不一致。",
              expected=dict(CONFIG), options={"extra_keys": "ignore"}),
        Check("run_setup", "result", "metric_trace", 2, "run.json and the files written", "run.json 与输出文件",
              "run.json must show model_engine torchtitan on 2 ranks with FSDP2 (shard 2, cp 1, reshard always, "
              "DTensor params), and a 3-step run with SAVE_FREQ=-1 writes no checkpoints.",
              "run.json 应显示 model_engine=torchtitan、2 个 rank、FSDP2（shard 2、cp 1、reshard always、参数为 DTensor），"
              "且 SAVE_FREQ=-1 的 3 步运行不写 checkpoint。",
              options={"run": {"model_engine": "torchtitan", "world_size": 2, "total_training_steps": 3,
                               "params_are_dtensors": True, "status": "finished",
                               "parallel.data_parallel_shard_size": 2, "parallel.context_parallel_size": 1,
                               "parallel.reshard_after_forward": "always"},
                       "present_files": ["metrics.jsonl", "run.json"],
                       "absent_files": ["checkpoints", "*.safetensors"]}),
        Check("trace_shape", "result", "metric_trace", 2, "Three step records with verl's metric names",
              "三条 step 记录，使用 verl 指标名",
              "Expect exactly 3 step records carrying verl's metric names (actor/pg_loss, critic/score/mean, "
              "timing_per_token_ms/update_actor, ...) with finite values.",
              "应恰好有 3 条 step 记录，带 verl 的指标名（actor/pg_loss、critic/score/mean、timing_per_token_ms/update_actor 等），且数值有限。",
              options={"metrics": METRICS, "steps": 3, "finite": True}),
        Check("trace_values", "result", "metric_trace", 2, "global_step, LR warm-up and the first KL",
              "global_step、学习率 warm-up 与第一步 KL",
              "global_step runs 1..3; with warmup 5 clamped to the 3 steps the LR factor is 1/3, 2/3, 1 of the "
              "profile's lr; actor and reference are identical at step 1, so kl_loss starts at 0.",
              "global_step 为 1..3；warmup 5 被截为 3 步，学习率系数为配置 lr 的 1/3、2/3、1；第一步 actor 与 reference 相同，kl_loss 为 0。",
              options={"equals": {"training/global_step": [1, 2, 3],
                                  "actor/lr": [PROFILE_LR / 3, 2 * PROFILE_LR / 3, PROFILE_LR]},
                       "band": {"actor/kl_loss": {"lower": [-1e-9, 0.0, 0.0], "upper": [1e-9, 0.1, 0.1]}},
                       "rtol": 1e-6, "atol": 1e-12}),
        Check("trace_band", "result", "metric_trace", 2, "Inside the reference band", "在参考范围内",
              "Score, entropy, response length or grad norm left the band recorded for profile cpu-tiny; run the "
              "profile as given (its lr, batch and seed) rather than the 1.7B model's values.",
              "得分、熵、回复长度或梯度范数超出了 cpu-tiny 配置记录的范围；请按给定配置运行（其 lr、batch 与 seed），不要换成 1.7B 模型的数值。",
              options={"band": band_spec()}),
    ]
    wrong_one = {"config": (2, (n - 1) / n), "run_setup": (2, 2 / 3), "trace_shape": (2, 1), "trace_values": (2, 1),
                 "trace_band": (2, 1)}
    intro = [
        md("""
        # 第 7 章 · 练习：3 步 TorchTitan 训练

        课程在 NPU 上用 `TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1` 跑完整流程：不保存 checkpoint，不做周期或最终验证
        （训练前的验证仍会运行），warmup 5 被截为 3。这里没有 NPU，所以用课程运行时 `exercises.lab.train`：同样的 GRPO、
        Wordle 奖励与智能体循环、verl 指标名，模型换成很小的 Qwen3，在 2 个 CPU rank 上用 torchtitan FSDP2（gloo）训练。
        """, """
        # Chapter 7 · Exercise: a 3-step TorchTitan training run

        On the NPU the course runs the whole pipeline with `TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1`: no
        checkpoint, no periodic or final validation (the validation before training still runs), and warmup 5 clamped to
        3. There is no NPU here, so use the course runtime `exercises.lab.train`: the same GRPO, Wordle reward and agent
        loop and verl's metric names, with a tiny Qwen3 trained by torchtitan FSDP2 on 2 CPU ranks (gloo).
        """),
        md("""
        ## 任务
        1. 写出 `config`（`TrainConfig` 字段的字典），对应课程运行：`profile="cpu-tiny"`、3 步、`save_freq`/`test_freq` 为 −1、
           `data_parallel_shard_size=2`、`context_parallel_size=1`、`world_size=2`、`reshard_after_forward="always"`、
           warmup 5、cosine、`min_lr_factor=0.1`、`kl_loss_coef=0.001`、`kl_loss_type="low_var_kl"`、`entropy_coeff=0.004`。
           学习率保持配置自带的值（小模型需要比 1.7B 的 1e-6 更大的 lr）。
        2. `result = run(config)`，大约 40 秒。评分读取 `result["out_dir"]` 下的 `metrics.jsonl` 和 `run.json`。
        """, """
        ## Tasks
        1. Write `config` (a dict of `TrainConfig` fields) matching the course run: `profile="cpu-tiny"`, 3 steps,
           `save_freq`/`test_freq` −1, `data_parallel_shard_size=2`, `context_parallel_size=1`, `world_size=2`,
           `reshard_after_forward="always"`, warmup 5, cosine, `min_lr_factor=0.1`, `kl_loss_coef=0.001`,
           `kl_loss_type="low_var_kl"`, `entropy_coeff=0.004`. Keep the profile's own learning rate (the tiny model
           needs a larger one than the 1.7B model's 1e-6).
        2. `result = run(config)`, about 40 s. Grading reads `metrics.jsonl` and `run.json` under `result["out_dir"]`.
        """),
    ]
    after = [
        md("## 看一看结果", "## Look at the run"),
        code('''
        if result is not None:
            for rec in result["metrics"]:
                print({k: round(rec[k], 6) for k in ("step", "actor/pg_loss", "actor/kl_loss", "actor/lr",
                                                     "critic/score/mean")})
            print({k: result["run"][k] for k in ("model_engine", "world_size", "params_are_dtensors")},
                  result["run"]["parallel"])
        '''),
    ]
    return Exercise(
        id=EX_ID, title_en="A 3-step TorchTitan GRPO run", title_zh="3 步 TorchTitan GRPO 训练",
        summary_en="the course's TorchTitan run scaled down to a tiny Qwen3 on 2 CPU ranks, graded on its metrics",
        summary_zh="把课程的 TorchTitan 运行缩小到 2 个 CPU rank 上的小 Qwen3，并按指标评分",
        kernel_family="training", lane="long", builder_exec=False,
        resources={"world_size": 2},
        answers=[("config", "value"), ("result", "training_run")],
        checks=checks, intro=intro,
        answer_cells={"config": (TPL_CONFIG, SOL_CONFIG), "run": (TPL_RUN, SOL_RUN)}, after=after,
        mistakes=[
            Mistake("keeps_save_freq", {"config": SAVE_25}, {"config": "save_freq", "run_setup": "checkpoints"},
                    score=_score(wrong_one)),
            Mistake("default_reshard", {"config": RESHARD_DEFAULT},
                    {"config": "reshard_after_forward", "run_setup": "reshard_after_forward"}, score=_score(wrong_one)),
        ],
    )
