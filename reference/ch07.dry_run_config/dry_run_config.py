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
# # 第 7 章 · 练习：DRY_RUN 配置检查
#
# 正式训练前，先用 `DRY_RUN=1` 运行脚本：它通过所有环境检查后，用 `printf '%q '` 打印完整的
# `python3 -m verl.trainer.main_ppo ...` 命令并退出。本练习检查这一行是否真的是课程要求的 TorchTitan 配置。
# 注意：所有检查都在 DRY_RUN 分支**之前**执行，所以即使是 DRY_RUN 也需要 NPU 环境。
#
# ---
#
# # Chapter 7 · Exercise: checking the DRY_RUN configuration
#
# Before training, run the script with `DRY_RUN=1`: after all its guards pass, it prints the full
# `python3 -m verl.trainer.main_ppo ...` command with `printf '%q '` and exits. Check that this line really is the
# course's TorchTitan configuration. Note that every guard runs **before** the DRY_RUN branch, so even a DRY_RUN
# needs the NPU environment.

# %% [markdown]
# ## 任务
# 1. `trainer_overrides(env)`：`SAVE_FREQ`（默认 25）、`TEST_FREQ`（默认 5）；**只有**设置了 `TOTAL_TRAINING_STEPS` 时才加
#    `trainer.total_training_steps`。本章的 3 步运行是 `TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1`。
#    与脚本的 `${VAR:-默认值}` 一样，**空字符串等同于未设置**（`SAVE_FREQ=""` 取 25，`TOTAL_TRAINING_STEPS=""` 不加键）；值原样保留为字符串。
#    `env` 是环境变量的字典（变量名 → 字符串），其中任何一个都可能没有设置；其他变量不影响结果。
# 2. `parse_dry_run(line)`：返回 `{键: 值}`（字符串），键保留 `+` 前缀；先撤销 `%q` 转义，再在每个覆盖项的第一个 `=` 处拆分
#    （值里可以再有 `=`）；不含 `=` 的 token（`python3`、`-m`、模块名）不是覆盖项。
# 3. `check_dry_run(line, total_training_steps=None)`：返回 8 个布尔值：
#    `model_engine`（= torchtitan）、`dp_shard`（actor `data_parallel_shard_size` = 2）、`cp`（`context_parallel_size` = 1）、
#    `varlen`（`attn_type` = varlen）、`max_seq_len`（= 5120）、`reshard`（`reshard_after_forward` = always）、
#    `rollout_n`（`actor_rollout_ref.rollout.n` = 8）、`total_steps`（`trainer.total_training_steps` 仅在给出
#    `total_training_steps` 时出现且相等）。并行相关的键都在 `actor_rollout_ref.actor.torchtitan.` 下。
#    `total_training_steps` 是整数步数（本章的运行为 `3`）或 `None`，而命令行里的值都是字符串。
# 下面的课程命令行按 COURSE 文档的键和值重建，不是脚本的逐字输出。
#
# ---
#
# ## Tasks
# 1. `trainer_overrides(env)`: `SAVE_FREQ` (default 25), `TEST_FREQ` (default 5), and `trainer.total_training_steps`
#    **only** when `TOTAL_TRAINING_STEPS` is set. This chapter's 3-step run is
#    `TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1`. As with the script's `${VAR:-default}`, **an empty string counts
#    as unset** (`SAVE_FREQ=""` gives 25, `TOTAL_TRAINING_STEPS=""` adds no key); values stay strings as given.
#    `env` is a dict of environment variables (name → string), any of them may be missing; other variables
#    do not change the result.
# 2. `parse_dry_run(line)`: return `{key: value}` (strings), keys keep a `+` prefix; undo the `%q` quoting first, then
#    split each override at its first `=` (a value may hold more `=`); tokens without `=` (`python3`, `-m`, the
#    module) are not overrides.
# 3. `check_dry_run(line, total_training_steps=None)`: return 8 booleans: `model_engine` (= torchtitan), `dp_shard`
#    (actor `data_parallel_shard_size` = 2), `cp` (`context_parallel_size` = 1), `varlen` (`attn_type` = varlen),
#    `max_seq_len` (= 5120), `reshard` (`reshard_after_forward` = always), `rollout_n`
#    (`actor_rollout_ref.rollout.n` = 8), `total_steps` (`trainer.total_training_steps` appears only when
#    `total_training_steps` is given, and equals it). The parallelism keys live under `actor_rollout_ref.actor.torchtitan.`.
#    `total_training_steps` is the step count as an int (`3` for this chapter's run) or `None`, while every value in
#    the line is a string.
# The course line below is rebuilt from the course's keys and values; it is not the script's verbatim output.

# %%
COURSE_DRY_RUN = "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo algorithm.use_kl_in_reward=False algorithm.kl_ctrl.kl_coef=0 data.train_files=/root/wordle/data/wordle_train.parquet data.val_files=/root/wordle/data/wordle_test.parquet data.seed=42 data.return_raw_chat=True data.train_batch_size=128 data.max_prompt_length=1024 data.max_response_length=4096 data.filter_overlong_prompts=True data.truncation=error model_engine=torchtitan actor_rollout_ref.model.path=/root/models/Qwen3-1.7B-Wordle-SFT actor_rollout_ref.model.use_remove_padding=True actor_rollout_ref.model.enable_gradient_checkpointing=True actor_rollout_ref.actor.optim.lr=1e-6 actor_rollout_ref.actor.optim.decay_type=cosine actor_rollout_ref.actor.optim.min_lr_factor=0.1 actor_rollout_ref.actor.optim.lr_warmup_steps=5 actor_rollout_ref.actor.ppo_mini_batch_size=32 actor_rollout_ref.actor.use_dynamic_bsz=True actor_rollout_ref.actor.ppo_max_token_len_per_gpu=5120 actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.actor.kl_loss_coef=0.001 actor_rollout_ref.actor.kl_loss_type=low_var_kl actor_rollout_ref.actor.entropy_coeff=0.004 actor_rollout_ref.actor.use_torch_compile=False actor_rollout_ref.actor.torchtitan.param_offload=True actor_rollout_ref.actor.torchtitan.optimizer_offload=True actor_rollout_ref.actor.torchtitan.reshard_after_forward=always actor_rollout_ref.actor.torchtitan.forward_prefetch=False actor_rollout_ref.actor.torchtitan.use_torch_compile=False actor_rollout_ref.actor.torchtitan.data_parallel_replicate_size=1 actor_rollout_ref.actor.torchtitan.data_parallel_shard_size=2 actor_rollout_ref.actor.torchtitan.tensor_parallel_size=1 actor_rollout_ref.actor.torchtitan.expert_parallel_size=1 +actor_rollout_ref.actor.torchtitan.expert_tensor_parallel_size=1 actor_rollout_ref.actor.torchtitan.pipeline_parallel_size=1 actor_rollout_ref.actor.torchtitan.context_parallel_size=1 actor_rollout_ref.actor.torchtitan.attn_type=varlen actor_rollout_ref.actor.torchtitan.max_seq_len=5120 actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=20480 actor_rollout_ref.ref.torchtitan.param_offload=True actor_rollout_ref.ref.torchtitan.use_torch_compile=False actor_rollout_ref.ref.torchtitan.max_seq_len=5120 actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.mode=async actor_rollout_ref.rollout.tensor_model_parallel_size=2 actor_rollout_ref.rollout.data_parallel_size=1 actor_rollout_ref.rollout.expert_parallel_size=1 actor_rollout_ref.rollout.pipeline_model_parallel_size=1 actor_rollout_ref.rollout.enforce_eager=True actor_rollout_ref.rollout.max_model_len=5120 actor_rollout_ref.rollout.enable_chunked_prefill=False actor_rollout_ref.rollout.gpu_memory_utilization=0.70 actor_rollout_ref.rollout.n=8 actor_rollout_ref.rollout.multi_turn.max_user_turns=6 actor_rollout_ref.rollout.multi_turn.max_assistant_turns=6 actor_rollout_ref.rollout.multi_turn.format=hermes actor_rollout_ref.rollout.multi_turn.tokenization_sanity_check_mode=disable actor_rollout_ref.rollout.agent.num_workers=4 actor_rollout_ref.rollout.agent.default_agent_loop=wordle_agent actor_rollout_ref.rollout.agent.agent_loop_config_path=/root/wordle/torchtitan-npu/agent_loop.yaml actor_rollout_ref.rollout.val_kwargs.temperature=0.7 actor_rollout_ref.rollout.val_kwargs.n=5 actor_rollout_ref.rollout.val_kwargs.do_sample=True custom_reward_function.path=/root/wordle/torchtitan-npu/wordle_reward.py custom_reward_function.name=compute_score trainer.use_legacy_worker_impl=disable trainer.logger=\\[\\'console\\'\\,\\'tensorboard\\'\\] trainer.project_name=wordle_rl trainer.experiment_name=qwen3_1.7b_wordle_torchtitan_npu trainer.n_gpus_per_node=2 trainer.nnodes=1 trainer.val_before_train=True trainer.log_val_generations=5 trainer.resume_mode=disable trainer.total_epochs=5 trainer.device=npu trainer.save_freq=25 trainer.test_freq=5 "
SHORT_DRY_RUN = "python3 -m verl.trainer.main_ppo model_engine=torchtitan actor_rollout_ref.actor.torchtitan.attn_type=varlen trainer.logger=\\[\\'console\\'\\,\\'tensorboard\\'\\] trainer.experiment_name=tt\\ wordle\\ run trainer.total_training_steps=3 "
print(COURSE_DRY_RUN[:400], '...')

# %%
def trainer_overrides(env):
    ### BEGIN SOLUTION
    """trainer.* overrides the run script derives from its environment variables."""
    out = {"trainer.save_freq": env.get("SAVE_FREQ") or "25", "trainer.test_freq": env.get("TEST_FREQ") or "5"}
    if env.get("TOTAL_TRAINING_STEPS"):
        out["trainer.total_training_steps"] = env["TOTAL_TRAINING_STEPS"]
    return out
    ### STUB
    # """Return {override key: value string} for save_freq, test_freq and (only if set) total_training_steps."""
    # raise NotImplementedError("implement trainer_overrides")
    ### END SOLUTION

# %%
import shlex


def parse_dry_run(line):
    ### BEGIN SOLUTION
    """{key: value} of every Hydra override in a DRY_RUN line, after undoing bash's %q quoting."""
    overrides = {}
    for token in shlex.split(line):
        if "=" in token:
            key, value = token.split("=", 1)
            overrides[key] = value
    return overrides
    ### STUB
    # """Return {key: value} for every key=value override in the DRY_RUN line (values as strings)."""
    # raise NotImplementedError("implement parse_dry_run")
    ### END SOLUTION


def check_dry_run(line, total_training_steps=None):
    ### BEGIN SOLUTION
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
    ### STUB
    # """Return the eight named flags described above (True = as the course requires)."""
    # raise NotImplementedError("implement check_dry_run")
    ### END SOLUTION

# %% [markdown]
# ## 自查（仅公开用例）
#
# ---
#
# ## Self-check (public cases only)

# %% tags=["self-check"]
from exercises.lab.selfcheck import show as _show

_show("no variables set", lambda: trainer_overrides({}), {"trainer.save_freq": "25", "trainer.test_freq": "5"})
_show("the chapter's 3-step run", lambda: trainer_overrides({"TOTAL_TRAINING_STEPS": "3", "SAVE_FREQ": "-1",
                                                             "TEST_FREQ": "-1"}),
      {"trainer.save_freq": "-1", "trainer.test_freq": "-1", "trainer.total_training_steps": "3"})
_show("short line", lambda: parse_dry_run(SHORT_DRY_RUN)["trainer.logger"], "['console','tensorboard']")
_show("short line, value with spaces", lambda: parse_dry_run(SHORT_DRY_RUN)["trainer.experiment_name"], "tt wordle run")
_show("course line (TOTAL_TRAINING_STEPS unset)", lambda: all(check_dry_run(COURSE_DRY_RUN).values()), True)
_show("short line, 3 steps", lambda: check_dry_run(SHORT_DRY_RUN, 3),
      {"model_engine": True, "dp_shard": False, "cp": False, "varlen": True, "max_seq_len": False, "reshard": False,
       "rollout_n": False, "total_steps": True})

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (the bulky per-check data is in cases.json next to this file), and typical mistakes as
# patches of the solution with the score and the check each must fail.
MISTAKES = [{'name': 'split_on_spaces',
  'score': 7.0,
  'fails': {'parse_dry_run': 'shlex.split'},
  'patch': [{'find': '    for token in shlex.split(line):', 'replace': '    for token in line.split():'}]},
 {'name': 'steps_always_set',
  'score': 8.5714,
  'fails': {'trainer_overrides': 'only when'},
  'patch': [{'find': '    if env.get("TOTAL_TRAINING_STEPS"):\n'
                     '        out["trainer.total_training_steps"] = env["TOTAL_TRAINING_STEPS"]',
             'replace': '    out["trainer.total_training_steps"] = env.get("TOTAL_TRAINING_STEPS", "3")'}]},
 {'name': 'suffix_key_match',
  'score': 6.625,
  'fails': {'check_dry_run': 'not val_kwargs.n'},
  'patch': [{'find': '        "rollout_n": o.get("actor_rollout_ref.rollout.n") == "8",',
             'replace': '        "rollout_n": all(v == "8" for k, v in o.items() if k.endswith(".n")),'}]},
 {'name': 'empty_steps_kept',
  'score': 9.6429,
  'fails': {'trainer_overrides': 'counts as unset'},
  'patch': [{'find': '    if env.get("TOTAL_TRAINING_STEPS"):',
             'replace': '    if "TOTAL_TRAINING_STEPS" in env:'}]},
 {'name': 'steps_compared_raw',
  'score': 8.3125,
  'fails': {'check_dry_run': 'short line, 3 steps'},
  'patch': [{'find': '        "total_steps": steps == (None if total_training_steps is None else '
                     'str(total_training_steps)),',
             'replace': '        "total_steps": steps == total_training_steps,'}]}]

RULES = {'trainer_overrides': [{'id': 'defaults',
                        'stated': '`SAVE_FREQ` (default 25), `TEST_FREQ` (default 5)',
                        'types': 'any of them may be missing',
                        'hint': {'en': 'An unset SAVE_FREQ gives trainer.save_freq 25 and an unset TEST_FREQ '
                                       'gives trainer.test_freq 5; other variables add no key.',
                                 'zh': '未设置 SAVE_FREQ 时 trainer.save_freq 为 25，未设置 TEST_FREQ 时 '
                                       'trainer.test_freq 为 5；其他变量不加键。'}},
                       {'id': 'only_when_set',
                        'stated': 'only** when `TOTAL_TRAINING_STEPS` is set',
                        'types': 'any of them may be missing',
                        'hint': {'en': 'trainer.total_training_steps is in the result only when '
                                       'TOTAL_TRAINING_STEPS is set; otherwise the key is absent.',
                                 'zh': '只有设置了 TOTAL_TRAINING_STEPS 时结果里才有 '
                                       'trainer.total_training_steps；否则没有这个键。'}},
                       {'id': 'empty_unset',
                        'stated': 'an empty string counts as unset',
                        'types': 'any of them may be missing',
                        'hint': {'en': 'As with ${VAR:-default}, a variable set to the empty string counts '
                                       'as unset.',
                                 'zh': '与 ${VAR:-默认值} 一样，设为空字符串的变量等同于未设置。'}},
                       {'id': 'strings',
                        'stated': 'values stay strings as given',
                        'types': 'any of them may be missing',
                        'hint': {'en': 'A value that is set is kept exactly as the string given ("-1" stays '
                                       '"-1").',
                                 'zh': '已设置的值原样保留为给定的字符串（"-1" 仍是 "-1"）。'}}],
 'parse_dry_run': [{'id': 'undo_quoting',
                    'stated': 'undo the `%q` quoting first',
                    'hint': {'en': "printf '%q ' escaped spaces, quotes, brackets and $: undo the quoting "
                                   'the way a shell would (shlex.split) before splitting the tokens.',
                             'zh': "printf '%q ' 转义了空格、引号、括号和 $：先像 shell 一样还原（shlex.split），再拆分 token。"}},
                   {'id': 'plus_prefix',
                    'stated': 'keys keep a `+` prefix',
                    'hint': {'en': 'A key written with a leading + keeps it (+actor_rollout_ref...).',
                             'zh': '以 + 开头的键保留 +（+actor_rollout_ref...）。'}},
                   {'id': 'first_equals',
                    'stated': 'split each override at its first `=`',
                    'hint': {'en': "Split each override at its first '=': everything after it, more '=' "
                                   'included, is the value.',
                             'zh': "在每个覆盖项的第一个 '=' 处拆分：其后的全部内容（包括其他 '='）都是值。"}},
                   {'id': 'overrides_only',
                    'stated': 'tokens without `=`',
                    'hint': {'en': 'Only key=value tokens are overrides; python3, -m and the module name are '
                                   'not in the result.',
                             'zh': '只有 key=value 形式的 token 是覆盖项；python3、-m 与模块名不在结果中。'}}],
 'check_dry_run': [{'id': 'model_engine',
                    'stated': '`model_engine` (= torchtitan)',
                    'hint': {'en': 'model_engine holds only when the line sets model_engine=torchtitan.',
                             'zh': '只有命令行设置了 model_engine=torchtitan 时 model_engine 才为 True。'}},
                   {'id': 'dp_shard',
                    'stated': '(actor `data_parallel_shard_size` = 2)',
                    'hint': {'en': 'dp_shard reads '
                                   'actor_rollout_ref.actor.torchtitan.data_parallel_shard_size and needs '
                                   'exactly 2.',
                             'zh': 'dp_shard 读取 '
                                   'actor_rollout_ref.actor.torchtitan.data_parallel_shard_size，必须正好为 2。'}},
                   {'id': 'cp',
                    'stated': '`cp` (`context_parallel_size` = 1)',
                    'hint': {'en': 'cp reads actor_rollout_ref.actor.torchtitan.context_parallel_size and '
                                   'needs exactly 1.',
                             'zh': 'cp 读取 actor_rollout_ref.actor.torchtitan.context_parallel_size，必须正好为 '
                                   '1。'}},
                   {'id': 'varlen',
                    'stated': '`varlen` (`attn_type` = varlen)',
                    'hint': {'en': "varlen holds only when the actor's torchtitan attn_type is varlen.",
                             'zh': '只有 actor 的 torchtitan attn_type 为 varlen 时 varlen 才为 True。'}},
                   {'id': 'max_seq_len',
                    'stated': '`max_seq_len` (= 5120)',
                    'hint': {'en': "max_seq_len reads the actor's torchtitan max_seq_len and needs 5120.",
                             'zh': 'max_seq_len 读取 actor 的 torchtitan max_seq_len，必须为 5120。'}},
                   {'id': 'reshard',
                    'stated': '`reshard` (`reshard_after_forward` = always)',
                    'hint': {'en': "reshard needs the actor's torchtitan reshard_after_forward to be always.",
                             'zh': 'reshard 要求 actor 的 torchtitan reshard_after_forward 为 always。'}},
                   {'id': 'rollout_n',
                    'stated': '(`actor_rollout_ref.rollout.n` = 8)',
                    'hint': {'en': 'rollout_n reads actor_rollout_ref.rollout.n itself and needs 8.',
                             'zh': 'rollout_n 读取 actor_rollout_ref.rollout.n 本身，必须为 8。'}},
                   {'id': 'full_keys',
                    'stated': 'The parallelism keys live under `actor_rollout_ref.actor.torchtitan.`',
                    'hint': {'en': 'Read each setting from its full key (actor_rollout_ref.rollout.n, not '
                                   "val_kwargs.n; the actor's keys, not the ref's); a setting that is "
                                   'missing does not hold.',
                             'zh': '按完整的键读取每项设置（actor_rollout_ref.rollout.n，而不是 val_kwargs.n；actor 的键而不是 ref '
                                   '的）；缺少的设置不成立。'}},
                   {'id': 'total_steps',
                    'stated': 'appears only when `total_training_steps` is given, and equals it',
                    'types': 'is the step count as an int',
                    'hint': {'en': 'total_steps holds when trainer.total_training_steps is absent and none '
                                   "was given, or present and equal to the int given (the line's value is a "
                                   'string).',
                             'zh': 'total_steps 成立的条件：未给出步数且命令行没有 '
                                   'trainer.total_training_steps，或者命令行有它且等于给出的整数（命令行里的值是字符串）。'}}]}
