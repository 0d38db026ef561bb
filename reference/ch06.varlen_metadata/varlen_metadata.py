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
# 2. `varlen_from_eos(tokens, eos_id) -> dict`：同上，按 EOS 切分。
# 3. `fa_v3_args(cu_seq, n_heads, n_kv_heads, head_dim) -> dict`：键为 `input_layout, q_shape, kv_shape, head_num, scale, next_tockens, keep_prob, actual_seq_qlen, actual_seq_kvlen, sparse_mode`（形状与长度用 list）。
#
# ---
#
# ## Tasks
# 1. `varlen_from_positions(positions) -> dict`: a `[B, S]` integer tensor in, `{"cu_seq_q", "cu_seq_k", "max_q", "max_k"}`
#    out; both cu tensors **int32**, the maxima Python ints.
# 2. `varlen_from_eos(tokens, eos_id) -> dict`: the same, split after EOS.
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
                                  'label': 'positions [[0,1,2,0,1,0],[0,1,0,1,2,3]]'},
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
                                  'label': 'positions [[0,1,2,3,4,0,1,2]]'},
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
                                             'max_k': 8}},
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
                                             'max_k': 3}},
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
                                             'max_k': 1}},
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
                                             'max_k': 5}}],
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
                            'label': 'tokens [[10,0,11,12,13,14,0,15]], eos 0'},
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
                                       'max_k': 3}},
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
                                       'max_k': 2}},
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
                                       'max_k': 4}},
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
                                       'max_k': 3}}],
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
                        'label': 'cu [0,3,8], 16/8 heads, head_dim 128'},
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
                                   'sparse_mode': 7}},
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
                                   'sparse_mode': 7}},
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
                                   'sparse_mode': 7}}],
             'compare': 'numeric',
             'rtol': 0,
             'atol': 1e-07,
             'feedback': {'en': 'TND flattens batch and sequence into T; head_num is the local q head count; '
                                'scale is head_dim**-0.5; actual lengths are cumulative ends; varlen uses '
                                'sparse_mode 7.',
                          'zh': 'TND 把 batch 和序列合并为 T；head_num 是本卡 q 头数；scale 为 head_dim**-0.5；actual '
                                '长度是累计终点；varlen 用 sparse_mode 7。'}}}

MISTAKES = [{'name': 'int64_offsets',
  'score': 9.0,
  'fails': {'int32': 'int32'},
  'patch': [{'find': '    cu = torch.cat(starts + [torch.tensor([B * S])]).to(torch.int32)',
             'replace': '    cu = torch.cat(starts + [torch.tensor([B * S])])'}]},
 {'name': 'no_row_offset',
  'score': 7.8,
  'fails': {'positions_builder': 'positions [[0,1,2,0,1,0],[0,1,0,1,2,3]]'},
  'patch': [{'find': '    starts = [torch.nonzero(is_start[b]).flatten() + b * S for b in range(B)]',
             'replace': '    starts = [torch.nonzero(is_start[b]).flatten() for b in range(B)]'}]},
 {'name': 'sparse_mode_causal',
  'score': 7.0,
  'fails': {'fa_args': 'cu [0,3,8], 16/8 heads, head_dim 128'},
  'patch': [{'find': '        "sparse_mode": 7,', 'replace': '        "sparse_mode": 3,'}]},
 {'name': 'split_before_eos',
  'score': 7.6,
  'fails': {'eos_builder': 'tokens [[10,0,11,12,13,14,0,15]], eos 0'},
  'patch': [{'find': '    is_start[:, 1:] = tokens[:, :-1] == eos_id',
             'replace': '    is_start[:, 1:] = tokens[:, 1:] == eos_id'}]}]
