"""ch05.state_dict_names: torchtitan <-> HF state-dict names and the 311 tensors sent to vLLM (COURSE.md section 1.8)."""
from __future__ import annotations

from ch05_06_common import Mistake, Spec, answer, call, code, fb, md

LAYER_MAP = [  # (torchtitan suffix, HF suffix), pinned torchtitan ac13e536 order of a dense Qwen3 block
    ("attention.wq.weight", "self_attn.q_proj.weight"),
    ("attention.wk.weight", "self_attn.k_proj.weight"),
    ("attention.wv.weight", "self_attn.v_proj.weight"),
    ("attention.wo.weight", "self_attn.o_proj.weight"),
    ("attention.q_norm.weight", "self_attn.q_norm.weight"),
    ("attention.k_norm.weight", "self_attn.k_norm.weight"),
    ("feed_forward.w1.weight", "mlp.gate_proj.weight"),
    ("feed_forward.w2.weight", "mlp.down_proj.weight"),
    ("feed_forward.w3.weight", "mlp.up_proj.weight"),
    ("attention_norm.weight", "input_layernorm.weight"),
    ("ffn_norm.weight", "post_attention_layernorm.weight"),
]
TOP_MAP = [("tok_embeddings.weight", "model.embed_tokens.weight"), ("norm.weight", "model.norm.weight"),
           ("output.weight", "lm_head.weight")]


def titan_names(n_layers: int) -> list[str]:
    names = ["tok_embeddings.weight"]
    for i in range(n_layers):
        names += [f"layers.{i}.{t}" for t, _ in LAYER_MAP]
    return names + ["norm.weight", "output.weight"]


def ref_titan_to_hf(name: str) -> str:
    top = dict(TOP_MAP)
    if name in top:
        return top[name]
    _, i, rest = name.split(".", 2)
    return f"model.layers.{i}.{dict(LAYER_MAP)[rest]}"


def ref_vllm_names(names: list[str], tied: bool) -> list[str]:
    out = [ref_titan_to_hf(n) for n in names if not (tied and n == "output.weight")]
    return out + (["lm_head.weight"] if tied else [])


INTRO = md("""
# 05 · 状态字典名称：torchtitan ↔ HuggingFace

权重同步时，`engine.get_per_tensor_param()` 取出 torchtitan 模型的状态字典，用 `Qwen3StateDictAdapter.to_hf()` 改成 HF 名称，
再交给 vLLM。映射（课程固定的 torchtitan 版本 ac13e536）：

| torchtitan | HF |
|---|---|
| `tok_embeddings.weight` | `model.embed_tokens.weight` |
| `layers.{i}.attention.w{q,k,v,o}.weight` | `model.layers.{i}.self_attn.{q,k,v,o}_proj.weight` |
| `layers.{i}.attention.{q,k}_norm.weight` | `model.layers.{i}.self_attn.{q,k}_norm.weight` |
| `layers.{i}.feed_forward.w1 / w3 / w2` | `mlp.gate_proj / up_proj / down_proj` |
| `layers.{i}.attention_norm` / `ffn_norm` | `input_layernorm` / `post_attention_layernorm` |
| `norm.weight` / `output.weight` | `model.norm.weight` / `lm_head.weight` |
| — | `model.layers.{i}.self_attn.rotary_emb.inv_freq`（HF 的 RoPE 缓冲区，torchtitan 丢弃 → `None`） |

Qwen3-1.7B 的词嵌入与输出头**绑定**（tied）：`to_hf` 跳过 `output.weight`，得到 11×28 + 2 = 310 个键；
引擎随后补上 `lm_head.weight = model.embed_tokens.weight`，所以发给 vLLM 的是 311 个张量。

（本机安装的 torchtitan 0.3.0 把融合 QKV 命名为 `attention.qkv_linear.wq`、把输出头命名为 `lm_head.weight`；本练习使用课程固定版本的名称。）
""", """
# 05 · State-dict names: torchtitan ↔ HuggingFace

During weight sync, `engine.get_per_tensor_param()` takes the torchtitan model's state dict, renames it to HF names with
`Qwen3StateDictAdapter.to_hf()`, and hands the tensors to vLLM. The mapping (the course's pinned torchtitan ac13e536):

| torchtitan | HF |
|---|---|
| `tok_embeddings.weight` | `model.embed_tokens.weight` |
| `layers.{i}.attention.w{q,k,v,o}.weight` | `model.layers.{i}.self_attn.{q,k,v,o}_proj.weight` |
| `layers.{i}.attention.{q,k}_norm.weight` | `model.layers.{i}.self_attn.{q,k}_norm.weight` |
| `layers.{i}.feed_forward.w1 / w3 / w2` | `mlp.gate_proj / up_proj / down_proj` |
| `layers.{i}.attention_norm` / `ffn_norm` | `input_layernorm` / `post_attention_layernorm` |
| `norm.weight` / `output.weight` | `model.norm.weight` / `lm_head.weight` |
| — | `model.layers.{i}.self_attn.rotary_emb.inv_freq` (an HF RoPE buffer; torchtitan drops it → `None`) |

Qwen3-1.7B **ties** the embedding and the output head: `to_hf` skips `output.weight`, giving 11×28 + 2 = 310 keys; the
engine then adds `lm_head.weight = model.embed_tokens.weight`, so vLLM receives 311 tensors.

(torchtitan 0.3.0, installed here, names the fused QKV `attention.qkv_linear.wq` and the head `lm_head.weight`; this
exercise uses the pinned course version's names.)
""")

GIVEN = code('''
LAYER_SUFFIXES = ["attention.wq.weight", "attention.wk.weight", "attention.wv.weight", "attention.wo.weight",
                  "attention.q_norm.weight", "attention.k_norm.weight", "feed_forward.w1.weight",
                  "feed_forward.w2.weight", "feed_forward.w3.weight", "attention_norm.weight", "ffn_norm.weight"]


def qwen3_titan_names(n_layers):
    """torchtitan state-dict keys of a dense Qwen3 with `n_layers` blocks (output.weight included)."""
    names = ["tok_embeddings.weight"]
    for i in range(n_layers):
        names += [f"layers.{i}.{s}" for s in LAYER_SUFFIXES]
    return names + ["norm.weight", "output.weight"]
''')

TASK = md("""
## 任务
1. `titan_to_hf(name) -> str`：torchtitan 名称 → HF 名称；未知名称抛出 `KeyError`。
2. `hf_to_titan(name) -> str | None`：反方向；`rotary_emb.inv_freq` 返回 `None`；未知名称抛出 `KeyError`。
3. `vllm_weight_names(titan_names, tied) -> list[str]`：按输入顺序给出发送给 vLLM 的 HF 名称；`tied=True` 时跳过 `output.weight`，并在末尾追加 `lm_head.weight`。
4. `N_VLLM_TENSORS_1_7B`：Qwen3-1.7B（28 层、tied）发送给 vLLM 的张量个数。
""", """
## Tasks
1. `titan_to_hf(name) -> str`: torchtitan name → HF name; raise `KeyError` for an unknown name.
2. `hf_to_titan(name) -> str | None`: the reverse; `rotary_emb.inv_freq` gives `None`; unknown names raise `KeyError`.
3. `vllm_weight_names(titan_names, tied) -> list[str]`: the HF names sent to vLLM, in input order; with `tied=True` skip
   `output.weight` and append `lm_head.weight` at the end.
4. `N_VLLM_TENSORS_1_7B`: how many tensors Qwen3-1.7B (28 layers, tied) sends to vLLM.
""")

STUB = '''
def titan_to_hf(name):
    raise NotImplementedError("titan_to_hf")


def hf_to_titan(name):
    raise NotImplementedError("hf_to_titan")


def vllm_weight_names(titan_names, tied):
    raise NotImplementedError("vllm_weight_names")


N_VLLM_TENSORS_1_7B = None
'''

SOL = '''
import re

TOP = {"tok_embeddings.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight",
       "output.weight": "lm_head.weight"}
PER_LAYER = {
    "attention.wq.weight": "self_attn.q_proj.weight",
    "attention.wk.weight": "self_attn.k_proj.weight",
    "attention.wv.weight": "self_attn.v_proj.weight",
    "attention.wo.weight": "self_attn.o_proj.weight",
    "attention.q_norm.weight": "self_attn.q_norm.weight",
    "attention.k_norm.weight": "self_attn.k_norm.weight",
    "feed_forward.w1.weight": "mlp.gate_proj.weight",
    "feed_forward.w3.weight": "mlp.up_proj.weight",
    "feed_forward.w2.weight": "mlp.down_proj.weight",
    "attention_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
}
TOP_BACK = {v: k for k, v in TOP.items()}
PER_LAYER_BACK = {v: k for k, v in PER_LAYER.items()}


def titan_to_hf(name):
    if name in TOP:
        return TOP[name]
    m = re.fullmatch(r"layers\\.(\\d+)\\.(.+)", name)
    if m and m.group(2) in PER_LAYER:
        return f"model.layers.{m.group(1)}.{PER_LAYER[m.group(2)]}"
    raise KeyError(f"no HF name for torchtitan key {name!r}")


def hf_to_titan(name):
    if name in TOP_BACK:
        return TOP_BACK[name]
    m = re.fullmatch(r"model\\.layers\\.(\\d+)\\.(.+)", name)
    if m and m.group(2) == "self_attn.rotary_emb.inv_freq":
        return None
    if m and m.group(2) in PER_LAYER_BACK:
        return f"layers.{m.group(1)}.{PER_LAYER_BACK[m.group(2)]}"
    raise KeyError(f"no torchtitan name for HF key {name!r}")


def vllm_weight_names(titan_names, tied):
    names = [titan_to_hf(n) for n in titan_names if not (tied and n == "output.weight")]
    if tied:
        names.append("lm_head.weight")  # = model.embed_tokens.weight
    return names


N_VLLM_TENSORS_1_7B = len(vllm_weight_names(qwen3_titan_names(28), tied=True))
'''

SELFCHECK = code('''
# Public self-check
print(titan_to_hf("layers.0.attention.wq.weight"))
print(hf_to_titan("model.layers.3.self_attn.rotary_emb.inv_freq"))
print(vllm_weight_names(qwen3_titan_names(1), tied=True))
print(N_VLLM_TENSORS_1_7B)
''')


def _reference() -> dict:
    t2h_pub = [("tok_embeddings.weight", "embedding"), ("layers.0.attention.wq.weight", "layers.0.attention.wq"),
               ("layers.1.feed_forward.w1.weight", "layers.1.feed_forward.w1"), ("output.weight", "output head")]
    t2h_hidden = ["layers.5.feed_forward.w3.weight", "layers.12.feed_forward.w2.weight",
                  "layers.27.attention.q_norm.weight", "layers.9.attention.k_norm.weight",
                  "layers.2.attention_norm.weight", "layers.20.ffn_norm.weight", "norm.weight",
                  "layers.27.attention.wk.weight", "layers.14.attention.wo.weight", "layers.8.attention.wv.weight"]
    h2t_pub = [("model.layers.3.self_attn.rotary_emb.inv_freq", None, "inv_freq"),
               ("model.layers.0.mlp.up_proj.weight", "layers.0.feed_forward.w3.weight", "up_proj")]
    h2t_hidden = [("model.layers.17.mlp.gate_proj.weight", "layers.17.feed_forward.w1.weight"),
                  ("model.layers.6.post_attention_layernorm.weight", "layers.6.ffn_norm.weight"),
                  ("model.layers.27.self_attn.rotary_emb.inv_freq", None),
                  ("lm_head.weight", "output.weight"), ("model.embed_tokens.weight", "tok_embeddings.weight"),
                  ("model.layers.11.self_attn.k_proj.weight", "layers.11.attention.wk.weight")]
    h2t_calls = [call([n], e, public=True, label=f"hf_to_titan {lbl}") for n, e, lbl in h2t_pub]
    h2t_calls += [call([n], e) for n, e in h2t_hidden]
    h2t_calls += [call(["model.layers.0.mlp.experts.0.gate_proj.weight"], raises="KeyError")]
    n2 = titan_names(2)
    n28 = titan_names(28)
    vllm = [
        call([n2, True], ref_vllm_names(n2, True), public=True, label="2 layers, tied"),
        call([n28, True], ref_vllm_names(n28, True)),
        call([titan_names(3), False], ref_vllm_names(titan_names(3), False)),
        call([[n for n in n28 if n != "output.weight"], True], ref_vllm_names(n28, True)),
    ]
    return {
        "titan_to_hf_public": {"calls": [call([n], ref_titan_to_hf(n), public=True, label=lbl) for n, lbl in t2h_pub],
                               "compare": "exact",
                               "feedback": fb("Check the table row for the failing name.", "对照表格检查失败的名称。")},
        "titan_to_hf_hidden": {"calls": [call([n], ref_titan_to_hf(n)) for n in t2h_hidden]
                               + [call(["layers.0.attention.inner_attention.scale"], raises="KeyError")],
                               "compare": "exact",
                               "feedback": fb("Hidden names cover every per-layer entry (w1/w3/w2 are gate/up/down), "
                                              "the final norm and an unknown name that must raise KeyError.",
                                              "隐藏用例覆盖每个层内条目（w1/w3/w2 分别是 gate/up/down）、最终 norm，"
                                              "以及必须抛出 KeyError 的未知名称。")},
        "hf_to_titan": {"calls": h2t_calls, "compare": "exact",
                        "feedback": fb("The reverse map must drop inv_freq (None) and reject MoE/unknown keys.",
                                       "反向映射要把 inv_freq 丢弃（返回 None），并拒绝 MoE/未知键。")},
        "vllm_names": {"calls": vllm, "compare": "exact",
                       "feedback": fb("With tied weights, skip output.weight and append lm_head.weight once at the end; "
                                      "untied models keep output.weight -> lm_head.weight in place.",
                                      "权重绑定时跳过 output.weight，并在末尾追加一次 lm_head.weight；"
                                      "不绑定时 output.weight 就地映射为 lm_head.weight。")},
        "count_1_7b": {"expected": 311, "feedback": fb(
            "Count the per-layer keys times 28, add the embedding and final norm, then the tied lm_head.",
            "每层键数 ×28，加上词嵌入和最终 norm，再加绑定的 lm_head。")},
    }


def spec() -> Spec:
    return Spec(
        id="ch05.state_dict_names",
        title_en="State-dict names between torchtitan and HuggingFace",
        title_zh="torchtitan 与 HuggingFace 的状态字典名称",
        kernel_family="light",
        answers=[("titan_to_hf", "function"), ("hf_to_titan", "function"), ("vllm_weight_names", "function"),
                 ("N_VLLM_TENSORS_1_7B", "value")],
        checks=[
            {"name": "titan_to_hf_public", "answer": "titan_to_hf", "kind": "function", "points": 2,
             "title": ("titan_to_hf: public names", "titan_to_hf：公开名称")},
            {"name": "titan_to_hf_hidden", "answer": "titan_to_hf", "kind": "function", "points": 2,
             "title": ("titan_to_hf: hidden names", "titan_to_hf：隐藏名称")},
            {"name": "hf_to_titan", "answer": "hf_to_titan", "kind": "function", "points": 2,
             "title": ("hf_to_titan incl. inv_freq", "hf_to_titan（含 inv_freq）")},
            {"name": "vllm_names", "answer": "vllm_weight_names", "kind": "function", "points": 3,
             "title": ("Names sent to vLLM (tied lm_head)", "发送给 vLLM 的名称（绑定的 lm_head）")},
            {"name": "count_1_7b", "answer": "N_VLLM_TENSORS_1_7B", "kind": "exact", "points": 1,
             "title": ("Tensor count for Qwen3-1.7B", "Qwen3-1.7B 的张量个数")},
        ],
        reference=_reference(),
        cells=[INTRO, GIVEN, TASK, answer(STUB, SOL), SELFCHECK],
        mistakes=[
            Mistake("gate_up_swapped", [('"feed_forward.w1.weight": "mlp.gate_proj.weight"',
                                         '"feed_forward.w1.weight": "mlp.up_proj.weight"'),
                                        ('"feed_forward.w3.weight": "mlp.up_proj.weight"',
                                         '"feed_forward.w3.weight": "mlp.gate_proj.weight"')],
                    "graded", 5.8738, {"titan_to_hf_public": "layers.1.feed_forward.w1"}),
            Mistake("no_tied_lm_head", [('''    if tied:
        names.append("lm_head.weight")  # = model.embed_tokens.weight
''', "")], "graded", 6.75, {"vllm_names": "2 layers, tied"}),
            Mistake("inv_freq_not_dropped", [('''    if m and m.group(2) == "self_attn.rotary_emb.inv_freq":
        return None
''', "")], "error", 9.5556, {"hf_to_titan": "inv_freq"}),
        ],
    )
