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
# 1. 由 `model_type` 得到 torchtitan 模型名：`qwen2 / qwen3 / qwen2_moe / qwen3_moe → "qwen3"`，`llama → "llama3"`；verl 0.9.1
#    还把 `llama4`、`deepseek_v3`、`gpt_oss` 映射到同名的 torchtitan 模型，但本练习只给出 qwen3 和 llama3 的注册表，
#    所以本练习只处理这两族，其它 `model_type`（包括这三种）都按不支持处理。
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
#    verl 0.9.1 also maps `llama4`, `deepseek_v3` and `gpt_oss` to torchtitan models of the same name, but this
#    exercise gives only the qwen3 and llama3 registries, so here only those two families are handled and every other
#    `model_type` (those three included) counts as unsupported.
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
                             'label': 'Qwen3-1.7B',
                             'rules': ['name_map', 'dim_layers_vocab']},
                            {'args': [{'model_type': 'qwen3_moe',
                                       'hidden_size': 2048,
                                       'num_hidden_layers': 48,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': True,
                             'expect': ['qwen3', '30B-A3B'],
                             'label': 'dim 2048, 48 layers (MoE)',
                             'rules': ['name_map', 'dim_layers_vocab']}],
                  'compare': 'exact',
                  'feedback': {'en': 'Match dim, layer count and vocab together, in registry order.',
                               'zh': 'dim、层数、词表大小要同时匹配，并按注册顺序查找。'}},
 'hidden_cases': {'calls': [{'args': [{'model_type': 'qwen3',
                                       'hidden_size': 1024,
                                       'num_hidden_layers': 28,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['qwen3', '0.6B'],
                             'rules': ['dim_layers_vocab']},
                            {'args': [{'model_type': 'qwen2',
                                       'hidden_size': 2560,
                                       'num_hidden_layers': 36,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['qwen3', '4B'],
                             'rules': ['name_map', 'dim_layers_vocab']},
                            {'args': [{'model_type': 'qwen3',
                                       'hidden_size': 5120,
                                       'num_hidden_layers': 64,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['qwen3', '32B'],
                             'rules': ['dim_layers_vocab']},
                            {'args': [{'model_type': 'qwen3',
                                       'hidden_size': 256,
                                       'num_hidden_layers': 8,
                                       'vocab_size': 2048}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['qwen3', 'debugmodel'],
                             'rules': ['registry_order']},
                            {'args': [{'model_type': 'qwen2_moe',
                                       'hidden_size': 4096,
                                       'num_hidden_layers': 94,
                                       'vocab_size': 151936}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['qwen3', '235B-A22B'],
                             'rules': ['name_map', 'dim_layers_vocab']},
                            {'args': [{'model_type': 'llama',
                                       'hidden_size': 4096,
                                       'num_hidden_layers': 32,
                                       'vocab_size': 128256}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['llama3', '8B'],
                             'rules': ['name_map', 'dim_layers_vocab']},
                            {'args': [{'model_type': 'llama',
                                       'hidden_size': 2048,
                                       'num_hidden_layers': 16,
                                       'vocab_size': 128256}],
                             'kwargs': {},
                             'public': False,
                             'expect': ['llama3', '1B'],
                             'rules': ['name_map', 'dim_layers_vocab']}],
                  'compare': 'exact',
                  'feedback': {'en': 'Hidden configs cover other Qwen3 sizes, qwen2/qwen2_moe model types, '
                                     'the debug flavors and llama; the first matching flavor in registry '
                                     'order wins.',
                               'zh': '隐藏用例覆盖其它 Qwen3 尺寸、qwen2/qwen2_moe 类型、debug flavor 和 llama；按注册顺序取第一个匹配的 '
                                     'flavor。'}},
 'errors': {'calls': [{'args': [{'model_type': 'mistral',
                                 'hidden_size': 4096,
                                 'num_hidden_layers': 32,
                                 'vocab_size': 32000}],
                       'kwargs': {},
                       'public': True,
                       'raises': 'ValueError',
                       'label': 'model_type mistral',
                       'rules': ['unsupported_type']},
                      {'args': [{'model_type': 'qwen3',
                                 'hidden_size': 2048,
                                 'num_hidden_layers': 30,
                                 'vocab_size': 151936}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['no_match']},
                      {'args': [{'model_type': 'llama',
                                 'hidden_size': 2048,
                                 'num_hidden_layers': 28,
                                 'vocab_size': 151936}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['no_match']},
                      {'args': [{'model_type': 'llama4',
                                 'hidden_size': 4096,
                                 'num_hidden_layers': 32,
                                 'vocab_size': 128256}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['unsupported_type']},
                      {'args': [{'model_type': 'qwen3_next',
                                 'hidden_size': 2048,
                                 'num_hidden_layers': 28,
                                 'vocab_size': 151936}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['unsupported_type']},
                      {'args': [{'model_type': 'deepseek_v3',
                                 'hidden_size': 2048,
                                 'num_hidden_layers': 28,
                                 'vocab_size': 151936}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['unsupported_type']},
                      {'args': [{'model_type': 'gpt_oss',
                                 'hidden_size': 2048,
                                 'num_hidden_layers': 16,
                                 'vocab_size': 128256}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['unsupported_type']},
                      {'args': [{'model_type': 'qwen2_vl',
                                 'hidden_size': 2560,
                                 'num_hidden_layers': 36,
                                 'vocab_size': 151936}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['unsupported_type']},
                      {'args': [{'model_type': 'qwen3',
                                 'hidden_size': 2048,
                                 'num_hidden_layers': 28,
                                 'vocab_size': 128256}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['vocab_size']},
                      {'args': [{'model_type': 'llama',
                                 'hidden_size': 2048,
                                 'num_hidden_layers': 16,
                                 'vocab_size': 151936}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['vocab_size']},
                      {'args': [{'model_type': 'qwen3_moe',
                                 'hidden_size': 2048,
                                 'num_hidden_layers': 48,
                                 'vocab_size': 32000}],
                       'kwargs': {},
                       'public': False,
                       'raises': 'ValueError',
                       'rules': ['vocab_size']}],
            'compare': 'exact',
            'feedback': {'en': 'Unsupported model types and configs without a matching flavor must raise '
                               'ValueError.',
                         'zh': '不支持的 model_type 或没有匹配 flavor 的配置都要抛出 ValueError。'}}}

RULES = {'public_cases': [{'id': 'name_map',
                   'stated': 'qwen2 / qwen3 / qwen2_moe / qwen3_moe → "qwen3"',
                   'hint': {'en': 'Map the model type to the torchtitan model name first: qwen2, qwen3, '
                                  'qwen2_moe and qwen3_moe all give "qwen3", llama gives "llama3"; then '
                                  "search that model's registry.",
                            'zh': '先把 model_type 映射成 torchtitan 模型名：qwen2、qwen3、qwen2_moe、qwen3_moe 都是 '
                                  '"qwen3"，llama 是 "llama3"；再在该模型的注册表里查找。'}},
                  {'id': 'dim_layers_vocab',
                   'stated': "whose `dim`, layer count and vocab size equal the HF config's",
                   'hint': {'en': 'A flavor matches only when its dim, its layer count and its vocab size '
                                  'all equal hidden_size, num_hidden_layers and vocab_size.',
                            'zh': '只有 dim、层数、词表大小三者都分别等于 hidden_size、num_hidden_layers、vocab_size 时，flavor '
                                  '才算匹配。'}}],
 'hidden_cases': [{'id': 'name_map',
                   'stated': 'qwen2 / qwen3 / qwen2_moe / qwen3_moe → "qwen3"',
                   'hint': {'en': 'Map the model type to the torchtitan model name first: qwen2, qwen3, '
                                  'qwen2_moe and qwen3_moe all give "qwen3", llama gives "llama3"; then '
                                  "search that model's registry.",
                            'zh': '先把 model_type 映射成 torchtitan 模型名：qwen2、qwen3、qwen2_moe、qwen3_moe 都是 '
                                  '"qwen3"，llama 是 "llama3"；再在该模型的注册表里查找。'}},
                  {'id': 'dim_layers_vocab',
                   'stated': "whose `dim`, layer count and vocab size equal the HF config's",
                   'hint': {'en': 'A flavor matches only when its dim, its layer count and its vocab size '
                                  'all equal hidden_size, num_hidden_layers and vocab_size.',
                            'zh': '只有 dim、层数、词表大小三者都分别等于 hidden_size、num_hidden_layers、vocab_size 时，flavor '
                                  '才算匹配。'}},
                  {'id': 'registry_order',
                   'stated': 'take the **first** flavor, in registry order',
                   'hint': {'en': 'Several flavors can share the same sizes: walk the flavors in registry '
                                  'order and return the first one that matches.',
                            'zh': '多个 flavor 可能尺寸相同：按注册顺序查找，返回第一个匹配的。'}}],
 'errors': [{'id': 'unsupported_type',
             'stated': 'every other `model_type` (those three included) counts as unsupported',
             'hint': {'en': 'Only the model types listed in step 1 are supported; every other model type, '
                            'llama4, deepseek_v3 and gpt_oss included, and other qwen or llama variants too, '
                            'raises ValueError, whatever its sizes.',
                      'zh': '只支持第 1 步列出的 model_type；其它类型（包括 llama4、deepseek_v3、gpt_oss，以及其它 qwen、llama '
                            '变体）无论尺寸如何都抛出 ValueError。'}},
            {'id': 'no_match',
             'stated': 'if none matches, fail with "No matching torchtitan flavor found"',
             'hint': {'en': 'A supported model type whose sizes match no flavor of its registry raises '
                            'ValueError ("No matching torchtitan flavor found").',
                      'zh': 'model_type 受支持但尺寸与注册表中任何 flavor 都不匹配时，抛出 ValueError（"No matching torchtitan '
                            'flavor found"）。'}},
            {'id': 'vocab_size',
             'stated': "equal the HF config's `hidden_size`, `num_hidden_layers` and `vocab_size`",
             'hint': {'en': 'The vocab size is part of the match: a config whose dim and layer count fit a '
                            'flavor but whose vocab_size differs matches nothing and raises ValueError.',
                      'zh': '词表大小也参与匹配：dim 和层数符合某个 flavor 但 vocab_size 不同的配置不匹配任何 flavor，应抛出 ValueError。'}}]}

MISTAKES = [{'name': 'dim_only',
  'score': 5.9935,
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
  'score': 8.6364,
  'fails': {'errors': 'hidden'},
  'patch': [{'find': '    raise ValueError(f"No matching torchtitan flavor found for {name} with '
                     'dim/layers/vocab {want}")',
             'replace': '    return None'}]},
 {'name': 'last_match',
  'score': 9.4286,
  'fails': {'hidden_cases': 'registry order'},
  'patch': [{'find': '    for flavor, dim, n_layers, vocab in REGISTRIES[name]:',
             'replace': '    for flavor, dim, n_layers, vocab in reversed(REGISTRIES[name]):  # the newest '
                        'flavor wins'}]},
 {'name': 'prefix_mapping',
  'score': 9.1818,
  'fails': {'errors': 'ValueError'},
  'patch': [{'find': '    if model_type not in MODEL_NAMES:\n'
                     '        raise ValueError(f"model_type {model_type!r} is not supported by the '
                     'torchtitan engine")\n'
                     '    name = MODEL_NAMES[model_type]',
             'replace': '    if str(model_type).startswith("qwen"):  # every Qwen is a qwen3 in torchtitan\n'
                        '        name = "qwen3"\n'
                        '    elif str(model_type).startswith("llama"):\n'
                        '        name = "llama3"\n'
                        '    else:\n'
                        '        raise ValueError(f"model_type {model_type!r} is not supported by the '
                        'torchtitan engine")'}]},
 {'name': 'vocab_ignored',
  'score': 9.1818,
  'fails': {'errors': 'ValueError'},
  'patch': [{'find': '        if (dim, n_layers, vocab) == want:',
             'replace': '        if (dim, n_layers) == want[:2]:  # dim and depth identify a model'}]}]
