# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · 状态字典名称：torchtitan ↔ HuggingFace
#
# 权重同步时，`engine.get_per_tensor_param()` 取出 torchtitan 模型的状态字典，用 `Qwen3StateDictAdapter.to_hf()` 改成 HF 名称，
# 再交给 vLLM。映射（课程固定的 torchtitan 版本 ac13e536）：
#
# | torchtitan | HF |
# |---|---|
# | `tok_embeddings.weight` | `model.embed_tokens.weight` |
# | `layers.{i}.attention.w{q,k,v,o}.weight` | `model.layers.{i}.self_attn.{q,k,v,o}_proj.weight` |
# | `layers.{i}.attention.{q,k}_norm.weight` | `model.layers.{i}.self_attn.{q,k}_norm.weight` |
# | `layers.{i}.feed_forward.w1 / w3 / w2` | `mlp.gate_proj / up_proj / down_proj` |
# | `layers.{i}.attention_norm` / `ffn_norm` | `input_layernorm` / `post_attention_layernorm` |
# | `norm.weight` / `output.weight` | `model.norm.weight` / `lm_head.weight` |
# | — | `model.layers.{i}.self_attn.rotary_emb.inv_freq`（HF 的 RoPE 缓冲区，torchtitan 丢弃 → `None`） |
#
# Qwen3-1.7B 的词嵌入与输出头**绑定**（tied）：`to_hf` 跳过 `output.weight`，得到 11×28 + 2 = 310 个键；
# 引擎随后补上 `lm_head.weight = model.embed_tokens.weight`，所以发给 vLLM 的是 311 个张量。
#
# （本机安装的 torchtitan 0.3.0 把融合 QKV 命名为 `attention.qkv_linear.wq`、把输出头命名为 `lm_head.weight`；本练习使用课程固定版本的名称。）
#
# ---
#
# # 05 · State-dict names: torchtitan ↔ HuggingFace
#
# During weight sync, `engine.get_per_tensor_param()` takes the torchtitan model's state dict, renames it to HF names with
# `Qwen3StateDictAdapter.to_hf()`, and hands the tensors to vLLM. The mapping (the course's pinned torchtitan ac13e536):
#
# | torchtitan | HF |
# |---|---|
# | `tok_embeddings.weight` | `model.embed_tokens.weight` |
# | `layers.{i}.attention.w{q,k,v,o}.weight` | `model.layers.{i}.self_attn.{q,k,v,o}_proj.weight` |
# | `layers.{i}.attention.{q,k}_norm.weight` | `model.layers.{i}.self_attn.{q,k}_norm.weight` |
# | `layers.{i}.feed_forward.w1 / w3 / w2` | `mlp.gate_proj / up_proj / down_proj` |
# | `layers.{i}.attention_norm` / `ffn_norm` | `input_layernorm` / `post_attention_layernorm` |
# | `norm.weight` / `output.weight` | `model.norm.weight` / `lm_head.weight` |
# | — | `model.layers.{i}.self_attn.rotary_emb.inv_freq` (an HF RoPE buffer; torchtitan drops it → `None`) |
#
# Qwen3-1.7B **ties** the embedding and the output head: `to_hf` skips `output.weight`, giving 11×28 + 2 = 310 keys; the
# engine then adds `lm_head.weight = model.embed_tokens.weight`, so vLLM receives 311 tensors.
#
# (torchtitan 0.3.0, installed here, names the fused QKV `attention.qkv_linear.wq` and the head `lm_head.weight`; this
# exercise uses the pinned course version's names.)

# %%
LAYER_SUFFIXES = ["attention.wq.weight", "attention.wk.weight", "attention.wv.weight", "attention.wo.weight",
                  "attention.q_norm.weight", "attention.k_norm.weight", "feed_forward.w1.weight",
                  "feed_forward.w2.weight", "feed_forward.w3.weight", "attention_norm.weight", "ffn_norm.weight"]


def qwen3_titan_names(n_layers):
    """torchtitan state-dict keys of a dense Qwen3 with `n_layers` blocks (output.weight included)."""
    names = ["tok_embeddings.weight"]
    for i in range(n_layers):
        names += [f"layers.{i}.{s}" for s in LAYER_SUFFIXES]
    return names + ["norm.weight", "output.weight"]

# %% [markdown]
# ## 任务
# 1. `titan_to_hf(name) -> str`：torchtitan 名称 → HF 名称；未知名称抛出 `KeyError`。
# 2. `hf_to_titan(name) -> str | None`：反方向；`rotary_emb.inv_freq` 返回 `None`；表中没有的名称（包括 MoE 的 `mlp.experts.*` 键：稠密 Qwen3 没有它们）抛出 `KeyError`。
# 3. `vllm_weight_names(titan_names, tied) -> list[str]`：按输入顺序给出发送给 vLLM 的 HF 名称；`tied=True` 时跳过 `output.weight`（它可能出现在列表的任何位置），并在末尾追加 `lm_head.weight`。
# 4. `N_VLLM_TENSORS_1_7B`：Qwen3-1.7B（28 层、tied）发送给 vLLM 的张量个数。
#
# ---
#
# ## Tasks
# 1. `titan_to_hf(name) -> str`: torchtitan name → HF name; raise `KeyError` for an unknown name.
# 2. `hf_to_titan(name) -> str | None`: the reverse; `rotary_emb.inv_freq` gives `None`; any name not in the table
#    raises `KeyError`, MoE keys (`mlp.experts.*`, which dense Qwen3 does not have) included.
# 3. `vllm_weight_names(titan_names, tied) -> list[str]`: the HF names sent to vLLM, in input order; with `tied=True` skip
#    `output.weight` (wherever it is in the list) and append `lm_head.weight` at the end.
# 4. `N_VLLM_TENSORS_1_7B`: how many tensors Qwen3-1.7B (28 layers, tied) sends to vLLM.

# %%
### BEGIN SOLUTION
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


### STUB
### END SOLUTION
def titan_to_hf(name):
    ### BEGIN SOLUTION
    if name in TOP:
        return TOP[name]
    m = re.fullmatch(r"layers\.(\d+)\.(.+)", name)
    if m and m.group(2) in PER_LAYER:
        return f"model.layers.{m.group(1)}.{PER_LAYER[m.group(2)]}"
    raise KeyError(f"no HF name for torchtitan key {name!r}")
    ### STUB
    # raise NotImplementedError("titan_to_hf")
    ### END SOLUTION


def hf_to_titan(name):
    ### BEGIN SOLUTION
    if name in TOP_BACK:
        return TOP_BACK[name]
    m = re.fullmatch(r"model\.layers\.(\d+)\.(.+)", name)
    if m and m.group(2) == "self_attn.rotary_emb.inv_freq":
        return None
    if m and m.group(2) in PER_LAYER_BACK:
        return f"layers.{m.group(1)}.{PER_LAYER_BACK[m.group(2)]}"
    raise KeyError(f"no torchtitan name for HF key {name!r}")
    ### STUB
    # raise NotImplementedError("hf_to_titan")
    ### END SOLUTION


def vllm_weight_names(titan_names, tied):
    ### BEGIN SOLUTION
    names = [titan_to_hf(n) for n in titan_names if not (tied and n == "output.weight")]
    if tied:
        names.append("lm_head.weight")  # = model.embed_tokens.weight
    return names
    ### STUB
    # raise NotImplementedError("vllm_weight_names")
    ### END SOLUTION


### BEGIN SOLUTION
N_VLLM_TENSORS_1_7B = len(vllm_weight_names(qwen3_titan_names(28), tied=True))
### STUB
# N_VLLM_TENSORS_1_7B = None
### END SOLUTION

# %%
# Public self-check
print(titan_to_hf("layers.0.attention.wq.weight"))
print(hf_to_titan("model.layers.3.self_attn.rotary_emb.inv_freq"))
print(vllm_weight_names(qwen3_titan_names(1), tied=True))
print(N_VLLM_TENSORS_1_7B)

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (the bulky per-check data is in cases.json next to this file), and typical mistakes as
# patches of the solution with the score and the check each must fail.
RULES = {'titan_to_hf_public': [{'id': 'table_map',
                         'stated': 'torchtitan name → HF name',
                         'hint': {'en': 'Map each torchtitan name by its table row, keeping the layer index: '
                                        'attention.w{q,k,v,o} -> self_attn.{q,k,v,o}_proj, the q/k norms, '
                                        'the embedding, the final norm and the output head.',
                                  'zh': '按表格逐行映射 torchtitan 名称并保留层号：attention.w{q,k,v,o} → '
                                        'self_attn.{q,k,v,o}_proj、q/k norm、词嵌入、最终 norm 和输出头。'}},
                        {'id': 'ffn_names',
                         'stated': '`mlp.gate_proj / up_proj / down_proj`',
                         'hint': {'en': 'feed_forward.w1, w3 and w2 are, in that order, mlp.gate_proj, '
                                        'up_proj and down_proj.',
                                  'zh': 'feed_forward.w1、w3、w2 依次对应 mlp.gate_proj、up_proj、down_proj。'}}],
 'titan_to_hf_hidden': [{'id': 'table_map',
                         'stated': 'torchtitan name → HF name',
                         'hint': {'en': 'Map each torchtitan name by its table row, keeping the layer index: '
                                        'attention.w{q,k,v,o} -> self_attn.{q,k,v,o}_proj, the q/k norms, '
                                        'the embedding, the final norm and the output head.',
                                  'zh': '按表格逐行映射 torchtitan 名称并保留层号：attention.w{q,k,v,o} → '
                                        'self_attn.{q,k,v,o}_proj、q/k norm、词嵌入、最终 norm 和输出头。'}},
                        {'id': 'ffn_names',
                         'stated': '`mlp.gate_proj / up_proj / down_proj`',
                         'hint': {'en': 'feed_forward.w1, w3 and w2 are, in that order, mlp.gate_proj, '
                                        'up_proj and down_proj.',
                                  'zh': 'feed_forward.w1、w3、w2 依次对应 mlp.gate_proj、up_proj、down_proj。'}},
                        {'id': 'block_norms',
                         'stated': '`input_layernorm` / `post_attention_layernorm`',
                         'hint': {'en': 'attention_norm is input_layernorm and ffn_norm is '
                                        'post_attention_layernorm.',
                                  'zh': 'attention_norm 对应 input_layernorm，ffn_norm 对应 '
                                        'post_attention_layernorm。'}},
                        {'id': 'unknown_keyerror',
                         'stated': 'raise `KeyError` for an unknown name',
                         'hint': {'en': 'A torchtitan name that is not in the table raises KeyError; it '
                                        'never passes through unchanged.',
                                  'zh': '表中没有的 torchtitan 名称要抛出 KeyError，不能原样返回。'}}],
 'hf_to_titan': [{'id': 'reverse',
                  'stated': '`hf_to_titan(name) -> str | None`: the reverse',
                  'hint': {'en': 'hf_to_titan is the exact reverse of the table, layer index kept '
                                 '(lm_head.weight gives output.weight).',
                           'zh': 'hf_to_titan 是表格的精确反向映射，保留层号（lm_head.weight 对应 output.weight）。'}},
                 {'id': 'inv_freq_none',
                  'stated': '`rotary_emb.inv_freq` gives `None`',
                  'hint': {'en': 'rotary_emb.inv_freq of any layer is an HF-only RoPE buffer: return None '
                                 'for it.',
                           'zh': '任意层的 rotary_emb.inv_freq 都是 HF 独有的 RoPE 缓冲区：返回 None。'}},
                 {'id': 'reject_unknown',
                  'stated': 'any name not in the table raises `KeyError`',
                  'hint': {'en': 'Any HF name the table does not list, MoE expert keys included, raises '
                                 'KeyError.',
                           'zh': '表中没有列出的 HF 名称（包括 MoE 专家键）都要抛出 KeyError。'}}],
 'vllm_names': [{'id': 'input_order',
                 'stated': 'the HF names sent to vLLM, in input order',
                 'hint': {'en': 'Return the HF names in the order of the input list.',
                          'zh': '按输入列表的顺序返回 HF 名称。'}},
                {'id': 'skip_output',
                 'stated': 'skip `output.weight` (wherever it is in the list)',
                 'hint': {'en': 'With tied=True skip output.weight wherever it appears in the input, not '
                                'only at the end.',
                          'zh': 'tied=True 时，无论 output.weight 出现在输入的哪个位置都要去掉，不只是末尾。'}},
                {'id': 'append_lm_head',
                 'stated': 'append `lm_head.weight` at the end',
                 'hint': {'en': 'With tied=True append lm_head.weight once at the end, even when the input '
                                'has no output.weight; with tied=False nothing is appended.',
                          'zh': 'tied=True 时在末尾追加一次 lm_head.weight（即使输入里没有 output.weight）；tied=False 时不追加。'}},
                {'id': 'untied_in_place',
                 'stated': '`norm.weight` / `output.weight` | `model.norm.weight` / `lm_head.weight`',
                 'hint': {'en': 'With tied=False output.weight is an ordinary weight: it maps to '
                                'lm_head.weight in place.',
                          'zh': 'tied=False 时 output.weight 是普通权重：就地映射为 lm_head.weight。'}}],
 'count_1_7b': [{'id': 'count',
                 'stated': 'how many tensors Qwen3-1.7B (28 layers, tied) sends to vLLM',
                 'hint': {'en': 'Count the 11 per-layer keys times 28, add the embedding and the final norm, '
                                'then the tied lm_head.',
                          'zh': '每层 11 个键 ×28，加上词嵌入和最终 norm，再加绑定的 lm_head。'}}]}

MISTAKES = [{'name': 'gate_up_swapped',
  'score': 5.9935,
  'fails': {'titan_to_hf_public': 'layers.1.feed_forward.w1'},
  'patch': [{'find': '    "feed_forward.w1.weight": "mlp.gate_proj.weight",\n'
                     '    "feed_forward.w3.weight": "mlp.up_proj.weight",',
             'replace': '    "feed_forward.w1.weight": "mlp.up_proj.weight",\n'
                        '    "feed_forward.w3.weight": "mlp.gate_proj.weight",'}]},
 {'name': 'inv_freq_not_dropped',
  'status': 'error',
  'score': 9.6364,
  'fails': {'hf_to_titan': 'inv_freq'},
  'patch': [{'find': '    m = re.fullmatch(r"model\\.layers\\.(\\d+)\\.(.+)", name)\n'
                     '    if m and m.group(2) == "self_attn.rotary_emb.inv_freq":\n'
                     '        return None\n'
                     '    if m and m.group(2) in PER_LAYER_BACK:',
             'replace': '    m = re.fullmatch(r"model\\.layers\\.(\\d+)\\.(.+)", name)\n'
                        '    if m and m.group(2) in PER_LAYER_BACK:'}]},
 {'name': 'no_tied_lm_head',
  'score': 7,
  'fails': {'vllm_names': '2 layers, tied'},
  'patch': [{'find': '    names = [titan_to_hf(n) for n in titan_names if not (tied and n == '
                     '"output.weight")]\n'
                     '    if tied:\n'
                     '        names.append("lm_head.weight")  # = model.embed_tokens.weight\n'
                     '    return names',
             'replace': '    names = [titan_to_hf(n) for n in titan_names if not (tied and n == '
                        '"output.weight")]\n'
                        '    return names'}]},
 {'name': 'output_assumed_last',
  'score': 9,
  'fails': {'vllm_names': 'skip output.weight'},
  'patch': [{'find': '    names = [titan_to_hf(n) for n in titan_names if not (tied and n == '
                     '"output.weight")]',
             'replace': '    names = [titan_to_hf(n) for n in (titan_names[:-1] if tied else '
                        'titan_names)]'}]},
 {'name': 'unknown_name_passed_through',
  'score': 9.4286,
  'fails': {'titan_to_hf_hidden': 'KeyError'},
  'patch': [{'find': '    raise KeyError(f"no HF name for torchtitan key {name!r}")',
             'replace': '    return name  # unknown keys pass through unchanged'}]},
 {'name': 'lm_head_not_counted',
  'score': 9,
  'fails': {'count_1_7b': 'tied lm_head'},
  'patch': [{'find': 'N_VLLM_TENSORS_1_7B = len(vllm_weight_names(qwen3_titan_names(28), tied=True))',
             'replace': 'N_VLLM_TENSORS_1_7B = 11 * 28 + 2  # the keys to_hf returns'}]}]

EQUIVALENT = [{'mutant': 'bool_flip:ff889a57:1',
  'reason': 'the count is the same tied or untied: tied drops output.weight and appends lm_head.weight, '
            'untied maps output.weight to lm_head.weight in place, 311 names either way (vllm_names tests '
            'the two lists themselves)'}]
