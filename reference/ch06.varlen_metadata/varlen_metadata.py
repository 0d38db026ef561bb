# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · TND 变长注意力：`VarlenMetadata` 与融合注意力参数
#
# `attn_type=varlen` 时，一个 batch 里打包了多条文档（样本），注意力只能在文档内部做因果计算。torchtitan 的
# `VarlenMetadata` 用 `cu_seq_q` / `cu_seq_k`（累计偏移 0…B·S）和 `max_q` / `max_k`（最长文档长度）描述边界。
#
# - **verl 的构造方式**（按 position）：在第 0 列以及 `diff(positions) != 1` 的位置开始新文档；第 b 行整体偏移 b·S；末尾追加 B·S；
#   `max` 是最长文档长度；类型 int32。
# - **上游的构造方式**（按 EOS）：在每个 EOS token **之后**开始新文档（每行第 0 列也开始一个）。
#   chat 模板会在对话中间插入 EOS，所以 torchtitan-npu 的文档建议用 position。
#
# 示例：positions `[[0,1,2,0,1,0],[0,1,0,1,2,3]]` → `[0,3,5,6,8,12]`，max 4；
# tokens `[10,0,11,12,13,14,0,15]`、positions `[0,1,2,3,4,0,1,2]` → 按 position `[0,5,8]`（max 5），按 EOS(0) 则是 `[0,2,7,8]`。
#
# **NPU 融合注意力** `torch.ops.npu.npu_fusion_attention_v3`（TND 布局）：q 变成 `[B·S, 头数, head_dim]`（1.7B：q 16 头、kv 8 头、
# head_dim 128），`input_layout="TND"`，`head_num` = 本卡 q 头数，`scale = head_dim^-0.5`（0.0883883），`next_tockens=0`，
# `keep_prob=1`，`actual_seq_qlen = actual_seq_kvlen = cu_seq[1:]`，`sparse_mode=7`（varlen 外接场景、rightDownCausal）。
# 本机没有 NPU，这里只计算参数，不调用算子。
#
# ---
#
# # 06 · TND varlen attention: `VarlenMetadata` and the fused-attention arguments
#
# With `attn_type=varlen` a batch packs several documents (samples); attention must stay causal *inside* each document.
# torchtitan's `VarlenMetadata` holds `cu_seq_q` / `cu_seq_k` (cumulative offsets 0…B·S) and `max_q` / `max_k` (the longest
# document).
#
# - **verl's builder** (positions): a document starts at column 0 and wherever `diff(positions) != 1`; row b is offset by
#   b·S; B·S is appended; `max` is the longest length; dtype int32.
# - **the upstream builder** (EOS): a new document starts right **after** each EOS token (and at column 0 of each row).
#   Chat templates insert EOS mid-conversation, which is why torchtitan-npu's docs say to use positions.
#
# Examples: positions `[[0,1,2,0,1,0],[0,1,0,1,2,3]]` → `[0,3,5,6,8,12]`, max 4; tokens `[10,0,11,12,13,14,0,15]` with
# positions `[0,1,2,3,4,0,1,2]` → `[0,5,8]` (max 5) by positions, but `[0,2,7,8]` by EOS (0).
#
# **NPU fused attention** `torch.ops.npu.npu_fusion_attention_v3` (TND layout): q becomes `[B·S, heads, head_dim]` (1.7B:
# 16 q heads, 8 kv heads, head_dim 128), `input_layout="TND"`, `head_num` = local q heads, `scale = head_dim^-0.5`
# (0.0883883), `next_tockens=0`, `keep_prob=1`, `actual_seq_qlen = actual_seq_kvlen = cu_seq[1:]`, `sparse_mode=7`
# (varlen circumscribed, rightDownCausal). There is no NPU here: we compute the arguments, we do not call the kernel.

# %% [markdown]
# ## 任务
# 1. `varlen_from_positions(positions) -> dict`：输入 `[B, S]` 整数张量，返回 `{"cu_seq_q", "cu_seq_k", "max_q", "max_k"}`，两个 cu 都是 **int32** 张量，max 是 Python int。
# 2. `varlen_from_eos(tokens, eos_id) -> dict`：同上，按 EOS 切分。逐行处理：每行第 0 列开始一个文档，每个 EOS 之后的那一列
#    开始一个新文档；EOS 落在一行的**最后一列**时不产生新文档（不会有空文档，下一行本来就从第 0 列开始）。
# 3. `fa_v3_args(cu_seq, n_heads, n_kv_heads, head_dim) -> dict`：键为 `input_layout, q_shape, kv_shape, head_num, scale, next_tockens, keep_prob, actual_seq_qlen, actual_seq_kvlen, sparse_mode`（形状与长度用 list）。
#
# ---
#
# ## Tasks
# 1. `varlen_from_positions(positions) -> dict`: a `[B, S]` integer tensor in, `{"cu_seq_q", "cu_seq_k", "max_q", "max_k"}`
#    out; both cu tensors **int32**, the maxima Python ints.
# 2. `varlen_from_eos(tokens, eos_id) -> dict`: the same, split after EOS. Work row by row: column 0 of each row starts
#    a document, and so does the column right after each EOS; an EOS in a row's **last column** starts nothing (no empty
#    documents: the next row starts at its own column 0 anyway).
# 3. `fa_v3_args(cu_seq, n_heads, n_kv_heads, head_dim) -> dict` with keys `input_layout, q_shape, kv_shape, head_num,
#    scale, next_tockens, keep_prob, actual_seq_qlen, actual_seq_kvlen, sparse_mode` (shapes and lengths as lists).

# %%
import torch


### BEGIN SOLUTION
def _metadata(is_start):
    """is_start: [B, S] bool, True where a document begins -> VarlenMetadata fields."""
    B, S = is_start.shape
    starts = [torch.nonzero(is_start[b]).flatten() + b * S for b in range(B)]
    cu = torch.cat(starts + [torch.tensor([B * S])]).to(torch.int32)
    longest = int((cu[1:] - cu[:-1]).max())
    return {"cu_seq_q": cu, "cu_seq_k": cu.clone(), "max_q": longest, "max_k": longest}


### STUB
### END SOLUTION
def varlen_from_positions(positions):
    ### BEGIN SOLUTION
    positions = torch.as_tensor(positions)
    is_start = torch.ones(positions.shape, dtype=torch.bool)
    is_start[:, 1:] = (positions[:, 1:] - positions[:, :-1]) != 1
    return _metadata(is_start)
    ### STUB
    # raise NotImplementedError("varlen_from_positions")
    ### END SOLUTION


def varlen_from_eos(tokens, eos_id):
    ### BEGIN SOLUTION
    tokens = torch.as_tensor(tokens)
    is_start = torch.ones(tokens.shape, dtype=torch.bool)
    is_start[:, 1:] = tokens[:, :-1] == eos_id
    return _metadata(is_start)
    ### STUB
    # raise NotImplementedError("varlen_from_eos")
    ### END SOLUTION


def fa_v3_args(cu_seq, n_heads, n_kv_heads, head_dim):
    ### BEGIN SOLUTION
    cu = [int(x) for x in cu_seq]
    total = cu[-1]
    return {
        "input_layout": "TND",
        "q_shape": [total, n_heads, head_dim],
        "kv_shape": [total, n_kv_heads, head_dim],
        "head_num": n_heads,
        "scale": head_dim ** -0.5,
        "next_tockens": 0,
        "keep_prob": 1.0,
        "actual_seq_qlen": cu[1:],
        "actual_seq_kvlen": cu[1:],
        "sparse_mode": 7,
    }
    ### STUB
    # raise NotImplementedError("fa_v3_args")
    ### END SOLUTION

# %% tags=["harness"]
# Read by the grader: the dtype your builders produce (must be torch.int32, as torch.equal needs).
# (grader-owned: grading re-runs this cell exactly as shipped, after your cells, and reads the values from that run.)
CU_SEQ_DTYPES = [str(varlen_from_positions(torch.tensor([[0, 1, 0, 1]]))["cu_seq_q"].dtype),
                 str(varlen_from_eos(torch.tensor([[3, 0, 3, 3]]), 0)["cu_seq_k"].dtype)]
print(CU_SEQ_DTYPES)

# %%
# Public self-check with the course's vectors
m = varlen_from_positions(torch.tensor([[0, 1, 2, 0, 1, 0], [0, 1, 0, 1, 2, 3]]))
print(m, torch.equal(m["cu_seq_q"], torch.tensor([0, 3, 5, 6, 8, 12], dtype=torch.int32)))
print(varlen_from_positions(torch.tensor([[0, 1, 2, 3, 4, 0, 1, 2]])))
print(varlen_from_eos(torch.tensor([[10, 0, 11, 12, 13, 14, 0, 15]]), 0))
print(fa_v3_args(torch.tensor([0, 3, 8], dtype=torch.int32), 16, 8, 128))

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'positions_builder': {'calls': [{'args': [{'__tensor__': {'dtype': 'int64',
                                                           'shape': [2, 6],
                                                           'data': [[0, 1, 2, 0, 1, 0],
                                                                    [0, 1, 0, 1, 2, 3]]}}],
                                  'kwargs': {},
                                  'public': True,
                                  'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [6],
                                                                         'data': [0, 3, 5, 6, 8, 12]}},
                                             'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [6],
                                                                         'data': [0, 3, 5, 6, 8, 12]}},
                                             'max_q': 4,
                                             'max_k': 4},
                                  'label': 'positions [[0,1,2,0,1,0],[0,1,0,1,2,3]]',
                                  'rules': ['pos_starts', 'row_offset', 'max_len']},
                                 {'args': [{'__tensor__': {'dtype': 'int64',
                                                           'shape': [1, 8],
                                                           'data': [[0, 1, 2, 3, 4, 0, 1, 2]]}}],
                                  'kwargs': {},
                                  'public': True,
                                  'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [3],
                                                                         'data': [0, 5, 8]}},
                                             'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [3],
                                                                         'data': [0, 5, 8]}},
                                             'max_q': 5,
                                             'max_k': 5},
                                  'label': 'positions [[0,1,2,3,4,0,1,2]]',
                                  'rules': ['pos_starts', 'max_len']},
                                 {'args': [{'__tensor__': {'dtype': 'int64',
                                                           'shape': [1, 8],
                                                           'data': [[0, 1, 2, 3, 4, 5, 6, 7]]}}],
                                  'kwargs': {},
                                  'public': False,
                                  'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [2],
                                                                         'data': [0, 8]}},
                                             'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [2],
                                                                         'data': [0, 8]}},
                                             'max_q': 8,
                                             'max_k': 8},
                                  'rules': ['pos_starts', 'max_len']},
                                 {'args': [{'__tensor__': {'dtype': 'int64',
                                                           'shape': [1, 5],
                                                           'data': [[5, 6, 7, 0, 1]]}}],
                                  'kwargs': {},
                                  'public': False,
                                  'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [3],
                                                                         'data': [0, 3, 5]}},
                                             'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [3],
                                                                         'data': [0, 3, 5]}},
                                             'max_q': 3,
                                             'max_k': 3},
                                  'rules': ['pos_starts']},
                                 {'args': [{'__tensor__': {'dtype': 'int64',
                                                           'shape': [1, 3],
                                                           'data': [[0, 0, 0]]}}],
                                  'kwargs': {},
                                  'public': False,
                                  'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [4],
                                                                         'data': [0, 1, 2, 3]}},
                                             'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [4],
                                                                         'data': [0, 1, 2, 3]}},
                                             'max_q': 1,
                                             'max_k': 1},
                                  'rules': ['pos_starts', 'max_len']},
                                 {'args': [{'__tensor__': {'dtype': 'int64',
                                                           'shape': [3, 5],
                                                           'data': [[0, 1, 0, 1, 2],
                                                                    [0, 1, 2, 3, 4],
                                                                    [0, 0, 1, 2, 0]]}}],
                                  'kwargs': {},
                                  'public': False,
                                  'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [7],
                                                                         'data': [0, 2, 5, 10, 11, 14, 15]}},
                                             'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [7],
                                                                         'data': [0, 2, 5, 10, 11, 14, 15]}},
                                             'max_q': 5,
                                             'max_k': 5},
                                  'rules': ['pos_starts', 'row_offset']},
                                 {'args': [{'__tensor__': {'dtype': 'int64',
                                                           'shape': [2, 5],
                                                           'data': [[0, 1, 2, 2, 3], [3, 4, 5, 0, 1]]}}],
                                  'kwargs': {},
                                  'public': False,
                                  'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [5],
                                                                         'data': [0, 3, 5, 8, 10]}},
                                             'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                         'shape': [5],
                                                                         'data': [0, 3, 5, 8, 10]}},
                                             'max_q': 3,
                                             'max_k': 3},
                                  'rules': ['pos_starts', 'row_offset']}],
                       'compare': 'exact',
                       'feedback': {'en': 'A document starts at column 0 and where positions do not step by '
                                          '+1; offset row b by b*S and append B*S.',
                                    'zh': '文档在第 0 列以及 position 不是 +1 递增处开始；第 b 行偏移 b*S，末尾追加 B*S。'}},
 'eos_builder': {'calls': [{'args': [{'__tensor__': {'dtype': 'int64',
                                                     'shape': [1, 8],
                                                     'data': [[10, 0, 11, 12, 13, 14, 0, 15]]}},
                                     0],
                            'kwargs': {},
                            'public': True,
                            'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [4],
                                                                   'data': [0, 2, 7, 8]}},
                                       'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [4],
                                                                   'data': [0, 2, 7, 8]}},
                                       'max_q': 5,
                                       'max_k': 5},
                            'label': 'tokens [[10,0,11,12,13,14,0,15]], eos 0',
                            'rules': ['after_eos']},
                           {'args': [{'__tensor__': {'dtype': 'int64',
                                                     'shape': [1, 5],
                                                     'data': [[1, 2, 9, 3, 9]]}},
                                     9],
                            'kwargs': {},
                            'public': False,
                            'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [3],
                                                                   'data': [0, 3, 5]}},
                                       'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [3],
                                                                   'data': [0, 3, 5]}},
                                       'max_q': 3,
                                       'max_k': 3},
                            'rules': ['after_eos', 'last_column']},
                           {'args': [{'__tensor__': {'dtype': 'int64',
                                                     'shape': [2, 3],
                                                     'data': [[9, 1, 1], [1, 9, 1]]}},
                                     9],
                            'kwargs': {},
                            'public': False,
                            'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [5],
                                                                   'data': [0, 1, 3, 5, 6]}},
                                       'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [5],
                                                                   'data': [0, 1, 3, 5, 6]}},
                                       'max_q': 2,
                                       'max_k': 2},
                            'rules': ['per_row', 'after_eos']},
                           {'args': [{'__tensor__': {'dtype': 'int64',
                                                     'shape': [1, 4],
                                                     'data': [[4, 4, 4, 4]]}},
                                     0],
                            'kwargs': {},
                            'public': False,
                            'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [2],
                                                                   'data': [0, 4]}},
                                       'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [2],
                                                                   'data': [0, 4]}},
                                       'max_q': 4,
                                       'max_k': 4},
                            'rules': ['per_row']},
                           {'args': [{'__tensor__': {'dtype': 'int64',
                                                     'shape': [2, 4],
                                                     'data': [[7, 7, 2, 7], [2, 2, 2, 2]]}},
                                     2],
                            'kwargs': {},
                            'public': False,
                            'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [7],
                                                                   'data': [0, 3, 4, 5, 6, 7, 8]}},
                                       'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [7],
                                                                   'data': [0, 3, 4, 5, 6, 7, 8]}},
                                       'max_q': 3,
                                       'max_k': 3},
                            'rules': ['per_row', 'last_column']},
                           {'args': [{'__tensor__': {'dtype': 'int64',
                                                     'shape': [2, 3],
                                                     'data': [[5, 3, 5], [3, 3, 5]]}},
                                     5],
                            'kwargs': {},
                            'public': False,
                            'expect': {'cu_seq_q': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [4],
                                                                   'data': [0, 1, 3, 6]}},
                                       'cu_seq_k': {'__tensor__': {'dtype': 'int32',
                                                                   'shape': [4],
                                                                   'data': [0, 1, 3, 6]}},
                                       'max_q': 3,
                                       'max_k': 3},
                            'rules': ['last_column', 'per_row']}],
                 'compare': 'exact',
                 'feedback': {'en': 'Split right after each EOS token (the EOS belongs to the document it '
                                    'ends), per row, with row offsets.',
                              'zh': '在每个 EOS 之后切分（EOS 属于它结束的那个文档），逐行处理并加上行偏移。'}},
 'int32': {'expected': ['torch.int32', 'torch.int32'],
           'feedback': {'en': 'cu_seq tensors must be int32 (torch.equal compares dtypes too).',
                        'zh': 'cu_seq 张量必须是 int32（torch.equal 也比较 dtype）。'}},
 'fa_args': {'calls': [{'args': [{'__tensor__': {'dtype': 'int32', 'shape': [3], 'data': [0, 3, 8]}},
                                 16,
                                 8,
                                 128],
                        'kwargs': {},
                        'public': True,
                        'expect': {'input_layout': 'TND',
                                   'q_shape': [8, 16, 128],
                                   'kv_shape': [8, 8, 128],
                                   'head_num': 16,
                                   'scale': 0.08838834764831845,
                                   'next_tockens': 0,
                                   'keep_prob': 1.0,
                                   'actual_seq_qlen': [3, 8],
                                   'actual_seq_kvlen': [3, 8],
                                   'sparse_mode': 7},
                        'label': 'cu [0,3,8], 16/8 heads, head_dim 128',
                        'rules': ['tnd_shapes', 'head_num', 'scale', 'actual_lens', 'constants']},
                       {'args': [{'__tensor__': {'dtype': 'int32', 'shape': [4], 'data': [0, 5, 8, 12]}},
                                 8,
                                 4,
                                 128],
                        'kwargs': {},
                        'public': False,
                        'expect': {'input_layout': 'TND',
                                   'q_shape': [12, 8, 128],
                                   'kv_shape': [12, 4, 128],
                                   'head_num': 8,
                                   'scale': 0.08838834764831845,
                                   'next_tockens': 0,
                                   'keep_prob': 1.0,
                                   'actual_seq_qlen': [5, 8, 12],
                                   'actual_seq_kvlen': [5, 8, 12],
                                   'sparse_mode': 7},
                        'rules': ['head_num', 'tnd_shapes', 'actual_lens']},
                       {'args': [{'__tensor__': {'dtype': 'int32', 'shape': [5], 'data': [0, 4, 6, 10, 16]}},
                                 4,
                                 2,
                                 64],
                        'kwargs': {},
                        'public': False,
                        'expect': {'input_layout': 'TND',
                                   'q_shape': [16, 4, 64],
                                   'kv_shape': [16, 2, 64],
                                   'head_num': 4,
                                   'scale': 0.125,
                                   'next_tockens': 0,
                                   'keep_prob': 1.0,
                                   'actual_seq_qlen': [4, 6, 10, 16],
                                   'actual_seq_kvlen': [4, 6, 10, 16],
                                   'sparse_mode': 7},
                        'rules': ['scale', 'tnd_shapes', 'constants']},
                       {'args': [{'__tensor__': {'dtype': 'int32', 'shape': [2], 'data': [0, 2048]}},
                                 16,
                                 8,
                                 128],
                        'kwargs': {},
                        'public': False,
                        'expect': {'input_layout': 'TND',
                                   'q_shape': [2048, 16, 128],
                                   'kv_shape': [2048, 8, 128],
                                   'head_num': 16,
                                   'scale': 0.08838834764831845,
                                   'next_tockens': 0,
                                   'keep_prob': 1.0,
                                   'actual_seq_qlen': [2048],
                                   'actual_seq_kvlen': [2048],
                                   'sparse_mode': 7},
                        'rules': ['actual_lens', 'constants']}],
             'compare': 'numeric',
             'rtol': 0,
             'atol': 1e-07,
             'feedback': {'en': 'TND flattens batch and sequence into T; head_num is the local q head count; '
                                'scale is head_dim**-0.5; actual lengths are cumulative ends; varlen uses '
                                'sparse_mode 7.',
                          'zh': 'TND 把 batch 和序列合并为 T；head_num 是本卡 q 头数；scale 为 head_dim**-0.5；actual '
                                '长度是累计终点；varlen 用 sparse_mode 7。'}}}

RULES = {'positions_builder': [{'id': 'pos_starts',
                        'stated': 'a document starts at column 0 and wherever `diff(positions) != 1`',
                        'hint': {'en': 'A document starts at column 0 and wherever positions do not step by '
                                       '+1 (a repeated or decreasing position starts one too).',
                                 'zh': '文档在第 0 列以及 position 不是 +1 递增处开始（position 重复或变小也开始新文档）。'}},
                       {'id': 'row_offset',
                        'stated': 'row b is offset by b·S; B·S is appended',
                        'hint': {'en': 'Offset the starts of row b by b*S and append B*S once at the end.',
                                 'zh': '第 b 行的起点偏移 b*S，末尾追加一次 B*S。'}},
                       {'id': 'max_len',
                        'stated': '`max` is the longest length',
                        'hint': {'en': 'max_q and max_k are the longest document length, as Python ints.',
                                 'zh': 'max_q 和 max_k 是最长文档的长度（Python int）。'}}],
 'eos_builder': [{'id': 'after_eos',
                  'stated': 'and so does the column right after each EOS',
                  'hint': {'en': 'Split right after each EOS token (the EOS belongs to the document it '
                                 'ends), not before it.',
                           'zh': '在每个 EOS 之后切分（EOS 属于它结束的那个文档），不是之前。'}},
                 {'id': 'per_row',
                  'stated': 'Work row by row: column 0 of each row starts a document',
                  'hint': {'en': 'Work row by row, with row offsets: column 0 of every row starts a '
                                 'document, whatever the previous row ended with.',
                           'zh': '逐行处理并加上行偏移：每行第 0 列都开始一个文档，与上一行结尾无关。'}},
                 {'id': 'last_column',
                  'stated': "an EOS in a row's **last column** starts nothing",
                  'hint': {'en': "An EOS in a row's last column starts no document: never produce an empty "
                                 'document.',
                           'zh': 'EOS 在一行最后一列时不开始新文档：不能产生空文档。'}}],
 'int32': [{'id': 'int32',
            'stated': 'both cu tensors **int32**',
            'hint': {'en': 'cu_seq tensors must be int32 (torch.equal compares dtypes too).',
                     'zh': 'cu_seq 张量必须是 int32（torch.equal 也比较 dtype）。'}}],
 'fa_args': [{'id': 'tnd_shapes',
              'stated': 'q becomes `[B·S, heads, head_dim]`',
              'hint': {'en': 'TND flattens batch and sequence into T = cu_seq[-1]: q is [T, n_heads, '
                             'head_dim] and kv is [T, n_kv_heads, head_dim].',
                       'zh': 'TND 把 batch 和序列合并为 T = cu_seq[-1]：q 为 [T, n_heads, head_dim]，kv 为 [T, '
                             'n_kv_heads, head_dim]。'}},
             {'id': 'head_num',
              'stated': '`head_num` = local q heads',
              'hint': {'en': 'head_num is the local q head count, not the kv head count.',
                       'zh': 'head_num 是本卡 q 头数，不是 kv 头数。'}},
             {'id': 'scale',
              'stated': '`scale = head_dim^-0.5`',
              'hint': {'en': 'scale is head_dim ** -0.5, from the head dimension given.',
                       'zh': 'scale 为 head_dim ** -0.5，用给定的 head_dim 计算。'}},
             {'id': 'actual_lens',
              'stated': '`actual_seq_qlen = actual_seq_kvlen = cu_seq[1:]`',
              'hint': {'en': 'actual_seq_qlen and actual_seq_kvlen are both cu_seq[1:]: the cumulative ends, '
                             'not the lengths.',
                       'zh': 'actual_seq_qlen 和 actual_seq_kvlen 都是 cu_seq[1:]：累计终点，而不是各段长度。'}},
             {'id': 'constants',
              'stated': '`sparse_mode=7` (varlen circumscribed, rightDownCausal)',
              'hint': {'en': "The fixed arguments: input_layout 'TND', next_tockens 0, keep_prob 1 and "
                             'sparse_mode 7 for varlen.',
                       'zh': "固定参数：input_layout 'TND'、next_tockens 0、keep_prob 1，varlen 用 sparse_mode 7。"}}]}

MISTAKES = [{'name': 'int64_offsets',
  'score': 9.0,
  'fails': {'int32': 'int32'},
  'patch': [{'find': '    cu = torch.cat(starts + [torch.tensor([B * S])]).to(torch.int32)',
             'replace': '    cu = torch.cat(starts + [torch.tensor([B * S])])'}]},
 {'name': 'no_row_offset',
  'score': 7.2143,
  'fails': {'positions_builder': 'positions [[0,1,2,0,1,0],[0,1,0,1,2,3]]'},
  'patch': [{'find': '    starts = [torch.nonzero(is_start[b]).flatten() + b * S for b in range(B)]',
             'replace': '    starts = [torch.nonzero(is_start[b]).flatten() for b in range(B)]'}]},
 {'name': 'sparse_mode_causal',
  'score': 7.0,
  'fails': {'fa_args': 'cu [0,3,8], 16/8 heads, head_dim 128'},
  'patch': [{'find': '        "sparse_mode": 7,', 'replace': '        "sparse_mode": 3,'}]},
 {'name': 'split_before_eos',
  'score': 7.5,
  'fails': {'eos_builder': 'tokens [[10,0,11,12,13,14,0,15]], eos 0'},
  'patch': [{'find': '    is_start[:, 1:] = tokens[:, :-1] == eos_id',
             'replace': '    is_start[:, 1:] = tokens[:, 1:] == eos_id'}]},
 {'name': 'eos_one_stream',
  'score': 8.0,
  'fails': {'eos_builder': 'row offset'},
  'patch': [{'find': '    is_start[:, 1:] = tokens[:, :-1] == eos_id\n    return _metadata(is_start)',
             'replace': '    flat = tokens.flatten()  # one stream: row starts are not document starts\n'
                        '    starts = [0] + [i + 1 for i in range(flat.numel()) if flat[i] == eos_id]\n'
                        '    cu = torch.tensor(starts + [flat.numel()], dtype=torch.int32)\n'
                        '    longest = int((cu[1:] - cu[:-1]).max())\n'
                        '    return {"cu_seq_q": cu, "cu_seq_k": cu.clone(), "max_q": longest, "max_k": '
                        'longest}'}]},
 {'name': 'eos_last_column_empty_doc',
  'score': 8.5,
  'fails': {'eos_builder': 'hidden'},
  'patch': [{'find': '    is_start[:, 1:] = tokens[:, :-1] == eos_id\n    return _metadata(is_start)',
             'replace': '    B, S = tokens.shape\n'
                        '    starts = []\n'
                        '    for b in range(B):  # a new document after every EOS\n'
                        '        starts += [b * S] + [b * S + i + 1 for i in range(S) if int(tokens[b, i]) '
                        '== eos_id]\n'
                        '    cu = torch.tensor(starts + [B * S], dtype=torch.int32)\n'
                        '    longest = int((cu[1:] - cu[:-1]).max())\n'
                        '    return {"cu_seq_q": cu, "cu_seq_k": cu.clone(), "max_q": longest, "max_k": '
                        'longest}'}]}]

EQUIVALENT = [{'mutant': 'stmt_drop:8fb87884:1',
  'reason': "the builder is given a [B, S] integer tensor (the task's stated input), for which "
            'torch.as_tensor returns the same tensor: dropping the call changes nothing'},
 {'mutant': 'stmt_drop:911da841:1',
  'reason': "the builder is given a [B, S] integer tensor (the task's stated input), for which "
            'torch.as_tensor returns the same tensor: dropping the call changes nothing'}]
