"""ch06.offload_memory: Qwen3 parameter count, per-rank bytes under FSDP2 with/without offload, dim-0 shard shapes."""
from __future__ import annotations

from ch05_06_common import Mistake, Spec, answer, call, code, fb, md

# (dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, tied) of torchtitan's qwen3 flavors.
DIMS = {
    "1.7B": (2048, 28, 16, 8, 128, 6144, 151936, True),
    "0.6B": (1024, 28, 16, 8, 128, 3072, 151936, True),
    "4B": (2560, 36, 32, 8, 128, 9728, 151936, True),
    "8B": (4096, 36, 32, 8, 128, 12288, 151936, False),
    "debugmodel": (256, 8, 16, 8, 128, 3072, 2048, True),
}


def ref_count(dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, tied):
    layer = (dim * n_heads * head_dim * 2 + dim * n_kv_heads * head_dim * 2 + 2 * head_dim + 2 * dim
             + 3 * dim * ffn_dim)
    emb = vocab * dim * (1 if tied else 2)
    total = n_layers * layer + dim + emb
    return [total, total - emb]


def ref_bytes(n_params, shard, param_offload, optimizer_offload):
    per = -(-n_params // shard)
    params_grads, optim = 8 * per, 8 * per
    device = (0 if param_offload else params_grads) + (0 if optimizer_offload else optim)
    return {"device": device, "host": params_grads + optim - device}


def ref_shard(shape, shard, rank):
    chunk = -(-shape[0] // shard)
    return [max(0, min(chunk, shape[0] - rank * chunk))] + list(shape[1:])


INTRO = md("""
# 06 · 参数量、卸载与 FSDP2 分片

**参数量**（稠密 Qwen3，torchtitan 的 `Qwen3Model`）：每层有 `wq [n_heads·head_dim, dim]`、`wk`/`wv [n_kv_heads·head_dim, dim]`、
`wo [dim, n_heads·head_dim]`、`q_norm`/`k_norm [head_dim]`、`attention_norm`/`ffn_norm [dim]`、`w1`/`w3 [ffn, dim]`、`w2 [dim, ffn]`；
另有词嵌入 `[vocab, dim]`、最终 `norm [dim]`，不绑定（untied）时还有输出头 `[vocab, dim]`。
"非嵌入参数" = 总数减去词嵌入，以及不绑定时的输出头（Qwen 模型卡的口径）。

**每卡常驻字节**（本练习的模型，在两个训练阶段之间）：FSDP2 按 `shard` 切分，每卡 `ceil(P/shard)` 个参数；
fp32 参数 4 B + fp32 梯度 4 B + AdamW 的 `exp_avg`/`exp_avg_sq` 各 4 B。
`param_offload=True` 把参数和梯度放在 host（CPU），`optimizer_offload=True` 把 AdamW 状态放在 host。
计算时临时 all-gather 的 bf16 整层权重不计入。返回 `{"device": 字节, "host": 字节}`。

**FSDP2 dim-0 分片**：每个参数沿第 0 维按 `torch.chunk` 规则切分：块大小 `ceil(d0/shard)`，rank r 拿到
`max(0, min(块大小, d0 − r·块大小))` 行（可能为 0 行），其余维度不变。
""", """
# 06 · Parameter count, offload and FSDP2 shards

**Parameter count** (dense Qwen3, torchtitan's `Qwen3Model`): each block has `wq [n_heads·head_dim, dim]`,
`wk`/`wv [n_kv_heads·head_dim, dim]`, `wo [dim, n_heads·head_dim]`, `q_norm`/`k_norm [head_dim]`,
`attention_norm`/`ffn_norm [dim]`, `w1`/`w3 [ffn, dim]`, `w2 [dim, ffn]`; plus the embedding `[vocab, dim]`, the final
`norm [dim]`, and, when untied, the output head `[vocab, dim]`. "Non-embedding" = total minus the embedding and, when
untied, the output head (the Qwen model cards' convention).

**Resident bytes per rank** (this exercise's model, between training phases): FSDP2 shards over `shard` ranks, so each
rank holds `ceil(P/shard)` parameters; fp32 params 4 B + fp32 grads 4 B + AdamW `exp_avg`/`exp_avg_sq` 4 B each.
`param_offload=True` keeps params and grads on the host (CPU); `optimizer_offload=True` keeps the AdamW state on the
host. The transient all-gathered bf16 layer used during compute is not counted. Return `{"device": bytes, "host": bytes}`.

**FSDP2 dim-0 shards**: each parameter is split along dim 0 by the `torch.chunk` rule: chunk size `ceil(d0/shard)`;
rank r gets `max(0, min(chunk, d0 − r·chunk))` rows (possibly 0) and keeps the other dims.
""")

TASK = md("""
## 任务
1. `count_params(dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, tied) -> (total, non_embedding)`
2. `per_rank_bytes(n_params, shard, param_offload, optimizer_offload) -> {"device": int, "host": int}`
3. `shard_shape(global_shape, shard, rank) -> list[int]`
""", """
## Tasks
1. `count_params(dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, tied) -> (total, non_embedding)`
2. `per_rank_bytes(n_params, shard, param_offload, optimizer_offload) -> {"device": int, "host": int}`
3. `shard_shape(global_shape, shard, rank) -> list[int]`
""")

STUB = '''
def count_params(dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, tied):
    raise NotImplementedError("count_params")


def per_rank_bytes(n_params, shard, param_offload, optimizer_offload):
    raise NotImplementedError("per_rank_bytes")


def shard_shape(global_shape, shard, rank):
    raise NotImplementedError("shard_shape")
'''

SOL = '''
def count_params(dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab, tied):
    attention = dim * n_heads * head_dim * 2 + dim * n_kv_heads * head_dim * 2 + 2 * head_dim
    block = attention + 2 * dim + 3 * dim * ffn_dim
    embeddings = vocab * dim if tied else 2 * vocab * dim
    total = n_layers * block + dim + embeddings
    return total, total - embeddings


def per_rank_bytes(n_params, shard, param_offload, optimizer_offload):
    local = -(-n_params // shard)  # ceil
    params_and_grads = (4 + 4) * local
    adam_state = (4 + 4) * local
    device = (0 if param_offload else params_and_grads) + (0 if optimizer_offload else adam_state)
    return {"device": device, "host": params_and_grads + adam_state - device}


def shard_shape(global_shape, shard, rank):
    chunk = -(-global_shape[0] // shard)
    rows = max(0, min(chunk, global_shape[0] - rank * chunk))
    return [rows, *global_shape[1:]]
'''

SELFCHECK = code('''
# Public self-check (Qwen3-1.7B: dim 2048, 28 layers, 16/8 heads, head_dim 128, FFN 6144, vocab 151936, tied)
total, non_emb = count_params(2048, 28, 16, 8, 128, 6144, 151936, True)
print(total, non_emb)
print(per_rank_bytes(total, 2, False, False))
print(shard_shape([151936, 2048], 2, 0), shard_shape([1024, 2048], 2, 1))
''')


def _reference() -> dict:
    p17 = ref_count(*DIMS["1.7B"])
    assert p17 == [1_720_574_976, 1_409_410_048]
    counts = [call(list(DIMS["1.7B"]), p17, public=True, label="Qwen3-1.7B")]
    counts += [call(list(DIMS[k]), ref_count(*DIMS[k])) for k in ("0.6B", "4B", "8B", "debugmodel")]
    P = p17[0]
    per = [call([P, 2, False, False], ref_bytes(P, 2, False, False), public=True, label="1.7B, shard 2, no offload"),
           call([P, 2, True, True], ref_bytes(P, 2, True, True), public=True, label="1.7B, shard 2, both offloads")]
    per += [call(a, ref_bytes(*a)) for a in ([P, 2, True, False], [P, 2, False, True], [P, 4, False, True],
                                              [P, 1, False, False], [1001, 8, True, False])]
    shapes = [call([[151936, 2048], 2, 0], [75968, 2048], public=True, label="embedding [151936, 2048], rank 0"),
              call([[1024, 2048], 2, 1], [512, 2048], public=True, label="wk [1024, 2048], rank 1")]
    assert ref_shard([151936, 2048], 2, 0) == [75968, 2048] and ref_shard([1024, 2048], 2, 1) == [512, 2048]
    shapes += [call(a, ref_shard(*a)) for a in ([[5, 3], 4, 3], [[5, 3], 4, 2], [[151936, 2048], 8, 7],
                                               [[2048], 2, 1], [[6144, 2048], 3, 2], [[7], 3, 2])]
    return {
        "param_count": {"calls": counts, "compare": "exact", "feedback": fb(
            "Count q/k/v/o (GQA: k and v use n_kv_heads), both qk-norms, both block norms and the three FFN matrices "
            "per block; the tied head shares the embedding; non-embedding removes every vocab x dim matrix.",
            "每层计入 q/k/v/o（GQA：k、v 用 n_kv_heads）、两个 qk-norm、两个层 norm 和三个 FFN 矩阵；绑定的输出头与词嵌入共用；"
            "非嵌入参数要去掉所有 vocab x dim 矩阵。")},
        "per_rank": {"calls": per, "compare": "exact", "feedback": fb(
            "Shard every state (params, grads, both AdamW moments) over the ranks with a ceiling division, then move "
            "params+grads or the AdamW state to the host as the flags say.",
            "参数、梯度和两个 AdamW 矩都按 rank 向上取整切分，再根据开关把参数+梯度或 AdamW 状态放到 host。")},
        "shard_shapes": {"calls": shapes, "compare": "exact", "feedback": fb(
            "torch.chunk uses ceil(d0/shard) rows per chunk, so trailing ranks can get fewer rows or none.",
            "torch.chunk 每块 ceil(d0/shard) 行，所以靠后的 rank 可能更少甚至 0 行。")},
    }


def spec() -> Spec:
    return Spec(
        id="ch06.offload_memory",
        title_en="Parameter count, offload memory and FSDP2 shards",
        title_zh="参数量、卸载内存与 FSDP2 分片",
        kernel_family="light",
        answers=[("count_params", "function"), ("per_rank_bytes", "function"), ("shard_shape", "function")],
        checks=[
            {"name": "param_count", "answer": "count_params", "kind": "function", "points": 4,
             "title": ("Parameter counts", "参数量")},
            {"name": "per_rank", "answer": "per_rank_bytes", "kind": "function", "points": 3,
             "title": ("Per-rank bytes with offload", "卸载下的每卡字节数")},
            {"name": "shard_shapes", "answer": "shard_shape", "kind": "function", "points": 3,
             "title": ("FSDP2 dim-0 shard shapes", "FSDP2 第 0 维分片形状")},
        ],
        reference=_reference(),
        cells=[INTRO, TASK, answer(STUB, SOL), SELFCHECK],
        mistakes=[
            Mistake("tied_head_counted", [("embeddings = vocab * dim if tied else 2 * vocab * dim",
                                           "embeddings = 2 * vocab * dim")],
                    "graded", 6.8, {"param_count": "Qwen3-1.7B"}),
            Mistake("adam_not_sharded", [("adam_state = (4 + 4) * local", "adam_state = (4 + 4) * n_params")],
                    "graded", 7.4286, {"per_rank": "1.7B, shard 2, no offload"}),
            Mistake("floor_chunk", [("chunk = -(-global_shape[0] // shard)", "chunk = global_shape[0] // shard")],
                    "graded", 9.25, {"shard_shapes": "hidden"}),
        ],
    )
