"""ch07.dry_run_config: env-driven trainer overrides and checking a DRY_RUN `printf '%q '` line (§1, §3, §10 item 9).

The course command below is reconstructed from COURSE.md §1/§3 (keys and values), not copied from the
recipe's output; the lines are quoted by bash's own `printf '%q '` at build time.
"""
from __future__ import annotations

import subprocess

from nbkit_ch07_08 import Check, Exercise, Mistake, code, md

A, R, RO, T = "actor_rollout_ref.actor.", "actor_rollout_ref.ref.", "actor_rollout_ref.rollout.", "trainer."
TT = A + "torchtitan."
COURSE_OVERRIDES = [
    "algorithm.adv_estimator=grpo", "algorithm.use_kl_in_reward=False", "algorithm.kl_ctrl.kl_coef=0",
    "data.train_files=/root/wordle/data/wordle_train.parquet", "data.val_files=/root/wordle/data/wordle_test.parquet",
    "data.seed=42", "data.return_raw_chat=True", "data.train_batch_size=128", "data.max_prompt_length=1024",
    "data.max_response_length=4096", "data.filter_overlong_prompts=True", "data.truncation=error",
    "model_engine=torchtitan", "actor_rollout_ref.model.path=/root/models/Qwen3-1.7B-Wordle-SFT",
    "actor_rollout_ref.model.use_remove_padding=True", "actor_rollout_ref.model.enable_gradient_checkpointing=True",
    A + "optim.lr=1e-6", A + "optim.decay_type=cosine", A + "optim.min_lr_factor=0.1", A + "optim.lr_warmup_steps=5",
    A + "ppo_mini_batch_size=32", A + "use_dynamic_bsz=True", A + "ppo_max_token_len_per_gpu=5120",
    A + "use_kl_loss=True", A + "kl_loss_coef=0.001", A + "kl_loss_type=low_var_kl", A + "entropy_coeff=0.004",
    A + "use_torch_compile=False",
    TT + "param_offload=True", TT + "optimizer_offload=True", TT + "reshard_after_forward=always",
    TT + "forward_prefetch=False", TT + "use_torch_compile=False", TT + "data_parallel_replicate_size=1",
    TT + "data_parallel_shard_size=2", TT + "tensor_parallel_size=1", TT + "expert_parallel_size=1",
    "+" + TT + "expert_tensor_parallel_size=1", TT + "pipeline_parallel_size=1", TT + "context_parallel_size=1",
    TT + "attn_type=varlen", TT + "max_seq_len=5120",
    R + "log_prob_max_token_len_per_gpu=20480", R + "torchtitan.param_offload=True",
    R + "torchtitan.use_torch_compile=False", R + "torchtitan.max_seq_len=5120",
    RO + "name=vllm", RO + "mode=async", RO + "tensor_model_parallel_size=2", RO + "enforce_eager=True",
    RO + "max_model_len=5120", RO + "enable_chunked_prefill=False", RO + "gpu_memory_utilization=0.70", RO + "n=8",
    RO + "multi_turn.enable=True", RO + "multi_turn.max_user_turns=6", RO + "multi_turn.max_assistant_turns=6",
    RO + "multi_turn.format=hermes", RO + "multi_turn.tokenization_sanity_check_mode=disable",
    RO + "agent.num_workers=4", RO + "agent.default_agent_loop=wordle_agent",
    RO + "agent.agent_loop_config_path=/root/wordle/torchtitan-npu/agent_loop.yaml",
    RO + "val_kwargs.temperature=0.7", RO + "val_kwargs.n=5", RO + "val_kwargs.do_sample=True",
    "custom_reward_function.path=/root/wordle/torchtitan-npu/wordle_reward.py", "custom_reward_function.name=compute_score",
    T + "use_legacy_worker_impl=disable", T + "logger=[console,tensorboard]", T + "project_name=wordle_rl",
    T + "experiment_name=qwen3_1.7b_wordle_torchtitan_npu", T + "n_gpus_per_node=2", T + "nnodes=1",
    T + "val_before_train=True", T + "log_val_generations=5", T + "resume_mode=disable", T + "total_epochs=5",
    T + "device=npu",
]
PROGRAM = ["python3", "-m", "verl.trainer.main_ppo"]


def q_line(overrides: list[str]) -> str:
    """What `printf '%q ' python3 -m verl.trainer.main_ppo ...` prints (bash quotes it, trailing space kept)."""
    return subprocess.run(["bash", "-c", 'printf "%q " "$@"', "_", *PROGRAM, *overrides],
                          check=True, capture_output=True, text=True).stdout


def course_line(steps: str | None = None, save: str = "25", test: str = "5", edits: dict | None = None,
                drop: tuple = (), extra: tuple = ()) -> str:
    out = []
    for o in COURSE_OVERRIDES:
        key = o.split("=", 1)[0]
        if key in drop:
            continue
        out.append(f"{key}={edits[key]}" if edits and key in edits else o)
    out += [T + f"save_freq={save}", T + f"test_freq={test}"] + ([T + f"total_training_steps={steps}"] if steps else [])
    return q_line(out + list(extra))


SOL_TRAINER = '''
def trainer_overrides(env):
    """trainer.* overrides the run script derives from its environment variables."""
    out = {"trainer.save_freq": env.get("SAVE_FREQ") or "25", "trainer.test_freq": env.get("TEST_FREQ") or "5"}
    if env.get("TOTAL_TRAINING_STEPS"):
        out["trainer.total_training_steps"] = env["TOTAL_TRAINING_STEPS"]
    return out
'''
SOL_PARSE = '''
import shlex


def parse_dry_run(line):
    """{key: value} of every Hydra override in a DRY_RUN line, after undoing bash's %q quoting."""
    overrides = {}
    for token in shlex.split(line):
        if "=" in token:
            key, value = token.split("=", 1)
            overrides[key] = value
    return overrides


def check_dry_run(line, total_training_steps=None):
    """Named pass/fail flags for the settings the course's DRY_RUN must show."""
    o = parse_dry_run(line)
    tt = "actor_rollout_ref.actor.torchtitan."
    steps = o.get("trainer.total_training_steps")
    return {
        "model_engine": o.get("model_engine") == "torchtitan",
        "dp_shard": o.get(tt + "data_parallel_shard_size") == "2",
        "cp": o.get(tt + "context_parallel_size") == "1",
        "varlen": o.get(tt + "attn_type") == "varlen",
        "max_seq_len": o.get(tt + "max_seq_len") == "5120",
        "reshard": o.get(tt + "reshard_after_forward") == "always",
        "rollout_n": o.get("actor_rollout_ref.rollout.n") == "8",
        "total_steps": steps == (None if total_training_steps is None else str(total_training_steps)),
    }
'''
TPL_TRAINER = '''
def trainer_overrides(env):
    """Return {override key: value string} for save_freq, test_freq and (only if set) total_training_steps."""
    raise NotImplementedError("implement trainer_overrides")
'''
TPL_PARSE = '''
import shlex


def parse_dry_run(line):
    """Return {key: value} for every key=value override in the DRY_RUN line (values as strings)."""
    raise NotImplementedError("implement parse_dry_run")


def check_dry_run(line, total_training_steps=None):
    """Return the eight named flags described above (True = as the course requires)."""
    raise NotImplementedError("implement check_dry_run")
'''

ALWAYS_STEPS = SOL_TRAINER.replace('''    if env.get("TOTAL_TRAINING_STEPS"):
        out["trainer.total_training_steps"] = env["TOTAL_TRAINING_STEPS"]''', '''    out["trainer.total_training_steps"] = env.get("TOTAL_TRAINING_STEPS", "3")''')
NAIVE_SPLIT = SOL_PARSE.replace("for token in shlex.split(line):", "for token in line.split():")
SUFFIX_MATCH = SOL_PARSE.replace('''        "rollout_n": o.get("actor_rollout_ref.rollout.n") == "8",''', '''        "rollout_n": all(v == "8" for k, v in o.items() if k.endswith(".n")),''')
assert ALWAYS_STEPS != SOL_TRAINER and NAIVE_SPLIT != SOL_PARSE and SUFFIX_MATCH != SOL_PARSE

SHORT = q_line(["model_engine=torchtitan", TT + "attn_type=varlen", T + "logger=[console,tensorboard]",
                T + "experiment_name=tt wordle run", T + "total_training_steps=3"])


def spec() -> Exercise:
    exact = {"compare": "exact"}
    course = course_line()
    trainer_calls = [
        {"args": [{}], "public": True, "label": "no variables set"},
        {"args": [{"TOTAL_TRAINING_STEPS": "3", "SAVE_FREQ": "-1", "TEST_FREQ": "-1"}], "public": True,
         "label": "the chapter's 3-step run"},
        {"args": [{"SAVE_FREQ": "-1", "TEST_FREQ": "-1"}], "public": False},
        {"args": [{"TOTAL_TRAINING_STEPS": "", "TEST_FREQ": "10"}], "public": False},
        {"args": [{"TOTAL_TRAINING_STEPS": "20", "HCCL_CONNECT_TIMEOUT": "3600"}], "public": False},
        {"args": [{"TOTAL_TRAINING_STEPS": "3"}], "public": False},
    ]
    parse_calls = [{"args": [SHORT], "public": True, "label": "short line with quoted values"},
                   {"args": [course], "public": False}, {"args": [course_line("3", "-1", "-1")], "public": False},
                   {"args": [q_line(["a=1", "b=x=y", T + "experiment_name=it's mine", "c=$HOME"])], "public": False}]
    check_calls = [
        {"args": [course], "public": True, "label": "the course line, TOTAL_TRAINING_STEPS unset"},
        {"args": [course_line("3", "-1", "-1"), 3], "public": False},
        {"args": [course_line("3", "-1", "-1")], "public": False},
        {"args": [course, 3], "public": False},
        {"args": [course_line(edits={TT + "data_parallel_shard_size": "1", TT + "context_parallel_size": "2"})],
         "public": False},
        {"args": [course_line(edits={TT + "attn_type": "flex", RO + "n": "5"}, drop=("model_engine",))], "public": False},
        {"args": [course_line("3", edits={TT + "reshard_after_forward": "default", TT + "max_seq_len": "2048",
                                          RO + "val_kwargs.n": "8"}), 3], "public": False},
    ]
    checks = [
        Check("trainer_overrides", "trainer_overrides", "function", 2.5, "Overrides from SAVE_FREQ/TEST_FREQ/"
              "TOTAL_TRAINING_STEPS", "由环境变量得到的 trainer 覆盖项",
              "save_freq defaults to 25 and test_freq to 5; trainer.total_training_steps is added only when "
              "TOTAL_TRAINING_STEPS is set (and not empty), otherwise verl derives 75 steps from the data.",
              "save_freq 默认 25、test_freq 默认 5；只有设置了（且非空）TOTAL_TRAINING_STEPS 时才加入 trainer.total_training_steps，"
              "否则 verl 由数据推出 75 步。", calls=trainer_calls, options=exact),
        Check("parse_dry_run", "parse_dry_run", "function", 3, "Parse a printf %q line", "解析 printf %q 输出",
              "The line is shell-quoted by printf '%q ': undo the quoting the way a shell would (shlex.split) before "
              "splitting each token at its first '='.", "这一行经过 printf '%q ' 的 shell 转义：先像 shell 一样还原（shlex.split），"
              "再在每个 token 的第一个 '=' 处拆分。", calls=parse_calls, options=exact),
        Check("check_dry_run", "check_dry_run", "function", 4.5, "Check the DRY_RUN settings", "检查 DRY_RUN 配置",
              "Read each setting from its full key (e.g. actor_rollout_ref.rollout.n, not val_kwargs.n) and compare "
              "the exact value; total_steps holds only if trainer.total_training_steps appears exactly when expected.",
              "按完整键读取每个设置（例如 actor_rollout_ref.rollout.n，而不是 val_kwargs.n）并比较精确值；"
              "只有当 trainer.total_training_steps 恰好在应出现时出现，total_steps 才为 True。",
              calls=check_calls, options=exact),
    ]
    intro = [
        md("""
        # 第 7 章 · 练习：DRY_RUN 配置检查

        正式训练前，先用 `DRY_RUN=1` 运行脚本：它通过所有环境检查后，用 `printf '%q '` 打印完整的
        `python3 -m verl.trainer.main_ppo ...` 命令并退出。本练习检查这一行是否真的是课程要求的 TorchTitan 配置。
        注意：所有检查都在 DRY_RUN 分支**之前**执行，所以即使是 DRY_RUN 也需要 NPU 环境。
        """, """
        # Chapter 7 · Exercise: checking the DRY_RUN configuration

        Before training, run the script with `DRY_RUN=1`: after all its guards pass, it prints the full
        `python3 -m verl.trainer.main_ppo ...` command with `printf '%q '` and exits. Check that this line really is the
        course's TorchTitan configuration. Note that every guard runs **before** the DRY_RUN branch, so even a DRY_RUN
        needs the NPU environment.
        """),
        md("""
        ## 任务
        1. `trainer_overrides(env)`：`SAVE_FREQ`（默认 25）、`TEST_FREQ`（默认 5）；**只有**设置了 `TOTAL_TRAINING_STEPS` 时才加
           `trainer.total_training_steps`。本章的 3 步运行是 `TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1`。
        2. `parse_dry_run(line)`：返回 `{键: 值}`（字符串），键保留 `+` 前缀；先撤销 `%q` 转义。
        3. `check_dry_run(line, total_training_steps=None)`：返回 8 个布尔值：
           `model_engine`（= torchtitan）、`dp_shard`（actor `data_parallel_shard_size` = 2）、`cp`（`context_parallel_size` = 1）、
           `varlen`（`attn_type` = varlen）、`max_seq_len`（= 5120）、`reshard`（`reshard_after_forward` = always）、
           `rollout_n`（`actor_rollout_ref.rollout.n` = 8）、`total_steps`（`trainer.total_training_steps` 仅在给出
           `total_training_steps` 时出现且相等）。并行相关的键都在 `actor_rollout_ref.actor.torchtitan.` 下。
        下面的课程命令行按 COURSE 文档的键和值重建，不是脚本的逐字输出。
        """, """
        ## Tasks
        1. `trainer_overrides(env)`: `SAVE_FREQ` (default 25), `TEST_FREQ` (default 5), and `trainer.total_training_steps`
           **only** when `TOTAL_TRAINING_STEPS` is set. This chapter's 3-step run is
           `TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1`.
        2. `parse_dry_run(line)`: return `{key: value}` (strings), keys keep a `+` prefix; undo the `%q` quoting first.
        3. `check_dry_run(line, total_training_steps=None)`: return 8 booleans: `model_engine` (= torchtitan), `dp_shard`
           (actor `data_parallel_shard_size` = 2), `cp` (`context_parallel_size` = 1), `varlen` (`attn_type` = varlen),
           `max_seq_len` (= 5120), `reshard` (`reshard_after_forward` = always), `rollout_n`
           (`actor_rollout_ref.rollout.n` = 8), `total_steps` (`trainer.total_training_steps` appears only when
           `total_training_steps` is given, and equals it). The parallelism keys live under `actor_rollout_ref.actor.torchtitan.`.
        The course line below is rebuilt from the course's keys and values; it is not the script's verbatim output.
        """),
        code(f"COURSE_DRY_RUN = {course!r}\nSHORT_DRY_RUN = {SHORT!r}\nprint(COURSE_DRY_RUN[:400], '...')"),
    ]
    return Exercise(
        id="ch07.dry_run_config", title_en="Check the DRY_RUN configuration", title_zh="检查 DRY_RUN 配置",
        summary_en="trainer overrides from the environment and the printf %q command line of a DRY_RUN",
        summary_zh="由环境变量生成的 trainer 覆盖项与 DRY_RUN 的 printf %q 命令行",
        kernel_family="light",
        answers=[("trainer_overrides", "function"), ("parse_dry_run", "function"), ("check_dry_run", "function")],
        checks=checks, intro=intro,
        answer_cells={"trainer": (TPL_TRAINER, SOL_TRAINER), "parse": (TPL_PARSE, SOL_PARSE)},
        after=[md("## 自查（仅公开用例）", "## Self-check (public cases only)"), code(SELF_CHECK)],
        mistakes=[
            Mistake("steps_always_set", {"trainer": ALWAYS_STEPS}, {"trainer_overrides": "only when"}),
            Mistake("split_on_spaces", {"parse": NAIVE_SPLIT}, {"parse_dry_run": "shlex.split"}),
            Mistake("suffix_key_match", {"parse": SUFFIX_MATCH}, {"check_dry_run": "not val_kwargs.n"}),
        ],
    )


SELF_CHECK = '''
def _show(label, fn, want):
    try:
        got = fn()
    except NotImplementedError:
        return print("…", label, "- not implemented yet")
    except Exception as exc:
        return print("✗", label, "- raised", type(exc).__name__, exc)
    print("✓" if got == want else "✗", label, "" if got == want else f"- got {got!r}")


_show("no variables set", lambda: trainer_overrides({}), {"trainer.save_freq": "25", "trainer.test_freq": "5"})
_show("the chapter's 3-step run", lambda: trainer_overrides({"TOTAL_TRAINING_STEPS": "3", "SAVE_FREQ": "-1",
                                                             "TEST_FREQ": "-1"}),
      {"trainer.save_freq": "-1", "trainer.test_freq": "-1", "trainer.total_training_steps": "3"})
_show("short line", lambda: parse_dry_run(SHORT_DRY_RUN)["trainer.logger"], "[console,tensorboard]")
_show("short line, value with spaces", lambda: parse_dry_run(SHORT_DRY_RUN)["trainer.experiment_name"], "tt wordle run")
_show("course line (TOTAL_TRAINING_STEPS unset)", lambda: all(check_dry_run(COURSE_DRY_RUN).values()), True)
'''
