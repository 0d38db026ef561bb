# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · 从 FSDP 覆盖项到 TorchTitan 覆盖项
#
# 切换训练后端时，GRPO、vLLM rollout、六轮 agent loop、Wordle 奖励和数据都**不变**；变的是 Actor 与 Reference 的训练引擎。
# verl 通过 Hydra 默认组 `model_engine` 选择引擎：默认 `dp`（FSDP），设为 `torchtitan` 后加载 `actor/torchtitan_actor.yaml`
# 与 `ref/torchtitan_ref.yaml`，它们把 `engine/torchtitan.yaml` 挂在 `.torchtitan`、把 `optim/torchtitan.yaml` 挂在 `.optim`。
# 因此 `actor_rollout_ref.actor.fsdp_config.*` 在新配置里**不存在**，必须逐项翻译。
#
# | FSDP | TorchTitan |
# |---|---|
# | `actor.fsdp_config.param_offload` / `optimizer_offload` / `forward_prefetch` | `actor.torchtitan.` 同名键 |
# | `fsdp_config.reshard_after_forward`（bool） | `torchtitan.reshard_after_forward` ∈ {default, always, never}：True→`always`，False→`never` |
# | `actor.fsdp_config.fsdp_size=-1` | `data_parallel_shard_size` = n_gpus ÷ cp，`data_parallel_replicate_size` = 1 |
# | `actor.fsdp_config.fsdp_size=k`（k>0，HSDP） | shard = k，replicate = n_gpus ÷ (k·cp) |
# | `actor.fsdp_config.ulysses_sequence_parallel_size` | `actor.torchtitan.context_parallel_size` |
# | `model.use_remove_padding=True` | 保留，并加 `actor.torchtitan.attn_type=varlen`（yaml 默认 `flex`） |
# | `actor.use_torch_compile` | 保留，并加 `{actor,ref}.torchtitan.use_torch_compile` 同值 |
# | `actor.optim.lr_scheduler_type` | `actor.optim.decay_type` |
# | `actor.optim.min_lr_ratio` | `actor.optim.min_lr_factor` |
# | `actor.optim.lr_warmup_steps_ratio=r` | `actor.optim.lr_warmup_steps=int(r·total_steps)`（引擎在 steps≤0 时正是这样换算的） |
# | `ref.fsdp_config.param_offload` | `ref.torchtitan.param_offload` |
# | `data.max_prompt_length` + `data.max_response_length` | 两者都保留，并加 `{actor,ref}.torchtitan.max_seq_len` = 两者之和（RoPE 缓存长度） |
# | 其它 `fsdp_config.*`（如 `wrap_policy`） | 丢弃：torchtitan 的 yaml 没有 `fsdp_config` 组 |
# | 其它键 | 原样保留 |
#
# **Hydra 的 `+` 前缀**：覆盖 yaml 中不存在的键必须写 `+key=value`，否则 Hydra 报错。`expert_tensor_parallel_size`
# 在引擎的 dataclass 里有，但 `engine/torchtitan.yaml` 里没有。
#
# ---
#
# # 05 · From FSDP overrides to TorchTitan overrides
#
# Switching the training backend keeps GRPO, vLLM rollout, the six-turn agent loop, the Wordle reward and the data
# **unchanged**; only the Actor/Reference training engine changes. verl picks the engine with the Hydra defaults group
# `model_engine` (default `dp`, i.e. FSDP). `model_engine=torchtitan` loads `actor/torchtitan_actor.yaml` and
# `ref/torchtitan_ref.yaml`, which mount `engine/torchtitan.yaml` at `.torchtitan` and `optim/torchtitan.yaml` at `.optim`.
# So `actor_rollout_ref.actor.fsdp_config.*` **does not exist** any more: every key must be translated.
#
# | FSDP | TorchTitan |
# |---|---|
# | `actor.fsdp_config.param_offload` / `optimizer_offload` / `forward_prefetch` | same name under `actor.torchtitan.` |
# | `fsdp_config.reshard_after_forward` (bool) | `torchtitan.reshard_after_forward` in {default, always, never}: True→`always`, False→`never` |
# | `actor.fsdp_config.fsdp_size=-1` | `data_parallel_shard_size` = n_gpus ÷ cp, `data_parallel_replicate_size` = 1 |
# | `actor.fsdp_config.fsdp_size=k` (k>0, HSDP) | shard = k, replicate = n_gpus ÷ (k·cp) |
# | `actor.fsdp_config.ulysses_sequence_parallel_size` | `actor.torchtitan.context_parallel_size` |
# | `model.use_remove_padding=True` | kept, plus `actor.torchtitan.attn_type=varlen` (yaml default `flex`) |
# | `actor.use_torch_compile` | kept, plus `{actor,ref}.torchtitan.use_torch_compile` with the same value |
# | `actor.optim.lr_scheduler_type` | `actor.optim.decay_type` |
# | `actor.optim.min_lr_ratio` | `actor.optim.min_lr_factor` |
# | `actor.optim.lr_warmup_steps_ratio=r` | `actor.optim.lr_warmup_steps=int(r·total_steps)` (the engine's own fallback when steps ≤ 0) |
# | `ref.fsdp_config.param_offload` | `ref.torchtitan.param_offload` |
# | `data.max_prompt_length` + `data.max_response_length` | both kept, plus `{actor,ref}.torchtitan.max_seq_len` = their sum (RoPE cache length) |
# | any other `fsdp_config.*` key (e.g. `wrap_policy`) | dropped: the torchtitan yaml has no `fsdp_config` group |
# | any other key | kept as is |
#
# **Hydra's `+` prefix**: overriding a key that is not in the yaml needs `+key=value`, or Hydra refuses it.
# `expert_tensor_parallel_size` exists in the engine's dataclass but not in `engine/torchtitan.yaml`.

# %%
A = "actor_rollout_ref.actor."
R = "actor_rollout_ref.ref."

# FSDP-side overrides of the recipe that matter for the switch (public example input).
FSDP_RECIPE = {
    A + "fsdp_config.param_offload": True,
    A + "fsdp_config.optimizer_offload": True,
    A + "fsdp_config.reshard_after_forward": True,
    A + "fsdp_config.forward_prefetch": False,
    A + "fsdp_config.fsdp_size": -1,
    A + "fsdp_config.ulysses_sequence_parallel_size": 1,
    A + "use_torch_compile": False,
    A + "optim.lr_scheduler_type": "cosine",
    A + "optim.min_lr_ratio": 0.1,
    A + "optim.lr_warmup_steps_ratio": 0.03,
    R + "fsdp_config.param_offload": True,
    "actor_rollout_ref.model.use_remove_padding": True,
    "actor_rollout_ref.model.enable_gradient_checkpointing": True,
    "data.max_prompt_length": 1024,
    "data.max_response_length": 4096,
}

# %% [markdown]
# ## 任务 1：`translate(fsdp_overrides, *, n_gpus=2, total_steps=None) -> dict`
#
# 按上表把一个 FSDP 覆盖项字典翻译成 TorchTitan 覆盖项字典（键为完整 Hydra 路径，值保持 Python 类型）。
# 只翻译输入里出现的键，不要自行添加输入中没有的键（`+expert_tensor_parallel_size` 等属于任务 2）。
# - `reshard_after_forward` 不是 bool 时抛出 `ValueError`；
# - 输入含 `lr_warmup_steps_ratio` 但 `total_steps` 为 None 时抛出 `ValueError`（无法换算步数）。
#
# ---
#
# ## Task 1: `translate(fsdp_overrides, *, n_gpus=2, total_steps=None) -> dict`
#
# Translate a dict of FSDP overrides into the torchtitan overrides, following the table (keys are full Hydra paths,
# values keep their Python types). Translate only the keys present in the input; do not add keys the input does not
# imply (`+expert_tensor_parallel_size` and friends belong to task 2).
# - raise `ValueError` if `reshard_after_forward` is not a bool;
# - raise `ValueError` if the input has `lr_warmup_steps_ratio` but `total_steps` is None (steps cannot be computed).

# %%
### BEGIN SOLUTION
RENAMES = {
    A + "fsdp_config.param_offload": A + "torchtitan.param_offload",
    A + "fsdp_config.optimizer_offload": A + "torchtitan.optimizer_offload",
    A + "fsdp_config.forward_prefetch": A + "torchtitan.forward_prefetch",
    A + "fsdp_config.ulysses_sequence_parallel_size": A + "torchtitan.context_parallel_size",
    A + "optim.lr_scheduler_type": A + "optim.decay_type",
    A + "optim.min_lr_ratio": A + "optim.min_lr_factor",
    R + "fsdp_config.param_offload": R + "torchtitan.param_offload",
}


### STUB
### END SOLUTION
def translate(fsdp_overrides, *, n_gpus=2, total_steps=None):
    """Return the torchtitan overrides replacing `fsdp_overrides`."""
    ### BEGIN SOLUTION
    out = {}
    cp = fsdp_overrides.get(A + "fsdp_config.ulysses_sequence_parallel_size", 1)
    for key, value in fsdp_overrides.items():
        if key in RENAMES:
            out[RENAMES[key]] = value
        elif key.endswith("fsdp_config.reshard_after_forward"):
            if not isinstance(value, bool):
                raise ValueError(f"{key} must be a bool, got {value!r}")
            out[key.replace("fsdp_config", "torchtitan")] = "always" if value else "never"
        elif key == A + "fsdp_config.fsdp_size":
            shard = n_gpus // cp if value == -1 else value
            out[A + "torchtitan.data_parallel_shard_size"] = shard
            out[A + "torchtitan.data_parallel_replicate_size"] = n_gpus // (shard * cp)
        elif key == A + "optim.lr_warmup_steps_ratio":
            if total_steps is None:
                raise ValueError("lr_warmup_steps_ratio needs total_steps to become lr_warmup_steps")
            out[A + "optim.lr_warmup_steps"] = int(value * total_steps)
        elif key == A + "use_torch_compile":
            out[key] = value
            out[A + "torchtitan.use_torch_compile"] = value
            out[R + "torchtitan.use_torch_compile"] = value
        elif key == "actor_rollout_ref.model.use_remove_padding":
            out[key] = value
            if value:
                out[A + "torchtitan.attn_type"] = "varlen"
        elif ".fsdp_config." in key:
            continue  # no torchtitan counterpart
        else:
            out[key] = value
    if "data.max_prompt_length" in fsdp_overrides and "data.max_response_length" in fsdp_overrides:
        seq = fsdp_overrides["data.max_prompt_length"] + fsdp_overrides["data.max_response_length"]
        out[A + "torchtitan.max_seq_len"] = seq
        out[R + "torchtitan.max_seq_len"] = seq
    return out
    ### STUB
    # raise NotImplementedError("translate: map each FSDP override following the table above")
    ### END SOLUTION

# %% [markdown]
# ## 任务 2：`TORCHTITAN_SCRIPT`
#
# 写出课程 TorchTitan 运行脚本 `run_qwen3_1.7b_wordle_torchtitan_npu.sh` 中**新增或改变**的覆盖项（字典：完整键 → 值）：
# 切换 `model_engine`、`trainer.use_legacy_worker_impl=disable`、Actor 的全部 `torchtitan.*` 键（卸载、`reshard_after_forward`、
# `forward_prefetch=False`、关闭编译、两卡 FSDP2 的各并行度、varlen、`max_seq_len`）、三个 optim 键（脚本把预热直接写成 5 步），
# 以及 Ref 的 `param_offload`、`use_torch_compile`、`max_seq_len`。注意哪个键需要 `+` 前缀（把 `+` 写进字典键里）。
# 值用 Python 类型写，与任务 1 相同：开关写 `True`/`False`（bool），数字写 `int`/`float`（如 `5120`、`0.1`），其余写字符串
# （如 `'varlen'`）；不要写成 `'True'`、`'5120'` 这样的字符串。
#
# ---
#
# ## Task 2: `TORCHTITAN_SCRIPT`
#
# Write the overrides that the course's torchtitan run script `run_qwen3_1.7b_wordle_torchtitan_npu.sh` **adds or changes**
# (a dict: full key → value): the `model_engine` switch, `trainer.use_legacy_worker_impl=disable`, every actor
# `torchtitan.*` key (offloads, `reshard_after_forward`, `forward_prefetch=False`, compile off, each parallel size of
# two-card FSDP2, varlen, `max_seq_len`), the three optim keys (the script sets warm-up to 5 steps directly), and the ref's
# `param_offload`, `use_torch_compile` and `max_seq_len`. Mind which key needs the `+` prefix (put the `+` in the dict key).
# Write values as Python values, as in task 1: switches as `True`/`False` (bool), numbers as `int`/`float` (`5120`,
# `0.1`), the rest as strings (`'varlen'`); not as strings such as `'True'` or `'5120'`.

# %%
### BEGIN SOLUTION
TORCHTITAN_SCRIPT = {
    'model_engine': 'torchtitan',
    'trainer.use_legacy_worker_impl': 'disable',
    A + 'torchtitan.param_offload': True,
    A + 'torchtitan.optimizer_offload': True,
    A + 'torchtitan.reshard_after_forward': 'always',
    A + 'torchtitan.forward_prefetch': False,
    A + 'torchtitan.use_torch_compile': False,
    A + 'torchtitan.data_parallel_replicate_size': 1,
    A + 'torchtitan.data_parallel_shard_size': 2,
    A + 'torchtitan.tensor_parallel_size': 1,
    A + 'torchtitan.expert_parallel_size': 1,
    '+' + A + 'torchtitan.expert_tensor_parallel_size': 1,
    A + 'torchtitan.pipeline_parallel_size': 1,
    A + 'torchtitan.context_parallel_size': 1,
    A + 'torchtitan.attn_type': 'varlen',
    A + 'torchtitan.max_seq_len': 5120,
    A + 'optim.decay_type': 'cosine',
    A + 'optim.min_lr_factor': 0.1,
    A + 'optim.lr_warmup_steps': 5,
    R + 'torchtitan.param_offload': True,
    R + 'torchtitan.use_torch_compile': False,
    R + 'torchtitan.max_seq_len': 5120,
}
### STUB
# TORCHTITAN_SCRIPT = None  # a dict {full_key: value}
### END SOLUTION

# %%
# Public self-check (examples only; the grader also uses hidden cases)
print(translate({A + "fsdp_config.param_offload": True}))
print(translate({A + "fsdp_config.reshard_after_forward": True}))
print(translate({A + "fsdp_config.fsdp_size": -1}, n_gpus=2))
print(translate(FSDP_RECIPE, n_gpus=2, total_steps=155))
assert isinstance(TORCHTITAN_SCRIPT, dict) and len(TORCHTITAN_SCRIPT) == 22, "22 overrides expected"

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'script_keys': {'expected': {'model_engine': 'torchtitan',
                              'trainer.use_legacy_worker_impl': 'disable',
                              'actor_rollout_ref.actor.torchtitan.param_offload': True,
                              'actor_rollout_ref.actor.torchtitan.optimizer_offload': True,
                              'actor_rollout_ref.actor.torchtitan.reshard_after_forward': 'always',
                              'actor_rollout_ref.actor.torchtitan.forward_prefetch': False,
                              'actor_rollout_ref.actor.torchtitan.use_torch_compile': False,
                              'actor_rollout_ref.actor.torchtitan.data_parallel_replicate_size': 1,
                              'actor_rollout_ref.actor.torchtitan.data_parallel_shard_size': 2,
                              'actor_rollout_ref.actor.torchtitan.tensor_parallel_size': 1,
                              'actor_rollout_ref.actor.torchtitan.expert_parallel_size': 1,
                              '+actor_rollout_ref.actor.torchtitan.expert_tensor_parallel_size': 1,
                              'actor_rollout_ref.actor.torchtitan.pipeline_parallel_size': 1,
                              'actor_rollout_ref.actor.torchtitan.context_parallel_size': 1,
                              'actor_rollout_ref.actor.torchtitan.attn_type': 'varlen',
                              'actor_rollout_ref.actor.torchtitan.max_seq_len': 5120,
                              'actor_rollout_ref.actor.optim.decay_type': 'cosine',
                              'actor_rollout_ref.actor.optim.min_lr_factor': 0.1,
                              'actor_rollout_ref.actor.optim.lr_warmup_steps': 5,
                              'actor_rollout_ref.ref.torchtitan.param_offload': True,
                              'actor_rollout_ref.ref.torchtitan.use_torch_compile': False,
                              'actor_rollout_ref.ref.torchtitan.max_seq_len': 5120},
                 'extra_keys': 'penalize',
                 'feedback': {'en': 'Compare each key with the torchtitan run script: full Hydra path, value '
                                    "type (strings such as 'always' vs booleans), and the '+' prefix for a "
                                    'key the yaml does not declare.',
                              'zh': "逐项对照 TorchTitan 运行脚本：完整 Hydra 路径、值的类型（'always' 这类字符串与布尔值不同），以及 yaml "
                                    "中未声明的键需要的 '+' 前缀。"}},
 'public_cases': {'calls': [{'args': [{'actor_rollout_ref.actor.fsdp_config.param_offload': True}],
                             'kwargs': {},
                             'public': True,
                             'expect': {'actor_rollout_ref.actor.torchtitan.param_offload': True},
                             'label': 'param_offload=True',
                             'rules': ['same_name']},
                            {'args': [{'actor_rollout_ref.actor.fsdp_config.reshard_after_forward': True}],
                             'kwargs': {},
                             'public': True,
                             'expect': {'actor_rollout_ref.actor.torchtitan.reshard_after_forward': 'always'},
                             'label': 'reshard_after_forward=True',
                             'rules': ['reshard_map']},
                            {'args': [{'actor_rollout_ref.actor.optim.lr_scheduler_type': 'cosine'}],
                             'kwargs': {},
                             'public': True,
                             'expect': {'actor_rollout_ref.actor.optim.decay_type': 'cosine'},
                             'label': 'lr_scheduler_type=cosine',
                             'rules': ['renames']},
                            {'args': [{'actor_rollout_ref.actor.fsdp_config.fsdp_size': -1}],
                             'kwargs': {'n_gpus': 2},
                             'public': True,
                             'expect': {'actor_rollout_ref.actor.torchtitan.data_parallel_shard_size': 2,
                                        'actor_rollout_ref.actor.torchtitan.data_parallel_replicate_size': 1},
                             'label': 'fsdp_size=-1 on 2 GPUs',
                             'rules': ['fsdp_size_all']}],
                  'compare': 'exact',
                  'feedback': {'en': 'Re-read the mapping table for the failing example.',
                               'zh': '对照映射表检查失败的示例。'}},
 'hidden_cases': {'calls': [{'args': [{'actor_rollout_ref.ref.fsdp_config.reshard_after_forward': False,
                                       'actor_rollout_ref.actor.fsdp_config.optimizer_offload': False}],
                             'kwargs': {},
                             'public': False,
                             'expect': {'actor_rollout_ref.ref.torchtitan.reshard_after_forward': 'never',
                                        'actor_rollout_ref.actor.torchtitan.optimizer_offload': False},
                             'rules': ['reshard_map', 'same_name']},
                            {'args': [{'actor_rollout_ref.actor.fsdp_config.fsdp_size': -1,
                                       'actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size': 2}],
                             'kwargs': {'n_gpus': 8},
                             'public': False,
                             'expect': {'actor_rollout_ref.actor.torchtitan.data_parallel_shard_size': 4,
                                        'actor_rollout_ref.actor.torchtitan.data_parallel_replicate_size': 1,
                                        'actor_rollout_ref.actor.torchtitan.context_parallel_size': 2},
                             'rules': ['fsdp_size_all', 'renames']},
                            {'args': [{'actor_rollout_ref.actor.fsdp_config.fsdp_size': 4}],
                             'kwargs': {'n_gpus': 16},
                             'public': False,
                             'expect': {'actor_rollout_ref.actor.torchtitan.data_parallel_shard_size': 4,
                                        'actor_rollout_ref.actor.torchtitan.data_parallel_replicate_size': 4},
                             'rules': ['hsdp']},
                            {'args': [{'actor_rollout_ref.actor.optim.min_lr_ratio': 0.05,
                                       'actor_rollout_ref.actor.optim.lr_warmup_steps_ratio': 0.1}],
                             'kwargs': {'total_steps': 75},
                             'public': False,
                             'expect': {'actor_rollout_ref.actor.optim.min_lr_factor': 0.05,
                                        'actor_rollout_ref.actor.optim.lr_warmup_steps': 7},
                             'rules': ['warmup_steps', 'renames']},
                            {'args': [{'actor_rollout_ref.actor.use_torch_compile': True,
                                       'actor_rollout_ref.model.use_remove_padding': False,
                                       'actor_rollout_ref.actor.fsdp_config.wrap_policy': {'min_num_params': 0},
                                       'data.train_batch_size': 128}],
                             'kwargs': {},
                             'public': False,
                             'expect': {'actor_rollout_ref.actor.use_torch_compile': True,
                                        'actor_rollout_ref.actor.torchtitan.use_torch_compile': True,
                                        'actor_rollout_ref.ref.torchtitan.use_torch_compile': True,
                                        'actor_rollout_ref.model.use_remove_padding': False,
                                        'data.train_batch_size': 128},
                             'rules': ['compile_both', 'remove_padding', 'drop_and_keep']},
                            {'args': [{'actor_rollout_ref.model.use_remove_padding': True,
                                       'data.max_prompt_length': 512,
                                       'data.max_response_length': 1536,
                                       'actor_rollout_ref.ref.fsdp_config.param_offload': False}],
                             'kwargs': {},
                             'public': False,
                             'expect': {'actor_rollout_ref.model.use_remove_padding': True,
                                        'actor_rollout_ref.actor.torchtitan.attn_type': 'varlen',
                                        'data.max_prompt_length': 512,
                                        'data.max_response_length': 1536,
                                        'actor_rollout_ref.actor.torchtitan.max_seq_len': 2048,
                                        'actor_rollout_ref.ref.torchtitan.max_seq_len': 2048,
                                        'actor_rollout_ref.ref.torchtitan.param_offload': False},
                             'rules': ['remove_padding', 'max_seq_len', 'same_name']},
                            {'args': [{'actor_rollout_ref.actor.fsdp_config.forward_prefetch': False,
                                       'actor_rollout_ref.actor.fsdp_config.reshard_after_forward': False}],
                             'kwargs': {'n_gpus': 2},
                             'public': False,
                             'expect': {'actor_rollout_ref.actor.torchtitan.forward_prefetch': False,
                                        'actor_rollout_ref.actor.torchtitan.reshard_after_forward': 'never'},
                             'rules': ['same_name', 'reshard_map']},
                            {'args': [{'actor_rollout_ref.actor.fsdp_config.fsdp_size': 2,
                                       'actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size': 2}],
                             'kwargs': {'n_gpus': 8},
                             'public': False,
                             'expect': {'actor_rollout_ref.actor.torchtitan.data_parallel_shard_size': 2,
                                        'actor_rollout_ref.actor.torchtitan.data_parallel_replicate_size': 2,
                                        'actor_rollout_ref.actor.torchtitan.context_parallel_size': 2},
                             'rules': ['hsdp']},
                            {'args': [{'data.max_response_length': 4096,
                                       'actor_rollout_ref.actor.fsdp_config.param_offload': False}],
                             'kwargs': {},
                             'public': False,
                             'expect': {'data.max_response_length': 4096,
                                        'actor_rollout_ref.actor.torchtitan.param_offload': False},
                             'rules': ['max_seq_len', 'drop_and_keep', 'same_name']}],
                  'compare': 'exact',
                  'feedback': {'en': 'Hidden cases cover reshard False, context parallel with fsdp_size=-1, '
                                     'HSDP (fsdp_size>0), the warm-up ratio, dropped fsdp_config keys, '
                                     'pass-through keys and max_seq_len.',
                               'zh': '隐藏用例覆盖 reshard=False、fsdp_size=-1 与上下文并行、HSDP（fsdp_size>0）、预热比例换算、丢弃的 '
                                     'fsdp_config 键、原样保留的键和 max_seq_len。'}},
 'errors': {'calls': [{'args': [{'actor_rollout_ref.actor.optim.lr_warmup_steps_ratio': 0.03}],
                       'kwargs': {},
                       'public': True,
                       'raises': 'ValueError',
                       'label': 'lr_warmup_steps_ratio without total_steps',
                       'rules': ['warmup_needs_total']},
                      {'args': [{'actor_rollout_ref.actor.fsdp_config.reshard_after_forward': 'yes'}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['reshard_bool']},
                      {'args': [{'actor_rollout_ref.actor.fsdp_config.reshard_after_forward': 1}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['reshard_bool']}],
            'compare': 'exact',
            'feedback': {'en': 'translate must raise ValueError on a non-bool reshard_after_forward and on a '
                               'warm-up ratio without total_steps.',
                         'zh': 'reshard_after_forward 不是 bool、或有预热比例却没有 total_steps 时，translate 应抛出 '
                               'ValueError。'}}}

RULES = {'script_keys': [{'id': 'script_overrides',
                  'stated': "Write the overrides that the course's torchtitan run script",
                  'hint': {'en': 'Compare your dict with the torchtitan run script key by key: every '
                                 'override it adds or changes, under its full Hydra path, and nothing else.',
                           'zh': '逐键对照 TorchTitan 运行脚本：写出它新增或改变的每个覆盖项（完整 Hydra 路径），不多不少。'}},
                 {'id': 'plus_prefix',
                  'stated': 'Mind which key needs the `+` prefix',
                  'hint': {'en': 'A key the yaml does not declare (expert_tensor_parallel_size) needs the '
                                 "'+' prefix in the dict key; the other keys do not.",
                           'zh': "yaml 中没有声明的键（expert_tensor_parallel_size）在字典键里要带 '+' 前缀，其它键不带。"}},
                 {'id': 'python_values',
                  'stated': 'Write values as Python values',
                  'hint': {'en': 'Mind the value type: values are Python values, switches as True/False, '
                                 "numbers as int/float, the rest as strings such as 'always' or 'varlen'.",
                           'zh': "注意值的类型：值用 Python 类型，开关写 True/False，数字写 int/float，其余写 'always'、'varlen' "
                                 '这样的字符串。'}}],
 'public_cases': [{'id': 'same_name',
                   'stated': 'same name under `actor.torchtitan.`',
                   'hint': {'en': 'param_offload, optimizer_offload and forward_prefetch keep their names '
                                  "and values, moved from fsdp_config to torchtitan (the ref's param_offload "
                                  'too).',
                            'zh': 'param_offload、optimizer_offload、forward_prefetch 保持键名和值，只是从 fsdp_config '
                                  '移到 torchtitan 下（Ref 的 param_offload 同理）。'}},
                  {'id': 'reshard_map',
                   'stated': 'True→`always`, False→`never`',
                   'hint': {'en': 'reshard_after_forward becomes a string under torchtitan: True gives '
                                  "'always', False gives 'never', for the actor and the ref alike.",
                            'zh': "reshard_after_forward 在 torchtitan 下是字符串：True 对应 'always'，False 对应 "
                                  "'never'，Actor 和 Ref 都一样。"}},
                  {'id': 'renames',
                   'stated': '`actor.optim.lr_scheduler_type` | `actor.optim.decay_type`',
                   'hint': {'en': 'Renamed keys keep their value: lr_scheduler_type becomes decay_type, '
                                  'min_lr_ratio becomes min_lr_factor, ulysses_sequence_parallel_size '
                                  'becomes context_parallel_size.',
                            'zh': '改名的键保持原值：lr_scheduler_type → decay_type，min_lr_ratio → '
                                  'min_lr_factor，ulysses_sequence_parallel_size → context_parallel_size。'}},
                  {'id': 'fsdp_size_all',
                   'stated': '`data_parallel_shard_size` = n_gpus ÷ cp, `data_parallel_replicate_size` = 1',
                   'hint': {'en': 'fsdp_size=-1 shards over all GPUs of one context-parallel group: shard = '
                                  'n_gpus / cp and replicate = 1.',
                            'zh': 'fsdp_size=-1 表示在一个上下文并行组之外的全部 GPU 上分片：shard = n_gpus / cp，replicate = '
                                  '1。'}}],
 'hidden_cases': [{'id': 'same_name',
                   'stated': 'same name under `actor.torchtitan.`',
                   'hint': {'en': 'param_offload, optimizer_offload and forward_prefetch keep their names '
                                  "and values, moved from fsdp_config to torchtitan (the ref's param_offload "
                                  'too).',
                            'zh': 'param_offload、optimizer_offload、forward_prefetch 保持键名和值，只是从 fsdp_config '
                                  '移到 torchtitan 下（Ref 的 param_offload 同理）。'},
                   'types': 'Translate a dict of FSDP overrides into the torchtitan overrides'},
                  {'id': 'reshard_map',
                   'stated': 'True→`always`, False→`never`',
                   'hint': {'en': 'reshard_after_forward becomes a string under torchtitan: True gives '
                                  "'always', False gives 'never', for the actor and the ref alike.",
                            'zh': "reshard_after_forward 在 torchtitan 下是字符串：True 对应 'always'，False 对应 "
                                  "'never'，Actor 和 Ref 都一样。"},
                   'types': 'Translate a dict of FSDP overrides into the torchtitan overrides'},
                  {'id': 'renames',
                   'stated': '`actor.optim.lr_scheduler_type` | `actor.optim.decay_type`',
                   'hint': {'en': 'Renamed keys keep their value: lr_scheduler_type becomes decay_type, '
                                  'min_lr_ratio becomes min_lr_factor, ulysses_sequence_parallel_size '
                                  'becomes context_parallel_size.',
                            'zh': '改名的键保持原值：lr_scheduler_type → decay_type，min_lr_ratio → '
                                  'min_lr_factor，ulysses_sequence_parallel_size → context_parallel_size。'},
                   'types': 'Translate a dict of FSDP overrides into the torchtitan overrides'},
                  {'id': 'fsdp_size_all',
                   'stated': '`data_parallel_shard_size` = n_gpus ÷ cp, `data_parallel_replicate_size` = 1',
                   'hint': {'en': 'fsdp_size=-1 shards over all GPUs of one context-parallel group: shard = '
                                  'n_gpus / cp and replicate = 1.',
                            'zh': 'fsdp_size=-1 表示在一个上下文并行组之外的全部 GPU 上分片：shard = n_gpus / cp，replicate = 1。'},
                   'types': 'Translate a dict of FSDP overrides into the torchtitan overrides'},
                  {'id': 'hsdp',
                   'stated': 'shard = k, replicate = n_gpus ÷ (k·cp)',
                   'hint': {'en': 'fsdp_size=k > 0 is HSDP: shard = k and replicate = n_gpus / (k * cp), cp '
                                  'included.',
                            'zh': 'fsdp_size=k > 0 是 HSDP：shard = k，replicate = n_gpus / (k * cp)，要算上 cp。'},
                   'types': 'Translate a dict of FSDP overrides into the torchtitan overrides'},
                  {'id': 'warmup_steps',
                   'stated': '`actor.optim.lr_warmup_steps=int(r·total_steps)`',
                   'hint': {'en': 'The warm-up ratio becomes a step count: lr_warmup_steps = int(ratio * '
                                  'total_steps), truncated, not rounded.',
                            'zh': '预热比例要换成步数：lr_warmup_steps = int(ratio * total_steps)，截断而不是四舍五入。'},
                   'types': 'Translate a dict of FSDP overrides into the torchtitan overrides'},
                  {'id': 'compile_both',
                   'stated': 'kept, plus `{actor,ref}.torchtitan.use_torch_compile` with the same value',
                   'hint': {'en': 'use_torch_compile is kept and also set, with the same value, under both '
                                  'actor.torchtitan and ref.torchtitan.',
                            'zh': 'use_torch_compile 保留，并以相同的值同时写到 actor.torchtitan 和 ref.torchtitan 下。'},
                   'types': 'Translate a dict of FSDP overrides into the torchtitan overrides'},
                  {'id': 'remove_padding',
                   'stated': 'kept, plus `actor.torchtitan.attn_type=varlen`',
                   'hint': {'en': 'use_remove_padding is kept; only when it is True is '
                                  "actor.torchtitan.attn_type='varlen' added.",
                            'zh': "use_remove_padding 保留；只有它为 True 时才加 actor.torchtitan.attn_type='varlen'。"},
                   'types': 'Translate a dict of FSDP overrides into the torchtitan overrides'},
                  {'id': 'max_seq_len',
                   'stated': 'plus `{actor,ref}.torchtitan.max_seq_len` = their sum',
                   'hint': {'en': 'With both prompt and response lengths present, keep both and add '
                                  'max_seq_len = their sum for the actor and for the ref.',
                            'zh': '同时给出 prompt 和 response 长度时，两者都保留，并为 Actor 和 Ref 各加 max_seq_len = 两者之和。'},
                   'types': 'Translate a dict of FSDP overrides into the torchtitan overrides'},
                  {'id': 'drop_and_keep',
                   'stated': 'any other `fsdp_config.*` key (e.g. `wrap_policy`)',
                   'hint': {'en': 'Any other fsdp_config key is dropped (torchtitan has no fsdp_config '
                                  'group); any key outside fsdp_config that the table does not name passes '
                                  'through unchanged.',
                            'zh': '其它 fsdp_config 键一律丢弃（torchtitan 没有 fsdp_config 组）；表中没有提到的非 fsdp_config '
                                  '键原样保留。'},
                   'types': 'Translate a dict of FSDP overrides into the torchtitan overrides'}],
 'errors': [{'id': 'warmup_needs_total',
             'stated': 'raise `ValueError` if the input has `lr_warmup_steps_ratio` but `total_steps` is '
                       'None',
             'hint': {'en': 'A warm-up ratio without total_steps cannot become a step count: raise '
                            'ValueError.',
                      'zh': '有预热比例却没有 total_steps 时无法换算步数，要抛出 ValueError。'}},
            {'id': 'reshard_bool',
             'stated': 'raise `ValueError` if `reshard_after_forward` is not a bool',
             'hint': {'en': 'reshard_after_forward must be a bool; any other value (a string included) '
                            'raises ValueError.',
                      'zh': 'reshard_after_forward 必须是 bool；其它值（包括字符串）都要抛出 ValueError。'},
             'types': 'raise `ValueError` if `reshard_after_forward` is not a bool'}]}

MISTAKES = [{'name': 'no_plus_prefix',
  'score': 9.6364,
  'fails': {'script_keys': "'+' prefix"},
  'patch': [{'find': "    '+' + A + 'torchtitan.expert_tensor_parallel_size': 1,",
             'replace': "    A + 'torchtitan.expert_tensor_parallel_size': 1,"}]},
 {'name': 'reshard_bool_kept',
  'score': 8.6515,
  'fails': {'public_cases': 'reshard_after_forward=True'},
  'patch': [{'find': '            out[key.replace("fsdp_config", "torchtitan")] = "always" if value else '
                     '"never"',
             'replace': '            out[key.replace("fsdp_config", "torchtitan")] = value'},
            {'find': "    A + 'torchtitan.reshard_after_forward': 'always',",
             'replace': "    A + 'torchtitan.reshard_after_forward': True,"}]},
 {'name': 'warmup_ratio_copied',
  'score': 9.3334,
  'fails': {'errors': 'lr_warmup_steps_ratio without total_steps'},
  'patch': [{'find': '            if total_steps is None:\n'
                     '                raise ValueError("lr_warmup_steps_ratio needs total_steps to become '
                     'lr_warmup_steps")\n'
                     '            out[A + "optim.lr_warmup_steps"] = int(value * total_steps)',
             'replace': '            out[A + "optim.lr_warmup_steps"] = value'}]},
 {'name': 'values_as_strings',
  'score': 9.8182,
  'fails': {'script_keys': 'value type'},
  'patch': [{'find': "    A + 'torchtitan.max_seq_len': 5120,\n",
             'replace': "    A + 'torchtitan.max_seq_len': '5120',  # as the shell line spells it\n"}]},
 {'name': 'hsdp_replicate_ignored',
  'score': 9.3333,
  'fails': {'hidden_cases': 'HSDP'},
  'patch': [{'find': '            out[A + "torchtitan.data_parallel_replicate_size"] = n_gpus // (shard * '
                     'cp)',
             'replace': '            out[A + "torchtitan.data_parallel_replicate_size"] = 1'}]},
 {'name': 'hsdp_cp_ignored',
  'score': 9.3333,
  'fails': {'hidden_cases': 'hidden'},
  'patch': [{'find': '            out[A + "torchtitan.data_parallel_replicate_size"] = n_gpus // (shard * '
                     'cp)',
             'replace': '            out[A + "torchtitan.data_parallel_replicate_size"] = n_gpus // shard'}]}]

EQUIVALENT = [{'mutant': 'if_pass:268f6b83:1',
  'reason': '`continue` is the last statement the loop body runs for a dropped fsdp_config key, so `pass` in '
            'its place also goes straight to the next key'}]
