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
# # 第 8 章 · 练习：切换的六步总结
#
# 把训练后端从 FSDP 换成 TorchTitan-NPU，可以总结为六步：
#
# | 步骤 | 名称 | 内容 |
# |---|---|---|
# | 1 | `keep` | 模型、GRPO、vLLM rollout、agent loop、奖励和数据**保持不变** |
# | 2 | `backend` | Actor/Ref 的训练后端换成 TorchTitan：`model_engine=torchtitan`（新 worker：`trainer.use_legacy_worker_impl=disable`） |
# | 3 | `mapping` | 配置映射：`fsdp_config.*` → `actor.torchtitan.*` / `ref.torchtitan.*`，优化器键改名 |
# | 4 | `call_chain` | 调用链与权重同步：`get_per_tensor_param()`、`StateDictAdapter`、`update_weights()`——这是代码，不是配置项 |
# | 5 | `npu_features` | NPU 特性：FSDP2 两卡切分、并行度、TND varlen、offload、`reshard_after_forward` |
# | 6 | `validation` | 用 DRY_RUN 和 3 步训练验证：`TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1` |
#
# 本练习用实验室记录下来的产物检验这份总结：`recorded/` 里的两行 DRY_RUN 命令（实验室的 `exercises.lab.recipe`
# 在 `DRY_RUN=1` 时打印的 `printf '%q '` 行：默认设置与 3 步运行）和实验室一次 3 步训练写下的 `run.json`
# （CPU 上的小模型，`python -m exercises.lab.train --profile cpu-tiny --steps 3 --save-freq -1 --test-freq -1`）。
#
# ---
#
# # Chapter 8 · Exercise: the six-step summary of the switch
#
# Switching the training backend from FSDP to TorchTitan-NPU comes down to six steps:
#
# | step | name | what |
# |---|---|---|
# | 1 | `keep` | the model, GRPO, vLLM rollout, the agent loop, the reward and the data **stay the same** |
# | 2 | `backend` | the Actor/Ref training backend becomes TorchTitan: `model_engine=torchtitan` (new workers: `trainer.use_legacy_worker_impl=disable`) |
# | 3 | `mapping` | the configuration mapping: `fsdp_config.*` → `actor.torchtitan.*` / `ref.torchtitan.*`, renamed optimizer keys |
# | 4 | `call_chain` | the call chain and weight sync: `get_per_tensor_param()`, `StateDictAdapter`, `update_weights()`: code, not settings |
# | 5 | `npu_features` | the NPU features: two-card FSDP2 sharding, parallel degrees, TND varlen, offload, `reshard_after_forward` |
# | 6 | `validation` | validate with DRY_RUN and the 3-step run: `TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1` |
#
# This exercise checks the summary against what the lab recorded: the two DRY_RUN lines in `recorded/` (the
# `printf '%q '` line the lab's `exercises.lab.recipe` prints under `DRY_RUN=1`: default settings and the 3-step run)
# and the `run.json` of a 3-step lab run (a tiny model on CPU,
# `python -m exercises.lab.train --profile cpu-tiny --steps 3 --save-freq -1 --test-freq -1`).

# %% [markdown]
# ## 任务 1：`step_of(key)` → 一个 Hydra 覆盖项的键属于哪一步（步骤名）
#
# 按顺序判断，先命中的规则决定结果；判断前**去掉键开头的 `+`**（Hydra 的追加前缀）：
# 1. `model_engine`、`trainer.use_legacy_worker_impl` → `backend`
# 2. `trainer.total_training_steps`、`trainer.save_freq`、`trainer.test_freq` → `validation`（其它 `trainer.*` 键属于 `keep`）
# 3. 以 `actor_rollout_ref.actor.torchtitan.` 或 `actor_rollout_ref.ref.torchtitan.` 开头、且最后一段在 `NPU_FEATURES` 中 → `npu_features`
# 4. 其它含 `.torchtitan.` 或 `.fsdp_config.` 的键（FSDP 一侧的键也算），以及 `MAPPED_OPTIM` 中的优化器键 → `mapping`
# 5. 其余所有键 → `keep`
#
# 没有键属于 `call_chain`：第 4 步改的是代码路径，不是配置。
#
# ## 任务 2：`what_changed(before, after)` → `{步骤名: 排好序的键列表}`
#
# `before`、`after` 是两行 DRY_RUN 命令。先像 shell 一样撤销 `%q` 转义（`shlex.split`），取每个含 `=` 的词在第一个 `=`
# 处拆成键和值（键保留 `+`）。一个键**值不同，或只出现在一边**，就算改变了；按 `step_of` 分到各步，每步的键按字母序排列，
# **没有改变的步骤不出现**在结果里（两行相同 → `{}`）。
#
# ## 任务 3：`run_confirms(run_text)` → 五个布尔值
#
# `run_text` 是一个 `run.json` 的文本：
# - `backend`：`model_engine` 为 `torchtitan`
# - `fsdp2`：`strategy` 为 `fsdp2`，且 `parallel` 中 `data_parallel_shard_size` 为 2、`context_parallel_size` 为 1
# - `varlen`：`attention` 以 `varlen` 开头（CPU 上的实验室运行用 sdpa，所以它**无法**证实 TND）
# - `three_step_run`：`total_training_steps` 为 3，且 `config` 中 `save_freq` 与 `test_freq` 都是 -1
# - `finished`：`status` 为 `finished`（中途停下的运行留下 `running`）
#
# ---
#
# ## Task 1: `step_of(key)` → the step (its name) a Hydra override key belongs to
#
# Decide in this order; the first rule that applies wins. **Drop a leading `+`** (Hydra's append prefix) first:
# 1. `model_engine`, `trainer.use_legacy_worker_impl` → `backend`
# 2. `trainer.total_training_steps`, `trainer.save_freq`, `trainer.test_freq` → `validation` (other `trainer.*` keys are `keep`)
# 3. a key under `actor_rollout_ref.actor.torchtitan.` or `actor_rollout_ref.ref.torchtitan.` whose last part is in `NPU_FEATURES` → `npu_features`
# 4. any other key holding `.torchtitan.` or `.fsdp_config.` (FSDP-side keys too), and the optimizer keys in `MAPPED_OPTIM` → `mapping`
# 5. every other key → `keep`
#
# No key belongs to `call_chain`: step 4 changes the code path, not the settings.
#
# ## Task 2: `what_changed(before, after)` → `{step name: sorted list of keys}`
#
# `before` and `after` are two DRY_RUN lines. Undo the `%q` quoting the way a shell would (`shlex.split`) and split
# every word holding `=` at its first `=` into key and value (keys keep their `+`). A key **whose value differs, or
# that only one side has**, changed; group the changed keys by `step_of`, each step's keys in alphabetical order;
# **steps with no change are left out** (two equal lines → `{}`).
#
# ## Task 3: `run_confirms(run_text)` → five booleans
#
# `run_text` is the text of a `run.json`:
# - `backend`: `model_engine` is `torchtitan`
# - `fsdp2`: `strategy` is `fsdp2`, and in `parallel`, `data_parallel_shard_size` is 2 and `context_parallel_size` is 1
# - `varlen`: `attention` starts with `varlen` (the lab's CPU run uses sdpa, so it **cannot** confirm TND)
# - `three_step_run`: `total_training_steps` is 3, and in `config` both `save_freq` and `test_freq` are -1
# - `finished`: `status` is `finished` (a run that stopped part-way leaves `running`)

# %%
from pathlib import Path

import exercises

RECORDED = Path(exercises.__file__).parent / "ch08" / "switch_summary" / "recorded"
DRY_RUN = (RECORDED / "dry_run.txt").read_text(encoding="utf-8").strip("\n")
DRY_RUN_THREE_STEPS = (RECORDED / "dry_run_three_steps.txt").read_text(encoding="utf-8").strip("\n")
RUN_JSON = (RECORDED / "run.json").read_text(encoding="utf-8")
STEPS = ("keep", "backend", "mapping", "call_chain", "npu_features", "validation")
NPU_FEATURES = {"data_parallel_shard_size", "data_parallel_replicate_size", "context_parallel_size",
                "tensor_parallel_size", "pipeline_parallel_size", "expert_parallel_size", "expert_tensor_parallel_size",
                "attn_type", "reshard_after_forward", "param_offload", "optimizer_offload"}
MAPPED_OPTIM = {"actor_rollout_ref.actor.optim.decay_type", "actor_rollout_ref.actor.optim.min_lr_factor",
                "actor_rollout_ref.actor.optim.lr_warmup_steps", "actor_rollout_ref.actor.optim.lr_scheduler_type",
                "actor_rollout_ref.actor.optim.min_lr_ratio", "actor_rollout_ref.actor.optim.lr_warmup_steps_ratio"}
print(DRY_RUN[:200], "...")

# %%
def step_of(key):
    ### BEGIN SOLUTION
    """The summary step a Hydra override key belongs to."""
    key = key.removeprefix("+")
    if key in ("model_engine", "trainer.use_legacy_worker_impl"):
        return "backend"
    if key in ("trainer.total_training_steps", "trainer.save_freq", "trainer.test_freq"):
        return "validation"
    engine = key.startswith(("actor_rollout_ref.actor.torchtitan.", "actor_rollout_ref.ref.torchtitan."))
    if engine and key.rsplit(".", 1)[1] in NPU_FEATURES:
        return "npu_features"
    if ".torchtitan." in key or ".fsdp_config." in key or key in MAPPED_OPTIM:
        return "mapping"
    return "keep"
    ### STUB
    # """Return one of STEPS for this override key, following the five rules above."""
    # raise NotImplementedError("implement step_of")
    ### END SOLUTION

# %%
import shlex


def what_changed(before, after):
    ### BEGIN SOLUTION
    """{step: sorted keys} of the overrides that differ between two DRY_RUN lines."""
    def overrides(line):
        return dict(word.split("=", 1) for word in shlex.split(line) if "=" in word)

    old, new = overrides(before), overrides(after)
    changed = {}
    for key in sorted(old.keys() | new.keys()):
        if old.get(key) != new.get(key):
            changed.setdefault(step_of(key), []).append(key)
    return changed
    ### STUB
    # """Return {step name: sorted changed keys}, leaving out steps where nothing changed."""
    # raise NotImplementedError("implement what_changed")
    ### END SOLUTION

# %%
import json


def run_confirms(run_text):
    ### BEGIN SOLUTION
    """What a run.json shows of the switch and of the 3-step validation run."""
    run = json.loads(run_text)
    parallel, config = run["parallel"], run["config"]
    return {
        "backend": run["model_engine"] == "torchtitan",
        "fsdp2": run["strategy"] == "fsdp2" and parallel["data_parallel_shard_size"] == 2
        and parallel["context_parallel_size"] == 1,
        "varlen": run["attention"].startswith("varlen"),
        "three_step_run": run["total_training_steps"] == 3 and config["save_freq"] == -1 and config["test_freq"] == -1,
        "finished": run["status"] == "finished",
    }
    ### STUB
    # """Return {"backend": ..., "fsdp2": ..., "varlen": ..., "three_step_run": ..., "finished": ...} (booleans)."""
    # raise NotImplementedError("implement run_confirms")
    ### END SOLUTION

# %% [markdown]
# ## 自查（仅公开用例）
#
# ---
#
# ## Self-check (public cases only)

# %% tags=["self-check"]
from exercises.lab.selfcheck import show

show("step_of('model_engine')", lambda: step_of("model_engine"), "backend")
show("step_of('actor_rollout_ref.rollout.n')", lambda: step_of("actor_rollout_ref.rollout.n"), "keep")
show("step_of('actor_rollout_ref.actor.torchtitan.attn_type')",
     lambda: step_of("actor_rollout_ref.actor.torchtitan.attn_type"), "npu_features")
show("step_of('actor_rollout_ref.actor.optim.decay_type')",
     lambda: step_of("actor_rollout_ref.actor.optim.decay_type"), "mapping")
show("the same line twice", lambda: what_changed(DRY_RUN, DRY_RUN), {})
show("default line -> 3-step line", lambda: what_changed(DRY_RUN, DRY_RUN_THREE_STEPS),
     {"validation": ["trainer.save_freq", "trainer.test_freq", "trainer.total_training_steps"]})
show("the recorded 3-step run.json", lambda: run_confirms(RUN_JSON),
     {"backend": True, "fsdp2": True, "varlen": False, "three_step_run": True, "finished": True})

# %% tags=["grader"]
# Grader only: never in the template or the solution. The checks' calls (public and hidden: real DRY_RUN lines and
# run.json texts) are in cases.json next to this file; typical mistakes are patches of the solution.
MISTAKES = [
    {"name": "plus_prefix_kept", "score": 9.662, "fails": {"step_of": "dropping a leading '+'"},
     "patch": [{"find": '    key = key.removeprefix("+")\n', "replace": ""}]},
    {"name": "trainer_all_validation", "score": 8.4338, "fails": {"step_of": "other trainer.* keys are keep",
                                                                "what_changed": "group the keys by step_of"},
     "patch": [{"find": 'if key in ("trainer.total_training_steps", "trainer.save_freq", "trainer.test_freq"):',
                "replace": 'if key.startswith("trainer."):'}]},
    {"name": "changed_only", "score": 8.9286, "fails": {"what_changed": "only one side has it"},
     "patch": [{"find": "for key in sorted(old.keys() | new.keys()):", "replace": "for key in sorted(old.keys() & new.keys()):"}]},
    {"name": "freq_ignored", "score": 9.3333, "fails": {"run_confirms": "both save_freq and test_freq at -1"},
     "patch": [{"find": '"three_step_run": run["total_training_steps"] == 3 and config["save_freq"] == -1 and config["test_freq"] == -1,',
                "replace": '"three_step_run": run["total_training_steps"] == 3,'}]},
]

RULES = {
    "step_of": [
        {"id": "backend_keys", "stated": "trainer.use_legacy_worker_impl",
         "hint": {"en": "model_engine and trainer.use_legacy_worker_impl are the backend switch.",
                  "zh": "model_engine 与 trainer.use_legacy_worker_impl 属于后端切换。"}},
        {"id": "validation_keys", "stated": "other `trainer.*` keys are `keep`",
         "hint": {"en": "Only the three run-length keys are validation; other trainer.* keys are keep.",
                  "zh": "只有三个运行长度相关的键属于 validation；其它 trainer.* 键属于 keep。"}},
        {"id": "npu_feature_keys", "stated": "whose last part is in `NPU_FEATURES`",
         "hint": {"en": "An actor or ref torchtitan key whose last part is an NPU feature is npu_features.",
                  "zh": "actor 或 ref 的 torchtitan 键，最后一段是 NPU 特性时属于 npu_features。"}},
        {"id": "plus_prefix", "stated": "Drop a leading `+`",
         "hint": {"en": "Classify a key after dropping a leading '+' (Hydra's append prefix).",
                  "zh": "先去掉开头的 '+'（Hydra 追加前缀）再分类。"}},
        {"id": "mapping_keys", "stated": "FSDP-side keys too",
         "hint": {"en": "Other .torchtitan. and .fsdp_config. keys, and the optimizer keys in MAPPED_OPTIM, are mapping.",
                  "zh": "其它 .torchtitan. 与 .fsdp_config. 键，以及 MAPPED_OPTIM 中的优化器键，属于 mapping。"}},
        {"id": "keep_rest", "stated": "every other key",
         "hint": {"en": "Every key no earlier rule claims stays the same: keep.",
                  "zh": "前面规则都不适用的键保持不变：keep。"}},
    ],
    "what_changed": [
        {"id": "one_side_counts", "stated": "whose value differs, or that only one side has",
         "hint": {"en": "A key counts as changed when its value differs or only one side has it.",
                  "zh": "值不同或只在一边出现的键都算改变。"}},
        {"id": "group_by_step", "stated": "group the changed keys by `step_of`",
         "hint": {"en": "Changed keys: group the keys by step_of, so each lands in the step its rules name.",
                  "zh": "按 step_of 分组，每个键归入它的规则所指的步骤。"}},
        {"id": "sorted_keys", "stated": "each step's keys in alphabetical order",
         "hint": {"en": "List each step's keys in alphabetical order.",
                  "zh": "每个步骤的键按字母序排列。"}},
        {"id": "unchanged_left_out", "stated": "steps with no change are left out",
         "hint": {"en": "Leave out the steps where nothing changed.",
                  "zh": "没有改变的步骤不出现在结果里。"}},
        {"id": "first_equals", "stated": "at its first `=`",
         "hint": {"en": "Split each word at its first '=' only: a value may hold '=' itself.",
                  "zh": "每个词只在第一个 '=' 处拆开：值里也可能有 '='。"}},
        {"id": "shell_quoting", "stated": "Undo the `%q` quoting the way a shell would",
         "hint": {"en": "Undo the %q quoting the way a shell would before comparing values.",
                  "zh": "比较值之前像 shell 一样撤销 %q 转义。"}},
    ],
    "run_confirms": [
        {"id": "backend_flag", "stated": "`model_engine` is `torchtitan`",
         "hint": {"en": "backend reads model_engine.", "zh": "backend 看 model_engine。"}},
        {"id": "fsdp2_shard", "stated": "`context_parallel_size` is 1",
         "hint": {"en": "fsdp2 needs the strategy and, in parallel, shard 2 with cp 1.",
                  "zh": "fsdp2 需要 strategy，以及 parallel 中 shard 为 2、cp 为 1。"}},
        {"id": "varlen_attention", "stated": "`attention` starts with `varlen`",
         "hint": {"en": "varlen reads the start of the attention entry.", "zh": "varlen 看 attention 的开头。"}},
        {"id": "three_steps_and_freqs", "stated": "both `save_freq` and `test_freq` are -1",
         "hint": {"en": "The 3-step run needs total_training_steps 3 and both save_freq and test_freq at -1.",
                  "zh": "3 步运行需要 total_training_steps 为 3，且 save_freq 与 test_freq 都是 -1。"}},
        {"id": "finished_status", "stated": "a run that stopped part-way leaves `running`",
         "hint": {"en": "finished reads the status; a run that stopped part-way says running.",
                  "zh": "finished 看 status；中途停下的运行是 running。"}},
    ],
}
