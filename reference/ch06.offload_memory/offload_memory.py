# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · 参数量、卸载与 FSDP2 分片
#
# **参数量**（稠密 Qwen3，torchtitan 的 `Qwen3Model`）：每层有 `wq [n_heads·head_dim, dim]`、`wk`/`wv [n_kv_heads·head_dim, dim]`、
# `wo [dim, n_heads·head_dim]`、`q_norm`/`k_norm [head_dim]`、`attention_norm`/`ffn_norm [dim]`、`w1`/`w3 [ffn, dim]`、`w2 [dim, ffn]`；
# 另有词嵌入 `[vocab, dim]`、最终 `norm [dim]`，不绑定（untied）时还有输出头 `[vocab, dim]`。
# "非嵌入参数" = 总数减去词嵌入，以及不绑定时的输出头（Qwen 模型卡的口径）。
#
# **每卡常驻字节**（本练习的模型，在两个训练阶段之间）：FSDP2 按 `shard` 切分，每卡 `ceil(P/shard)` 个参数；
# fp32 参数 4 B + fp32 梯度 4 B + AdamW 的 `exp_avg`/`exp_avg_sq` 各 4 B。
# `param_offload=True` 把参数和梯度放在 host（CPU），`optimizer_offload=True` 把 AdamW 状态放在 host。
# 计算时临时 all-gather 的 bf16 整层权重不计入。返回 `{"device": 字节, "host": 字节}`。
#
# **FSDP2 dim-0 分片**：每个参数沿第 0 维按 `torch.chunk` 规则切分：块大小 `ceil(d0/shard)`，rank r 拿到
# `max(0, min(块大小, d0 − r·块大小))` 行（可能为 0 行），其余维度不变。
#
# ---
#
# # 06 · Parameter count, offload and FSDP2 shards
#
# **Parameter count** (dense Qwen3, torchtitan's `Qwen3Model`): each block has `wq [n_heads·head_dim, dim]`,
# `wk`/`wv [n_kv_heads·head_dim, dim]`, `wo [dim, n_heads·head_dim]`, `q_norm`/`k_norm [head_dim]`,
# `attention_norm`/`ffn_norm [dim]`, `w1`/`w3 [ffn, dim]`, `w2 [dim, ffn]`; plus the embedding `[vocab, dim]`, the final
# `norm [dim]`, and, when untied, the output head `[vocab, dim]`. "Non-embedding" = total minus the embedding and, when
# untied, the output head (the Qwen model cards' convention).
#
# **Resident bytes per rank** (this exercise's model, between training phases): FSDP2 shards over `shard` ranks, so each
# rank holds `ceil(P/shard)` parameters; fp32 params 4 B + fp32 grads 4 B + AdamW `exp_avg`/`exp_avg_sq` 4 B each.
# `param_offload=True` keeps params and grads on the host (CPU); `optimizer_offload=True` keeps the AdamW state on the
# host. The transient all-gathered bf16 layer used during compute is not counted. Return `{"device": bytes, "host": bytes}`.
#
# **FSDP2 dim-0 shards**: each parameter is split along dim 0 by the `torch.chunk` rule: chunk size `ceil(d0/shard)`;
# rank r gets `max(0, min(chunk, d0 − r·chunk))` rows (possibly 0) and keeps the other dims.

# %% [markdown]
# ## 任务
# 1. `count_params(dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, tied) -> (total, non_embedding)`
# 2. `per_rank_bytes(n_params, shard, param_offload, optimizer_offload) -> {"device": int, "host": int}`
# 3. `shard_shape(global_shape, shard, rank) -> list[int]`
#
# ---
#
# ## Tasks
# 1. `count_params(dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, tied) -> (total, non_embedding)`
# 2. `per_rank_bytes(n_params, shard, param_offload, optimizer_offload) -> {"device": int, "host": int}`
# 3. `shard_shape(global_shape, shard, rank) -> list[int]`

# %%
def count_params(dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, tied):
    ### BEGIN SOLUTION
    attention = dim * n_heads * head_dim * 2 + dim * n_kv_heads * head_dim * 2 + 2 * head_dim
    block = attention + 2 * dim + 3 * dim * ffn_dim
    embeddings = vocab * dim if tied else 2 * vocab * dim
    total = n_layers * block + dim + embeddings
    return total, total - embeddings
    ### STUB
    # raise NotImplementedError("count_params")
    ### END SOLUTION


def per_rank_bytes(n_params, shard, param_offload, optimizer_offload):
    ### BEGIN SOLUTION
    local = -(-n_params // shard)  # ceil
    params_and_grads = (4 + 4) * local
    adam_state = (4 + 4) * local
    device = (0 if param_offload else params_and_grads) + (0 if optimizer_offload else adam_state)
    return {"device": device, "host": params_and_grads + adam_state - device}
    ### STUB
    # raise NotImplementedError("per_rank_bytes")
    ### END SOLUTION


def shard_shape(global_shape, shard, rank):
    ### BEGIN SOLUTION
    chunk = -(-global_shape[0] // shard)
    rows = max(0, min(chunk, global_shape[0] - rank * chunk))
    return [rows, *global_shape[1:]]
    ### STUB
    # raise NotImplementedError("shard_shape")
    ### END SOLUTION

# %%
# Public self-check (Qwen3-1.7B: dim 2048, 28 layers, 16/8 heads, head_dim 128, FFN 6144, vocab 151936, tied)
total, non_emb = count_params(2048, 28, 16, 8, 128, 6144, 151936, True)
print(total, non_emb)
print(per_rank_bytes(total, 2, False, False))
print(shard_shape([151936, 2048], 2, 0), shard_shape([1024, 2048], 2, 1))

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'param_count': {'calls': [{'args': [2048, 28, 16, 8, 128, 6144, 151936, True],
                            'kwargs': {},
                            'public': True,
                            'expect': [1720574976, 1409410048],
                            'label': 'Qwen3-1.7B',
                            'rules': ['attention', 'gqa', 'norms', 'ffn', 'tied_head', 'non_embedding']},
                           {'args': [1024, 28, 16, 8, 128, 3072, 151936, True],
                            'kwargs': {},
                            'public': False,
                            'expect': [596049920, 440467456],
                            'rules': ['ffn', 'norms']},
                           {'args': [2560, 36, 32, 8, 128, 9728, 151936, True],
                            'kwargs': {},
                            'public': False,
                            'expect': [4022468096, 3633511936],
                            'rules': ['attention', 'gqa']},
                           {'args': [4096, 36, 32, 8, 128, 12288, 151936, False],
                            'kwargs': {},
                            'public': False,
                            'expect': [8190735360, 6946075648],
                            'rules': ['tied_head', 'non_embedding']},
                           {'args': [256, 8, 16, 8, 128, 3072, 2048, True],
                            'kwargs': {},
                            'public': False,
                            'expect': [31987968, 31463680],
                            'rules': ['attention', 'norms']}],
                 'compare': 'exact',
                 'feedback': {'en': 'Count q/k/v/o (GQA: k and v use n_kv_heads), both qk-norms, both block '
                                    'norms and the three FFN matrices per block; the tied head shares the '
                                    'embedding; non-embedding removes every vocab x dim matrix.',
                              'zh': '每层计入 q/k/v/o（GQA：k、v 用 n_kv_heads）、两个 qk-norm、两个层 norm 和三个 FFN '
                                    '矩阵；绑定的输出头与词嵌入共用；非嵌入参数要去掉所有 vocab x dim 矩阵。'}},
 'per_rank': {'calls': [{'args': [1720574976, 2, False, False],
                         'kwargs': {},
                         'public': True,
                         'expect': {'device': 13764599808, 'host': 0},
                         'label': '1.7B, shard 2, no offload',
                         'rules': ['bytes']},
                        {'args': [1720574976, 2, True, True],
                         'kwargs': {},
                         'public': True,
                         'expect': {'device': 0, 'host': 13764599808},
                         'label': '1.7B, shard 2, both offloads',
                         'rules': ['param_offload', 'optimizer_offload']},
                        {'args': [1720574976, 2, True, False],
                         'kwargs': {},
                         'public': False,
                         'expect': {'device': 6882299904, 'host': 6882299904},
                         'rules': ['param_offload']},
                        {'args': [1720574976, 2, False, True],
                         'kwargs': {},
                         'public': False,
                         'expect': {'device': 6882299904, 'host': 6882299904},
                         'rules': ['optimizer_offload']},
                        {'args': [1720574976, 4, False, True],
                         'kwargs': {},
                         'public': False,
                         'expect': {'device': 3441149952, 'host': 3441149952},
                         'rules': ['optimizer_offload', 'ceil_shard']},
                        {'args': [1720574976, 1, False, False],
                         'kwargs': {},
                         'public': False,
                         'expect': {'device': 27529199616, 'host': 0},
                         'rules': ['bytes']},
                        {'args': [1001, 8, True, False],
                         'kwargs': {},
                         'public': False,
                         'expect': {'device': 1008, 'host': 1008},
                         'rules': ['ceil_shard', 'param_offload']},
                        {'args': [7, 2, False, False],
                         'kwargs': {},
                         'public': False,
                         'expect': {'device': 64, 'host': 0},
                         'rules': ['ceil_shard', 'bytes']}],
              'compare': 'exact',
              'feedback': {'en': 'Shard every state (params, grads, both AdamW moments) over the ranks with '
                                 'a ceiling division, then move params+grads or the AdamW state to the host '
                                 'as the flags say.',
                           'zh': '参数、梯度和两个 AdamW 矩都按 rank 向上取整切分，再根据开关把参数+梯度或 AdamW 状态放到 host。'}},
 'shard_shapes': {'calls': [{'args': [[151936, 2048], 2, 0],
                             'kwargs': {},
                             'public': True,
                             'expect': [75968, 2048],
                             'label': 'embedding [151936, 2048], rank 0',
                             'rules': ['ceil_chunk', 'other_dims']},
                            {'args': [[1024, 2048], 2, 1],
                             'kwargs': {},
                             'public': True,
                             'expect': [512, 2048],
                             'label': 'wk [1024, 2048], rank 1',
                             'rules': ['ceil_chunk', 'other_dims']},
                            {'args': [[5, 3], 4, 3],
                             'kwargs': {},
                             'public': False,
                             'expect': [0, 3],
                             'rules': ['trailing_rows']},
                            {'args': [[5, 3], 4, 2],
                             'kwargs': {},
                             'public': False,
                             'expect': [1, 3],
                             'rules': ['trailing_rows']},
                            {'args': [[151936, 2048], 8, 7],
                             'kwargs': {},
                             'public': False,
                             'expect': [18992, 2048],
                             'rules': ['ceil_chunk']},
                            {'args': [[2048], 2, 1],
                             'kwargs': {},
                             'public': False,
                             'expect': [1024],
                             'rules': ['other_dims']},
                            {'args': [[6144, 2048], 3, 2],
                             'kwargs': {},
                             'public': False,
                             'expect': [2048, 2048],
                             'rules': ['ceil_chunk', 'other_dims']},
                            {'args': [[7], 3, 2],
                             'kwargs': {},
                             'public': False,
                             'expect': [1],
                             'rules': ['ceil_chunk', 'trailing_rows']},
                            {'args': [[3, 4, 5], 4, 3],
                             'kwargs': {},
                             'public': False,
                             'expect': [0, 4, 5],
                             'rules': ['trailing_rows', 'other_dims']},
                            {'args': [[10, 2], 4, 3],
                             'kwargs': {},
                             'public': False,
                             'expect': [1, 2],
                             'rules': ['ceil_chunk', 'trailing_rows']}],
                  'compare': 'exact',
                  'feedback': {'en': 'torch.chunk uses ceil(d0/shard) rows per chunk, so trailing ranks can '
                                     'get fewer rows or none.',
                               'zh': 'torch.chunk 每块 ceil(d0/shard) 行，所以靠后的 rank 可能更少甚至 0 行。'}}}

RULES = {'param_count': [{'id': 'attention',
                  'stated': '`wo [dim, n_heads·head_dim]`',
                  'hint': {'en': 'Per block, wq and wo are n_heads*head_dim x dim each: head_dim times the '
                                 'head count need not equal dim.',
                           'zh': '每层的 wq 和 wo 各为 n_heads*head_dim × dim：head_dim 乘头数不一定等于 dim。'}},
                 {'id': 'gqa',
                  'stated': '`wk`/`wv [n_kv_heads·head_dim, dim]`',
                  'hint': {'en': 'GQA: wk and wv use n_kv_heads, not n_heads.',
                           'zh': 'GQA：wk 和 wv 用 n_kv_heads，而不是 n_heads。'}},
                 {'id': 'norms',
                  'stated': '`q_norm`/`k_norm [head_dim]`, `attention_norm`/`ffn_norm [dim]`',
                  'hint': {'en': 'Count the norms too: q_norm and k_norm (head_dim each) and the two block '
                                 'norms (dim each) per block, plus the final norm (dim).',
                           'zh': 'norm 也要计入：每层 q_norm、k_norm（各 head_dim）和两个层 norm（各 dim），再加最终 norm（dim）。'}},
                 {'id': 'ffn',
                  'stated': '`w1`/`w3 [ffn, dim]`, `w2 [dim, ffn]`',
                  'hint': {'en': 'The FFN has three ffn_dim x dim matrices per block (w1, w3, w2).',
                           'zh': 'FFN 每层有三个 ffn_dim × dim 的矩阵（w1、w3、w2）。'}},
                 {'id': 'tied_head',
                  'stated': 'when untied, the output head `[vocab, dim]`',
                  'hint': {'en': 'The output head is a separate vocab x dim matrix only when untied; a tied '
                                 'head shares the embedding.',
                           'zh': '只有不绑定时输出头才是单独的 vocab × dim 矩阵；绑定时它与词嵌入共用。'}},
                 {'id': 'non_embedding',
                  'stated': '= total minus the embedding and, when untied, the output head',
                  'hint': {'en': 'Non-embedding = total minus every vocab x dim matrix: the embedding and, '
                                 'when untied, the output head.',
                           'zh': '非嵌入参数 = 总数减去所有 vocab × dim 矩阵：词嵌入，以及不绑定时的输出头。'}}],
 'per_rank': [{'id': 'ceil_shard',
               'stated': 'each rank holds `ceil(P/shard)` parameters',
               'hint': {'en': 'Each rank holds ceil(n_params / shard) parameters: round up, not down.',
                        'zh': '每个 rank 持有 ceil(n_params / shard) 个参数：向上取整，不是向下。'}},
              {'id': 'bytes',
               'stated': 'fp32 params 4 B + fp32 grads 4 B + AdamW `exp_avg`/`exp_avg_sq` 4 B each',
               'hint': {'en': 'Per local parameter: 4 B fp32 param + 4 B fp32 grad + 4 B + 4 B for the two '
                              'AdamW moments, all sharded.',
                        'zh': '每个本地参数：fp32 参数 4 B + fp32 梯度 4 B + 两个 AdamW 矩各 4 B，全部分片。'}},
              {'id': 'param_offload',
               'stated': '`param_offload=True` keeps params and grads on the host',
               'hint': {'en': 'param_offload moves the params and the grads (8 B per local parameter) to the '
                              'host, nothing else.',
                        'zh': 'param_offload 只把参数和梯度（每个本地参数 8 B）放到 host。'}},
              {'id': 'optimizer_offload',
               'stated': '`optimizer_offload=True` keeps the AdamW state on the host',
               'hint': {'en': 'optimizer_offload moves the two AdamW moments (8 B per local parameter) to '
                              'the host, nothing else.',
                        'zh': 'optimizer_offload 只把两个 AdamW 矩（每个本地参数 8 B）放到 host。'}}],
 'shard_shapes': [{'id': 'ceil_chunk',
                   'stated': 'chunk size `ceil(d0/shard)`',
                   'hint': {'en': 'torch.chunk uses ceil(d0/shard) rows per chunk, not floor.',
                            'zh': 'torch.chunk 每块 ceil(d0/shard) 行，不是向下取整。'}},
                  {'id': 'trailing_rows',
                   'stated': 'rank r gets `max(0, min(chunk, d0 − r·chunk))` rows (possibly 0)',
                   'hint': {'en': 'Trailing ranks can get fewer rows than the chunk size, or none at all: '
                                  'never a negative count.',
                            'zh': '靠后的 rank 可能比块大小少，甚至 0 行，但不会是负数。'}},
                  {'id': 'other_dims',
                   'stated': 'and keeps the other dims',
                   'hint': {'en': 'Only dim 0 is split; every other dimension is kept as is, and a 1-D '
                                  'parameter gives a 1-element shape.',
                            'zh': '只切第 0 维，其余维度保持不变；一维参数得到只有一个元素的形状。'}}]}

MISTAKES = [{'name': 'adam_not_sharded',
  'score': 7.375,
  'fails': {'per_rank': '1.7B, shard 2, no offload'},
  'patch': [{'find': '    adam_state = (4 + 4) * local', 'replace': '    adam_state = (4 + 4) * n_params'}]},
 {'name': 'floor_chunk',
  'score': 9.1,
  'fails': {'shard_shapes': 'hidden'},
  'patch': [{'find': '    chunk = -(-global_shape[0] // shard)',
             'replace': '    chunk = global_shape[0] // shard'}]},
 {'name': 'tied_head_counted',
  'score': 6.8,
  'fails': {'param_count': 'Qwen3-1.7B'},
  'patch': [{'find': '    embeddings = vocab * dim if tied else 2 * vocab * dim',
             'replace': '    embeddings = 2 * vocab * dim'}]},
 {'name': 'kv_as_q_heads',
  'score': 6.0,
  'fails': {'param_count': 'hidden'},
  'patch': [{'find': '    attention = dim * n_heads * head_dim * 2 + dim * n_kv_heads * head_dim * 2 + 2 * '
                     'head_dim',
             'replace': '    attention = dim * n_heads * head_dim * 4 + 2 * head_dim  # q, k, v, o'}]},
 {'name': 'param_offload_moves_all',
  'score': 9.25,
  'fails': {'per_rank': 'hidden'},
  'patch': [{'find': '    device = (0 if param_offload else params_and_grads) + (0 if optimizer_offload else '
                     'adam_state)',
             'replace': '    device = 0 if param_offload else params_and_grads + (0 if optimizer_offload '
                        'else adam_state)'}]}]

