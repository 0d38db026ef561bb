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
# # 第 7 章 · 练习：3 步 TorchTitan 训练
#
# 课程在 NPU 上用 `TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1` 跑完整流程：不保存 checkpoint，不做周期或最终验证
# （训练前的验证仍会运行），warmup 5 被截为 3。这里用课程运行时 `exercises.lab.train`：同样的 GRPO、Wordle 奖励与
# 智能体循环、verl 指标名，模型换成很小的 Qwen3，用 torchtitan FSDP2 在 2 个 rank 上训练：评分节点有 NPU 时用 2 张 NPU
# （hccl），有 GPU 时用 2 张 GPU（nccl），否则用 2 个 CPU rank（gloo）；`run.json` 记录实际使用的设备。
#
# ---
#
# # Chapter 7 · Exercise: a 3-step TorchTitan training run
#
# On the NPU the course runs the whole pipeline with `TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1`: no
# checkpoint, no periodic or final validation (the validation before training still runs), and warmup 5 clamped to
# 3. Here you use the course runtime `exercises.lab.train`: the same GRPO, Wordle reward and agent loop and verl's
# metric names, with a tiny Qwen3 trained by torchtitan FSDP2 on 2 ranks: 2 NPUs (hccl) where the grading node has
# them, else 2 GPUs (nccl), else 2 CPU ranks (gloo); `run.json` records the device the run used.

# %% [markdown]
# ## 任务
# 1. 写出 `config`（`TrainConfig` 字段的字典），对应课程运行；需要的字段见下表（字段说明见 `exercises.lab.config.TrainConfig`）。
#    学习率保持配置自带的值（小模型需要比 1.7B 的 1e-6 更大的 lr）；其他字段可保持默认值（如 `out_dir`）。
# 2. `result = run(config)`，大约 40 秒。评分读取 `result["out_dir"]` 下的 `metrics.jsonl` 和 `run.json`。
#
# ---
#
# ## Tasks
# 1. Write `config` (a dict of `TrainConfig` fields) matching the course run; the fields it needs are in the table
#    below (each field is documented in `exercises.lab.config.TrainConfig`). Keep the profile's own learning rate (the
#    tiny model needs a larger one than the 1.7B model's 1e-6); other fields may keep their defaults (`out_dir`, say).
# 2. `result = run(config)`, about 40 s. Grading reads `metrics.jsonl` and `run.json` under `result["out_dir"]`.
#
# | `TrainConfig` 字段 / field | 课程设置 / course setting | 值 / value |
# |---|---|---|
# | `profile` | 这里的小模型 / the tiny model here | `"cpu-tiny"` |
# | `steps` | `TOTAL_TRAINING_STEPS=3` | `3` |
# | `save_freq` | `SAVE_FREQ=-1` | `-1` |
# | `test_freq` | `TEST_FREQ=-1` | `-1` |
# | `val_before_train` | `trainer.val_before_train=True` | `True` |
# | `data_parallel_shard_size` | `actor.torchtitan.data_parallel_shard_size` | `2` |
# | `context_parallel_size` | `actor.torchtitan.context_parallel_size` | `1` |
# | `world_size` | 1 node × 2 devices | `2` |
# | `reshard_after_forward` | `actor.torchtitan.reshard_after_forward` | `"always"` |
# | `warmup_steps` | `actor.optim.lr_warmup_steps` | `5` |
# | `decay_type` | `actor.optim.decay_type` | `"cosine"` |
# | `min_lr_factor` | `actor.optim.min_lr_factor` | `0.1` |
# | `kl_loss_coef` | `actor.kl_loss_coef` | `0.001` |
# | `kl_loss_type` | `actor.kl_loss_type` | `"low_var_kl"` |
# | `entropy_coeff` | `actor.entropy_coeff` | `0.004` |

# %%
### BEGIN SOLUTION
config = {
    'profile': 'cpu-tiny',           # tiny Qwen3 + 2 CPU ranks (gloo); the NPU run uses Qwen3-1.7B
    'steps': 3,                      # TOTAL_TRAINING_STEPS=3
    'save_freq': -1,                 # SAVE_FREQ=-1: no checkpoint
    'test_freq': -1,                 # TEST_FREQ=-1
    'val_before_train': True,        # trainer.val_before_train=True: validate once before step 1
    'data_parallel_shard_size': 2,   # actor.torchtitan.data_parallel_shard_size=2 (FSDP2)
    'context_parallel_size': 1,      # actor.torchtitan.context_parallel_size=1
    'world_size': 2,                 # 1 node x 2 devices
    'reshard_after_forward': 'always', # actor.torchtitan.reshard_after_forward=always
    'warmup_steps': 5,               # optim.lr_warmup_steps=5
    'decay_type': 'cosine',          # optim.decay_type=cosine
    'min_lr_factor': 0.1,            # optim.min_lr_factor=0.1
    'kl_loss_coef': 0.001,           # actor.kl_loss_coef=0.001
    'kl_loss_type': 'low_var_kl',    # actor.kl_loss_type=low_var_kl
    'entropy_coeff': 0.004,          # actor.entropy_coeff=0.004
    'out_dir': 'runs/three_step',
}
### STUB
# config = None  # a dict of TrainConfig fields, see the table in Task 1
### END SOLUTION

# %%
from exercises.lab.train import run

### BEGIN SOLUTION
result = run(config)  # ~40 s on two CPU cores: 2 ranks x 3 GRPO steps
print(result["out_dir"], "wall", round(result["wall_s"], 1), "s")
### STUB
# result = None  # result = run(config)
### END SOLUTION

# %% [markdown]
# ## 看一看结果
#
# ---
#
# ## Look at the run

# %%
if result is not None:
    for rec in result["metrics"]:
        print({k: round(rec[k], 6) for k in ("step", "actor/pg_loss", "actor/kl_loss", "actor/lr",
                                             "critic/score/mean")})
    print({k: result["run"][k] for k in ("model_engine", "world_size", "params_are_dtensors")},
          result["run"]["parallel"])

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'config': {'extra_keys': 'ignore',
            'feedback': {'en': "Translate the course's TorchTitan run into TrainConfig fields: some keys do "
                               'not match the 3-step run (TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1, '
                               "validation before training) or the actor's torchtitan/optim settings in the "
                               'table.',
                         'zh': '把课程的 TorchTitan 运行翻译成 TrainConfig 字段：有的键与 3 步运行（TOTAL_TRAINING_STEPS=3 '
                               'SAVE_FREQ=-1 TEST_FREQ=-1，训练前验证）或表中 actor 的 torchtitan/optim 设置不一致。'},
            'expected': {'profile': 'cpu-tiny',
                         'steps': 3,
                         'save_freq': -1,
                         'test_freq': -1,
                         'val_before_train': True,
                         'data_parallel_shard_size': 2,
                         'context_parallel_size': 1,
                         'world_size': 2,
                         'reshard_after_forward': 'always',
                         'warmup_steps': 5,
                         'decay_type': 'cosine',
                         'min_lr_factor': 0.1,
                         'kl_loss_coef': 0.001,
                         'kl_loss_type': 'low_var_kl',
                         'entropy_coeff': 0.004}},
 'run_setup': {'run': {'model_engine': 'torchtitan',
                       'world_size': 2,
                       'total_training_steps': 3,
                       'params_are_dtensors': True,
                       'status': 'finished',
                       'config.val_before_train': True,
                       'parallel.data_parallel_shard_size': 2,
                       'parallel.context_parallel_size': 1,
                       'parallel.reshard_after_forward': 'always',
                       'config.kl_loss_coef': 0.001,
                       'config.kl_loss_type': 'low_var_kl',
                       'config.entropy_coeff': 0.004},
               'present_files': ['metrics.jsonl', 'run.json'],
               'absent_files': ['checkpoints', '*.safetensors'],
               'feedback': {'en': 'run.json must show model_engine torchtitan on 2 ranks with FSDP2 (shard '
                                  '2, cp 1, reshard always, DTensor params), validation before training, the '
                                  'actor loss terms of the table (kl_loss_coef, kl_loss_type, '
                                  'entropy_coeff), and a 3-step run with SAVE_FREQ=-1 writes no checkpoints.',
                            'zh': 'run.json 应显示 model_engine=torchtitan、2 个 rank、FSDP2（shard 2、cp 1、reshard '
                                  'always、参数为 DTensor）、训练前验证、表中 actor '
                                  '的损失项（kl_loss_coef、kl_loss_type、entropy_coeff），且 SAVE_FREQ=-1 的 3 步运行不写 '
                                  'checkpoint。'}},
 'trace_shape': {'metrics': ['training/global_step',
                             'actor/pg_loss',
                             'actor/kl_loss',
                             'actor/entropy',
                             'actor/grad_norm',
                             'actor/lr',
                             'critic/score/mean',
                             'response_length/mean',
                             'num_turns/mean',
                             'timing_s/step',
                             'timing_per_token_ms/update_actor',
                             'perf/total_num_tokens'],
                 'steps': 3,
                 'finite': True,
                 'feedback': {'en': "Expect exactly 3 step records carrying verl's metric names "
                                    '(actor/pg_loss, critic/score/mean, timing_per_token_ms/update_actor, '
                                    '...) with finite values.',
                              'zh': '应恰好有 3 条 step 记录，带 verl '
                                    '的指标名（actor/pg_loss、critic/score/mean、timing_per_token_ms/update_actor '
                                    '等），且数值有限。'}},
 'trace_values': {'equals': {'training/global_step': [1, 2, 3],
                             'actor/lr': [6.6666666666666675e-06, 1.3333333333333335e-05, 2e-05]},
                  'band': {'actor/kl_loss': {'lower': [-1e-09, 0.0, 0.0], 'upper': [1e-09, 0.1, 0.1]}},
                  'rtol': 1e-06,
                  'atol': 1e-12,
                  'feedback': {'en': 'global_step runs 1..3; with warmup 5 clamped to the 3 steps the LR '
                                     "factor is 1/3, 2/3, 1 of the profile's lr; actor and reference are "
                                     'identical at step 1, so kl_loss starts at 0.',
                               'zh': 'global_step 为 1..3；warmup 5 被截为 3 步，学习率系数为配置 lr 的 1/3、2/3、1；第一步 actor '
                                     '与 reference 相同，kl_loss 为 0。'}},
 'trace_band': {'recorded_band': {'metrics': ['actor/entropy',
                                              'actor/grad_norm',
                                              'actor/pg_loss',
                                              'critic/score/mean',
                                              'response_length/mean'],
                                  'profiles': ['cpu-tiny']},
                'feedback': {'en': 'Score, entropy, response length or grad norm left the band recorded for '
                                   'profile cpu-tiny; run the profile as given (its lr, batch and seed) '
                                   "rather than the 1.7B model's values.",
                             'zh': '得分、熵、回复长度或梯度范数超出了 cpu-tiny 配置记录的范围；请按给定配置运行（其 lr、batch 与 seed），不要换成 1.7B '
                                   '模型的数值。'}}}

MISTAKES = [{'name': 'default_reshard',
  'score': 9.2,
  'fails': {'config': 'TrainConfig fields', 'run_setup': 'reshard_after_forward'},
  'patch': [{'find': "    'reshard_after_forward': 'always', # actor.torchtitan.reshard_after_forward=always",
             'replace': "    'reshard_after_forward': 'default', # "
                        'actor.torchtitan.reshard_after_forward=always'}]},
 {'name': 'keeps_save_freq',
  'score': 9.2,
  'fails': {'config': 'TrainConfig fields', 'run_setup': 'checkpoints'},
  'patch': [{'find': "    'save_freq': -1,                 # SAVE_FREQ=-1: no checkpoint",
             'replace': "    'save_freq': 25,                 # SAVE_FREQ=-1: no checkpoint"}]},
 {'name': 'no_val_before_train',
  'score': 9.2,
  'fails': {'config': 'TrainConfig fields', 'run_setup': 'config.val_before_train'},
  'patch': [{'find': "    'val_before_train': True,        # trainer.val_before_train=True: validate once "
                     'before step 1\n',
             'replace': ''}]},
 {'name': 'no_warmup',
  'score': 8.8667,
  'fails': {'config': 'TrainConfig fields', 'trace_values': 'actor/lr'},
  'patch': [{'find': "    'warmup_steps': 5,               # optim.lr_warmup_steps=5",
             'replace': "    'warmup_steps': 0,               # no warm-up"}]},
 {'name': 'validation_counted_as_step',
  'score': 4.5333,
  'fails': {'config': 'TrainConfig fields',
            'run_setup': 'total_training_steps',
            'trace_shape': '2 steps recorded, expected 3',
            'trace_values': 'training/global_step has 2 values',
            'trace_band': 'has 2 values'},
  'patch': [{'find': "    'steps': 3,                      # TOTAL_TRAINING_STEPS=3",
             'replace': "    'steps': 2,                      # 3 steps = validation before training + 2 "
                        'updates'}]},
 {'name': 'lr_typo_2e_2',
  'score': 6.0,
  'fails': {'trace_band': 'actor/entropy leaves the accepted band', 'trace_values': 'actor/lr differs'},
  'patch': [{'find': "    'profile': 'cpu-tiny',           # tiny Qwen3 + 2 CPU ranks (gloo); the NPU run "
                     'uses Qwen3-1.7B',
             'replace': "    'profile': 'cpu-tiny',           # tiny Qwen3 + 2 CPU ranks (gloo); the NPU run "
                        'uses Qwen3-1.7B\n'
                        "    'lr': 2e-2,                      # the profile's lr (typed 2e-2 for 2e-5)"}]},
 {'name': 'fsdp_entropy',
  'score': 9.2,
  'fails': {'config': 'TrainConfig fields', 'run_setup': 'config.entropy_coeff'},
  'patch': [{'find': "    'entropy_coeff': 0.004,          # actor.entropy_coeff=0.004",
             'replace': "    'entropy_coeff': 0.002,          # the FSDP script's entropy_coeff"}]}]

RULES = {'config': [{'id': 'course_table',
             'stated': 'the fields it needs are in the table',
             'hint': {'en': 'Each TrainConfig field in the table takes the course value in its last column.',
                      'zh': '表中每个 TrainConfig 字段都取最后一列的课程值。'}}],
 'run_setup': [{'id': 'three_step_run',
                'stated': 'no checkpoint, no periodic or final validation',
                'hint': {'en': 'The 3-step run (steps 3, save_freq -1, test_freq -1, validation before '
                               'training) on 2 ranks with FSDP2 shard 2, cp 1 and reshard always writes no '
                               'checkpoint.',
                         'zh': '3 步运行（steps 3、save_freq -1、test_freq -1、训练前验证）在 2 个 rank 上用 FSDP2 shard 2、cp '
                               '1、reshard always，不写 checkpoint。'}},
               {'id': 'loss_terms',
                'stated': '`actor.entropy_coeff`',
                'hint': {'en': "The actor's loss terms come from the table: kl_loss_coef, kl_loss_type and "
                               "entropy_coeff are the TorchTitan script's (its entropy_coeff is 0.004, the "
                               "FSDP script's is 0.002).",
                         'zh': 'actor 的损失项来自表格：kl_loss_coef、kl_loss_type 与 entropy_coeff 取 TorchTitan 脚本的值（其 '
                               'entropy_coeff 为 0.004，FSDP 脚本为 0.002）。'}}],
 'trace_shape': [{'id': 'three_records',
                  'stated': 'Grading reads `metrics.jsonl` and `run.json`',
                  'hint': {'en': "metrics.jsonl needs one record per training step (3) with verl's metric "
                                 'names and finite values.',
                           'zh': 'metrics.jsonl 每个训练步一条记录（共 3 条），使用 verl 的指标名且数值有限。'}}],
 'trace_values': [{'id': 'warmup_clamped',
                   'stated': 'warmup 5 clamped to 3',
                   'hint': {'en': 'global_step runs 1..3 and warmup 5 is clamped to the 3 steps, so the LR '
                                  "factor is 1/3, 2/3, 1 of the profile's lr; kl_loss starts at 0.",
                            'zh': 'global_step 为 1..3，warmup 5 被截为 3 步，学习率系数为配置 lr 的 1/3、2/3、1；kl_loss 从 0 '
                                  '开始。'}}],
 'trace_band': [{'id': 'profile_lr',
                 'stated': "Keep the profile's own learning rate",
                 'hint': {'en': "Run the cpu-tiny profile with its own lr, batch and seed; the 1.7B model's "
                                'values leave the band.',
                          'zh': '用 cpu-tiny 配置自带的 lr、batch 与 seed 运行；换成 1.7B 模型的数值会超出范围。'}}]}

EQUIVALENT = [{'mutant': 'str_empty:841cd68a:2',
  'reason': "the notebook lets out_dir keep any value; an empty out_dir resolves to the kernel's working "
            'directory, where run() writes the same metrics.jsonl and run.json'}]
