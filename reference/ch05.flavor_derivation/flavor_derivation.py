# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · 从 HF 配置推导 torchtitan 的模型名与 flavor
#
# verl 的 TorchTitan 引擎第一步调用 `derive_torchtitan_name_and_flavor(hf_config)`：
# 1. 由 `model_type` 得到 torchtitan 模型名：`qwen2 / qwen3 / qwen2_moe / qwen3_moe → "qwen3"`，`llama → "llama3"`；其它类型不支持。
# 2. 在该模型的 flavor 注册表中，按注册顺序取**第一个** `dim`、层数、词表大小都与 HF 配置
#    （`hidden_size`、`num_hidden_layers`、`vocab_size`）相同的 flavor；课程补丁会调用每个工厂函数并用 `len(layers)` 计层数。
# 3. 找不到则报错 "No matching torchtitan flavor found"。
#
# Qwen3-1.7B → `("qwen3", "1.7B")`。下面给出本机 torchtitan 0.3.0 注册表的尺寸（注册顺序）。
#
# ---
#
# # 05 · Deriving torchtitan's model name and flavor from an HF config
#
# verl's TorchTitan engine starts with `derive_torchtitan_name_and_flavor(hf_config)`:
# 1. map `model_type` to a torchtitan model name: `qwen2 / qwen3 / qwen2_moe / qwen3_moe → "qwen3"`, `llama → "llama3"`;
#    other types are unsupported.
# 2. in that model's flavor registry, take the **first** flavor, in registry order, whose `dim`, layer count and vocab size
#    equal the HF config's `hidden_size`, `num_hidden_layers` and `vocab_size` (the course patch calls each factory and
#    counts `len(layers)`).
# 3. if none matches, fail with "No matching torchtitan flavor found".
#
# Qwen3-1.7B → `("qwen3", "1.7B")`. The registry dims of torchtitan 0.3.0 (installed here) are given below, in order.

# %%
QWEN3_FLAVORS = [  # (flavor, dim, n_layers, vocab_size) in registry order
    ('debugmodel', 256, 8, 2048),
    ('debugmodel_non_fused_qkv', 256, 8, 2048),
    ('0.6B', 1024, 28, 151936),
    ('1.7B', 2048, 28, 151936),
    ('4B', 2560, 36, 151936),
    ('8B', 4096, 36, 151936),
    ('14B', 5120, 40, 151936),
    ('32B', 5120, 64, 151936),
    ('debugmodel_moe', 256, 8, 2048),
    ('30B-A3B', 2048, 48, 151936),
    ('235B-A22B', 4096, 94, 151936),
]

LLAMA3_FLAVORS = [  # (flavor, dim, n_layers, vocab_size) in registry order
    ('debugmodel', 256, 6, 2048),
    ('1B', 2048, 16, 128256),
    ('3B', 3072, 28, 128256),
    ('8B', 4096, 32, 128256),
    ('70B', 8192, 80, 128256),
    ('405B', 16384, 126, 128256),
]

QWEN3_1_7B_CONFIG = {"model_type": "qwen3", "hidden_size": 2048, "num_hidden_layers": 28, "vocab_size": 151936,
                     "num_attention_heads": 16, "num_key_value_heads": 8, "tie_word_embeddings": True}

# %% [markdown]
# ## 任务：`derive_name_and_flavor(hf_config: dict) -> tuple[str, str]`
#
# 按上面的规则返回 `(name, flavor)`；不支持的 `model_type` 或没有匹配的 flavor 都抛出 `ValueError`。
#
# ---
#
# ## Task: `derive_name_and_flavor(hf_config: dict) -> tuple[str, str]`
#
# Return `(name, flavor)` by the rules above; raise `ValueError` for an unsupported `model_type` and when no flavor matches.

# %%
### BEGIN SOLUTION
MODEL_NAMES = {"qwen2": "qwen3", "qwen3": "qwen3", "qwen2_moe": "qwen3", "qwen3_moe": "qwen3", "llama": "llama3"}
REGISTRIES = {"qwen3": QWEN3_FLAVORS, "llama3": LLAMA3_FLAVORS}


### STUB
### END SOLUTION
def derive_name_and_flavor(hf_config):
    ### BEGIN SOLUTION
    model_type = hf_config.get("model_type")
    if model_type not in MODEL_NAMES:
        raise ValueError(f"model_type {model_type!r} is not supported by the torchtitan engine")
    name = MODEL_NAMES[model_type]
    want = (hf_config["hidden_size"], hf_config["num_hidden_layers"], hf_config["vocab_size"])
    for flavor, dim, n_layers, vocab in REGISTRIES[name]:
        if (dim, n_layers, vocab) == want:
            return name, flavor
    raise ValueError(f"No matching torchtitan flavor found for {name} with dim/layers/vocab {want}")
    ### STUB
    # raise NotImplementedError("derive_name_and_flavor")
    ### END SOLUTION

# %%
# Public self-check
print(derive_name_and_flavor(QWEN3_1_7B_CONFIG))
print(derive_name_and_flavor({"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
                              "vocab_size": 151936}))

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'public_cases': {'calls': [{'args': [{'model_type': 'qwen3',
                                       'hidden_size': 2048,
                                       'num_hidden_layers': 28,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': True,
                             'expect': ['qwen3', '1.7B'],
                             'label': 'Qwen3-1.7B'},
                            {'args': [{'model_type': 'qwen3_moe',
                                       'hidden_size': 2048,
                                       'num_hidden_layers': 48,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': True,
                             'expect': ['qwen3', '30B-A3B'],
                             'label': 'dim 2048, 48 layers (MoE)'}],
                  'compare': 'exact',
                  'feedback': {'en': 'Match dim, layer count and vocab together, in registry order.',
                               'zh': 'dim、层数、词表大小要同时匹配，并按注册顺序查找。'}},
 'hidden_cases': {'calls': [{'args': [{'model_type': 'qwen3',
                                       'hidden_size': 1024,
                                       'num_hidden_layers': 28,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['qwen3', '0.6B']},
                            {'args': [{'model_type': 'qwen2',
                                       'hidden_size': 2560,
                                       'num_hidden_layers': 36,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['qwen3', '4B']},
                            {'args': [{'model_type': 'qwen3',
                                       'hidden_size': 5120,
                                       'num_hidden_layers': 64,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['qwen3', '32B']},
                            {'args': [{'model_type': 'qwen3',
                                       'hidden_size': 256,
                                       'num_hidden_layers': 8,
                                       'vocab_size': 2048}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['qwen3', 'debugmodel']},
                            {'args': [{'model_type': 'qwen2_moe',
                                       'hidden_size': 4096,
                                       'num_hidden_layers': 94,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['qwen3', '235B-A22B']},
                            {'args': [{'model_type': 'llama',
                                       'hidden_size': 4096,
                                       'num_hidden_layers': 32,
                                       'vocab_size': 128256}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['llama3', '8B']},
                            {'args': [{'model_type': 'llama',
                                       'hidden_size': 2048,
                                       'num_hidden_layers': 16,
                                       'vocab_size': 128256}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['llama3', '1B']}],
                  'compare': 'exact',
                  'feedback': {'en': 'Hidden configs cover other Qwen3 sizes, qwen2/qwen2_moe model types, '
                                     'the debug flavors and llama.',
                               'zh': '隐藏用例覆盖其它 Qwen3 尺寸、qwen2/qwen2_moe 类型、debug flavor 和 llama。'}},
 'errors': {'calls': [{'args': [{'model_type': 'mistral',
                                 'hidden_size': 4096,
                                 'num_hidden_layers': 32,
                                 'vocab_size': 32000}],
                       'kwargs': {},
                       'public': True,
                       'raises': 'ValueError',
                       'label': 'model_type mistral'},
                      {'args': [{'model_type': 'qwen3',
                                 'hidden_size': 2048,
                                 'num_hidden_layers': 30,
                                 'vocab_size': 151936}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError'},
                      {'args': [{'model_type': 'llama',
                                 'hidden_size': 2048,
                                 'num_hidden_layers': 28,
                                 'vocab_size': 151936}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError'}],
            'compare': 'exact',
            'feedback': {'en': 'Unsupported model types and configs without a matching flavor must raise '
                               'ValueError.',
                         'zh': '不支持的 model_type 或没有匹配 flavor 的配置都要抛出 ValueError。'}}}

MISTAKES = [{'name': 'dim_only',
  'score': 5.3571,
  'fails': {'public_cases': 'dim 2048, 48 layers (MoE)'},
  'patch': [{'find': '        if (dim, n_layers, vocab) == want:', 'replace': '        if dim == want[0]:'}]},
 {'name': 'moe_types_unmapped',
  'status': 'error',
  'score': 7.9286,
  'fails': {'public_cases': 'dim 2048, 48 layers (MoE)'},
  'patch': [{'find': 'MODEL_NAMES = {"qwen2": "qwen3", "qwen3": "qwen3", "qwen2_moe": "qwen3", "qwen3_moe": '
                     '"qwen3", "llama": "llama3"}',
             'replace': 'MODEL_NAMES = {"qwen2": "qwen3", "qwen3": "qwen3", "llama": "llama3"}'}]},
 {'name': 'returns_none',
  'score': 8.0,
  'fails': {'errors': 'hidden'},
  'patch': [{'find': '    raise ValueError(f"No matching torchtitan flavor found for {name} with '
                     'dim/layers/vocab {want}")',
             'replace': '    return None'}]}]
