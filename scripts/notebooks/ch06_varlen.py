"""ch06.varlen_metadata: VarlenMetadata builders (positions / EOS) and the NPU fused-attention TND arguments."""
from __future__ import annotations

from ch05_06_common import Mistake, Spec, answer, call, code, fb, md


def tensor(data, dtype="int64") -> dict:
    """Codec encoding of an integer tensor (docs/exercise-format.md)."""
    shape, probe = [], data
    while isinstance(probe, list):
        shape.append(len(probe))
        probe = probe[0] if probe else None
    return {"__tensor__": {"dtype": dtype, "shape": shape, "data": data}}


def _meta(starts_per_row: list[list[int]], S: int) -> dict:
    cu = [s + b * S for b, row in enumerate(starts_per_row) for s in row] + [len(starts_per_row) * S]
    m = max(b - a for a, b in zip(cu, cu[1:]))
    return {"cu_seq_q": tensor(cu, "int32"), "cu_seq_k": tensor(cu, "int32"), "max_q": m, "max_k": m}


def ref_positions(rows: list[list[int]]) -> dict:
    starts = [[i for i in range(len(r)) if i == 0 or r[i] - r[i - 1] != 1] for r in rows]
    return _meta(starts, len(rows[0]))


def ref_eos(rows: list[list[int]], eos: int) -> dict:
    starts = [[i for i in range(len(r)) if i == 0 or r[i - 1] == eos] for r in rows]
    return _meta(starts, len(rows[0]))


def ref_fa(cu: list[int], n_heads: int, n_kv: int, head_dim: int) -> dict:
    return {"input_layout": "TND", "q_shape": [cu[-1], n_heads, head_dim], "kv_shape": [cu[-1], n_kv, head_dim],
            "head_num": n_heads, "scale": head_dim ** -0.5, "next_tockens": 0, "keep_prob": 1.0,
            "actual_seq_qlen": cu[1:], "actual_seq_kvlen": cu[1:], "sparse_mode": 7}


INTRO = md("""
# 06 · TND 变长注意力：`VarlenMetadata` 与融合注意力参数

`attn_type=varlen` 时，一个 batch 里打包了多条文档（样本），注意力只能在文档内部做因果计算。torchtitan 的
`VarlenMetadata` 用 `cu_seq_q` / `cu_seq_k`（累计偏移 0…B·S）和 `max_q` / `max_k`（最长文档长度）描述边界。

- **verl 的构造方式**（按 position）：在第 0 列以及 `diff(positions) != 1` 的位置开始新文档；第 b 行整体偏移 b·S；末尾追加 B·S；
  `max` 是最长文档长度；类型 int32。
- **上游的构造方式**（按 EOS）：在每个 EOS token **之后**开始新文档（每行第 0 列也开始一个）。
  chat 模板会在对话中间插入 EOS，所以 torchtitan-npu 的文档建议用 position。

示例：positions `[[0,1,2,0,1,0],[0,1,0,1,2,3]]` → `[0,3,5,6,8,12]`，max 4；
tokens `[10,0,11,12,13,14,0,15]`、positions `[0,1,2,3,4,0,1,2]` → 按 position `[0,5,8]`（max 5），按 EOS(0) 则是 `[0,2,7,8]`。

**NPU 融合注意力** `torch.ops.npu.npu_fusion_attention_v3`（TND 布局）：q 变成 `[B·S, 头数, head_dim]`（1.7B：q 16 头、kv 8 头、
head_dim 128），`input_layout="TND"`，`head_num` = 本卡 q 头数，`scale = head_dim^-0.5`（0.0883883），`next_tockens=0`，
`keep_prob=1`，`actual_seq_qlen = actual_seq_kvlen = cu_seq[1:]`，`sparse_mode=7`（varlen 外接场景、rightDownCausal）。
本机没有 NPU，这里只计算参数，不调用算子。
""", """
# 06 · TND varlen attention: `VarlenMetadata` and the fused-attention arguments

With `attn_type=varlen` a batch packs several documents (samples); attention must stay causal *inside* each document.
torchtitan's `VarlenMetadata` holds `cu_seq_q` / `cu_seq_k` (cumulative offsets 0…B·S) and `max_q` / `max_k` (the longest
document).

- **verl's builder** (positions): a document starts at column 0 and wherever `diff(positions) != 1`; row b is offset by
  b·S; B·S is appended; `max` is the longest length; dtype int32.
- **the upstream builder** (EOS): a new document starts right **after** each EOS token (and at column 0 of each row).
  Chat templates insert EOS mid-conversation, which is why torchtitan-npu's docs say to use positions.

Examples: positions `[[0,1,2,0,1,0],[0,1,0,1,2,3]]` → `[0,3,5,6,8,12]`, max 4; tokens `[10,0,11,12,13,14,0,15]` with
positions `[0,1,2,3,4,0,1,2]` → `[0,5,8]` (max 5) by positions, but `[0,2,7,8]` by EOS (0).

**NPU fused attention** `torch.ops.npu.npu_fusion_attention_v3` (TND layout): q becomes `[B·S, heads, head_dim]` (1.7B:
16 q heads, 8 kv heads, head_dim 128), `input_layout="TND"`, `head_num` = local q heads, `scale = head_dim^-0.5`
(0.0883883), `next_tockens=0`, `keep_prob=1`, `actual_seq_qlen = actual_seq_kvlen = cu_seq[1:]`, `sparse_mode=7`
(varlen circumscribed, rightDownCausal). There is no NPU here: we compute the arguments, we do not call the kernel.
""")

TASK = md("""
## 任务
1. `varlen_from_positions(positions) -> dict`：输入 `[B, S]` 整数张量，返回 `{"cu_seq_q", "cu_seq_k", "max_q", "max_k"}`，两个 cu 都是 **int32** 张量，max 是 Python int。
2. `varlen_from_eos(tokens, eos_id) -> dict`：同上，按 EOS 切分。
3. `fa_v3_args(cu_seq, n_heads, n_kv_heads, head_dim) -> dict`：键为 `input_layout, q_shape, kv_shape, head_num, scale, next_tockens, keep_prob, actual_seq_qlen, actual_seq_kvlen, sparse_mode`（形状与长度用 list）。
""", """
## Tasks
1. `varlen_from_positions(positions) -> dict`: a `[B, S]` integer tensor in, `{"cu_seq_q", "cu_seq_k", "max_q", "max_k"}`
   out; both cu tensors **int32**, the maxima Python ints.
2. `varlen_from_eos(tokens, eos_id) -> dict`: the same, split after EOS.
3. `fa_v3_args(cu_seq, n_heads, n_kv_heads, head_dim) -> dict` with keys `input_layout, q_shape, kv_shape, head_num,
   scale, next_tockens, keep_prob, actual_seq_qlen, actual_seq_kvlen, sparse_mode` (shapes and lengths as lists).
""")

STUB = '''
import torch


def varlen_from_positions(positions):
    raise NotImplementedError("varlen_from_positions")


def varlen_from_eos(tokens, eos_id):
    raise NotImplementedError("varlen_from_eos")


def fa_v3_args(cu_seq, n_heads, n_kv_heads, head_dim):
    raise NotImplementedError("fa_v3_args")
'''

SOL = '''
import torch


def _metadata(is_start):
    """is_start: [B, S] bool, True where a document begins -> VarlenMetadata fields."""
    B, S = is_start.shape
    starts = [torch.nonzero(is_start[b]).flatten() + b * S for b in range(B)]
    cu = torch.cat(starts + [torch.tensor([B * S])]).to(torch.int32)
    longest = int((cu[1:] - cu[:-1]).max())
    return {"cu_seq_q": cu, "cu_seq_k": cu.clone(), "max_q": longest, "max_k": longest}


def varlen_from_positions(positions):
    positions = torch.as_tensor(positions)
    is_start = torch.ones(positions.shape, dtype=torch.bool)
    is_start[:, 1:] = (positions[:, 1:] - positions[:, :-1]) != 1
    return _metadata(is_start)


def varlen_from_eos(tokens, eos_id):
    tokens = torch.as_tensor(tokens)
    is_start = torch.ones(tokens.shape, dtype=torch.bool)
    is_start[:, 1:] = tokens[:, :-1] == eos_id
    return _metadata(is_start)


def fa_v3_args(cu_seq, n_heads, n_kv_heads, head_dim):
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
'''

DTYPE_CELL = code('''
# Read by the grader: the dtype your builders produce (must be torch.int32, as torch.equal needs)
CU_SEQ_DTYPES = [str(varlen_from_positions(torch.tensor([[0, 1, 0, 1]]))["cu_seq_q"].dtype),
                 str(varlen_from_eos(torch.tensor([[3, 0, 3, 3]]), 0)["cu_seq_k"].dtype)]
print(CU_SEQ_DTYPES)
''')

SELFCHECK = code('''
# Public self-check with the course's vectors
m = varlen_from_positions(torch.tensor([[0, 1, 2, 0, 1, 0], [0, 1, 0, 1, 2, 3]]))
print(m, torch.equal(m["cu_seq_q"], torch.tensor([0, 3, 5, 6, 8, 12], dtype=torch.int32)))
print(varlen_from_positions(torch.tensor([[0, 1, 2, 3, 4, 0, 1, 2]])))
print(varlen_from_eos(torch.tensor([[10, 0, 11, 12, 13, 14, 0, 15]]), 0))
print(fa_v3_args(torch.tensor([0, 3, 8], dtype=torch.int32), 16, 8, 128))
''')


def _reference() -> dict:
    ex1 = [[0, 1, 2, 0, 1, 0], [0, 1, 0, 1, 2, 3]]
    ex2 = [[0, 1, 2, 3, 4, 0, 1, 2]]
    assert ref_positions(ex1)["cu_seq_q"]["__tensor__"]["data"] == [0, 3, 5, 6, 8, 12]
    assert ref_eos([[10, 0, 11, 12, 13, 14, 0, 15]], 0)["cu_seq_q"]["__tensor__"]["data"] == [0, 2, 7, 8]
    pos = [call([tensor(ex1)], ref_positions(ex1), public=True, label="positions [[0,1,2,0,1,0],[0,1,0,1,2,3]]"),
           call([tensor(ex2)], ref_positions(ex2), public=True, label="positions [[0,1,2,3,4,0,1,2]]")]
    for rows in ([[0, 1, 2, 3, 4, 5, 6, 7]], [[5, 6, 7, 0, 1]], [[0, 0, 0]],
                 [[0, 1, 0, 1, 2], [0, 1, 2, 3, 4], [0, 0, 1, 2, 0]]):
        pos.append(call([tensor(rows)], ref_positions(rows)))
    eos = [call([tensor([[10, 0, 11, 12, 13, 14, 0, 15]]), 0], ref_eos([[10, 0, 11, 12, 13, 14, 0, 15]], 0),
                public=True, label="tokens [[10,0,11,12,13,14,0,15]], eos 0")]
    for rows, e in (([[1, 2, 9, 3, 9]], 9), ([[9, 1, 1], [1, 9, 1]], 9), ([[4, 4, 4, 4]], 0),
                    ([[7, 7, 2, 7], [2, 2, 2, 2]], 2)):
        eos.append(call([tensor(rows), e], ref_eos(rows, e)))
    fa = [call([tensor([0, 3, 8], "int32"), 16, 8, 128], ref_fa([0, 3, 8], 16, 8, 128), public=True,
               label="cu [0,3,8], 16/8 heads, head_dim 128")]
    for cu, h, kv, d in (([0, 5, 8, 12], 8, 4, 128), ([0, 4, 6, 10, 16], 4, 2, 64), ([0, 2048], 16, 8, 128)):
        fa.append(call([tensor(cu, "int32"), h, kv, d], ref_fa(cu, h, kv, d)))
    return {
        "positions_builder": {"calls": pos, "compare": "exact", "feedback": fb(
            "A document starts at column 0 and where positions do not step by +1; offset row b by b*S and append B*S.",
            "文档在第 0 列以及 position 不是 +1 递增处开始；第 b 行偏移 b*S，末尾追加 B*S。")},
        "eos_builder": {"calls": eos, "compare": "exact", "feedback": fb(
            "Split right after each EOS token (the EOS belongs to the document it ends), per row, with row offsets.",
            "在每个 EOS 之后切分（EOS 属于它结束的那个文档），逐行处理并加上行偏移。")},
        "int32": {"expected": ["torch.int32", "torch.int32"], "feedback": fb(
            "cu_seq tensors must be int32 (torch.equal compares dtypes too).",
            "cu_seq 张量必须是 int32（torch.equal 也比较 dtype）。")},
        "fa_args": {"calls": fa, "compare": "numeric", "rtol": 0, "atol": 1e-7, "feedback": fb(
            "TND flattens batch and sequence into T; head_num is the local q head count; scale is head_dim**-0.5; "
            "actual lengths are cumulative ends; varlen uses sparse_mode 7.",
            "TND 把 batch 和序列合并为 T；head_num 是本卡 q 头数；scale 为 head_dim**-0.5；actual 长度是累计终点；varlen 用 sparse_mode 7。")},
    }


def spec() -> Spec:
    return Spec(
        id="ch06.varlen_metadata",
        title_en="Varlen metadata and TND fused-attention arguments",
        title_zh="变长元数据与 TND 融合注意力参数",
        kernel_family="torch",
        answers=[("varlen_from_positions", "function"), ("varlen_from_eos", "function"), ("fa_v3_args", "function"),
                 ("CU_SEQ_DTYPES", "value")],
        checks=[
            {"name": "positions_builder", "answer": "varlen_from_positions", "kind": "function", "points": 3,
             "title": ("Position-based builder", "按 position 构造")},
            {"name": "eos_builder", "answer": "varlen_from_eos", "kind": "function", "points": 3,
             "title": ("EOS-based builder", "按 EOS 构造")},
            {"name": "int32", "answer": "CU_SEQ_DTYPES", "kind": "exact", "points": 1,
             "title": ("cu_seq dtype is int32", "cu_seq 类型为 int32")},
            {"name": "fa_args", "answer": "fa_v3_args", "kind": "function", "points": 3,
             "title": ("npu_fusion_attention_v3 arguments", "npu_fusion_attention_v3 参数")},
        ],
        reference=_reference(),
        cells=[INTRO, TASK, answer(STUB, SOL), DTYPE_CELL, SELFCHECK],
        mistakes=[
            Mistake("no_row_offset", [("starts = [torch.nonzero(is_start[b]).flatten() + b * S for b in range(B)]",
                                       "starts = [torch.nonzero(is_start[b]).flatten() for b in range(B)]")],
                    "graded", 7.8, {"positions_builder": "positions [[0,1,2,0,1,0],[0,1,0,1,2,3]]"}),
            Mistake("int64_offsets", [("torch.cat(starts + [torch.tensor([B * S])]).to(torch.int32)",
                                       "torch.cat(starts + [torch.tensor([B * S])])")],
                    "graded", 9.0, {"int32": "int32"}),
            Mistake("split_before_eos", [("is_start[:, 1:] = tokens[:, :-1] == eos_id",
                                          "is_start[:, 1:] = tokens[:, 1:] == eos_id")],
                    "graded", 7.6, {"eos_builder": "tokens [[10,0,11,12,13,14,0,15]], eos 0"}),
            Mistake("sparse_mode_causal", [('"sparse_mode": 7', '"sparse_mode": 3')],
                    "graded", 7.0, {"fa_args": "cu [0,3,8], 16/8 heads, head_dim 128"}),
        ],
    )
