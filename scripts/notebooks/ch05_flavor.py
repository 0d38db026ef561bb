"""ch05.flavor_derivation: HF config -> torchtitan (model name, flavor), as verl's derive_torchtitan_name_and_flavor."""
from __future__ import annotations

from ch05_06_common import Mistake, Spec, answer, call, code, fb, md

# Registry order and dims of torchtitan 0.3.0's qwen3/llama3 configs (cross-checked in tests/exercises/ch05).
QWEN3 = [("debugmodel", 256, 8, 2048), ("debugmodel_non_fused_qkv", 256, 8, 2048), ("0.6B", 1024, 28, 151936),
         ("1.7B", 2048, 28, 151936), ("4B", 2560, 36, 151936), ("8B", 4096, 36, 151936),
         ("14B", 5120, 40, 151936), ("32B", 5120, 64, 151936), ("debugmodel_moe", 256, 8, 2048),
         ("30B-A3B", 2048, 48, 151936), ("235B-A22B", 4096, 94, 151936)]
LLAMA3 = [("debugmodel", 256, 6, 2048), ("1B", 2048, 16, 128256), ("3B", 3072, 28, 128256),
          ("8B", 4096, 32, 128256), ("70B", 8192, 80, 128256), ("405B", 16384, 126, 128256)]


def _table_src(name: str, rows) -> str:
    body = "\n".join(f"    ({f!r}, {d}, {n}, {v})," for f, d, n, v in rows)
    return f"{name} = [  # (flavor, dim, n_layers, vocab_size) in registry order\n{body}\n]"


def hf(model_type: str, hidden: int, layers: int, vocab: int) -> dict:
    return {"model_type": model_type, "hidden_size": hidden, "num_hidden_layers": layers, "vocab_size": vocab}


INTRO = md("""
# 05 · 从 HF 配置推导 torchtitan 的模型名与 flavor

verl 的 TorchTitan 引擎第一步调用 `derive_torchtitan_name_and_flavor(hf_config)`：
1. 由 `model_type` 得到 torchtitan 模型名：`qwen2 / qwen3 / qwen2_moe / qwen3_moe → "qwen3"`，`llama → "llama3"`；其它类型不支持。
2. 在该模型的 flavor 注册表中，按注册顺序取**第一个** `dim`、层数、词表大小都与 HF 配置
   （`hidden_size`、`num_hidden_layers`、`vocab_size`）相同的 flavor；课程补丁会调用每个工厂函数并用 `len(layers)` 计层数。
3. 找不到则报错 "No matching torchtitan flavor found"。

Qwen3-1.7B → `("qwen3", "1.7B")`。下面给出本机 torchtitan 0.3.0 注册表的尺寸（注册顺序）。
""", """
# 05 · Deriving torchtitan's model name and flavor from an HF config

verl's TorchTitan engine starts with `derive_torchtitan_name_and_flavor(hf_config)`:
1. map `model_type` to a torchtitan model name: `qwen2 / qwen3 / qwen2_moe / qwen3_moe → "qwen3"`, `llama → "llama3"`;
   other types are unsupported.
2. in that model's flavor registry, take the **first** flavor, in registry order, whose `dim`, layer count and vocab size
   equal the HF config's `hidden_size`, `num_hidden_layers` and `vocab_size` (the course patch calls each factory and
   counts `len(layers)`).
3. if none matches, fail with "No matching torchtitan flavor found".

Qwen3-1.7B → `("qwen3", "1.7B")`. The registry dims of torchtitan 0.3.0 (installed here) are given below, in order.
""")

GIVEN = code(_table_src("QWEN3_FLAVORS", QWEN3) + "\n\n" + _table_src("LLAMA3_FLAVORS", LLAMA3) + '''

QWEN3_1_7B_CONFIG = {"model_type": "qwen3", "hidden_size": 2048, "num_hidden_layers": 28, "vocab_size": 151936,
                     "num_attention_heads": 16, "num_key_value_heads": 8, "tie_word_embeddings": True}
''')

TASK = md("""
## 任务：`derive_name_and_flavor(hf_config: dict) -> tuple[str, str]`

按上面的规则返回 `(name, flavor)`；不支持的 `model_type` 或没有匹配的 flavor 都抛出 `ValueError`。
""", """
## Task: `derive_name_and_flavor(hf_config: dict) -> tuple[str, str]`

Return `(name, flavor)` by the rules above; raise `ValueError` for an unsupported `model_type` and when no flavor matches.
""")

STUB = '''
def derive_name_and_flavor(hf_config):
    raise NotImplementedError("derive_name_and_flavor")
'''

SOL = '''
MODEL_NAMES = {"qwen2": "qwen3", "qwen3": "qwen3", "qwen2_moe": "qwen3", "qwen3_moe": "qwen3", "llama": "llama3"}
REGISTRIES = {"qwen3": QWEN3_FLAVORS, "llama3": LLAMA3_FLAVORS}


def derive_name_and_flavor(hf_config):
    model_type = hf_config.get("model_type")
    if model_type not in MODEL_NAMES:
        raise ValueError(f"model_type {model_type!r} is not supported by the torchtitan engine")
    name = MODEL_NAMES[model_type]
    want = (hf_config["hidden_size"], hf_config["num_hidden_layers"], hf_config["vocab_size"])
    for flavor, dim, n_layers, vocab in REGISTRIES[name]:
        if (dim, n_layers, vocab) == want:
            return name, flavor
    raise ValueError(f"No matching torchtitan flavor found for {name} with dim/layers/vocab {want}")
'''

SELFCHECK = code('''
# Public self-check
print(derive_name_and_flavor(QWEN3_1_7B_CONFIG))
print(derive_name_and_flavor({"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
                              "vocab_size": 151936}))
''')


def _reference() -> dict:
    pub = [call([hf("qwen3", 2048, 28, 151936)], ["qwen3", "1.7B"], public=True, label="Qwen3-1.7B"),
           call([hf("qwen3_moe", 2048, 48, 151936)], ["qwen3", "30B-A3B"], public=True,
                label="dim 2048, 48 layers (MoE)")]
    hidden = [call([hf("qwen3", 1024, 28, 151936)], ["qwen3", "0.6B"]),
              call([hf("qwen2", 2560, 36, 151936)], ["qwen3", "4B"]),
              call([hf("qwen3", 5120, 64, 151936)], ["qwen3", "32B"]),
              call([hf("qwen3", 256, 8, 2048)], ["qwen3", "debugmodel"]),
              call([hf("qwen2_moe", 4096, 94, 151936)], ["qwen3", "235B-A22B"]),
              call([hf("llama", 4096, 32, 128256)], ["llama3", "8B"]),
              call([hf("llama", 2048, 16, 128256)], ["llama3", "1B"])]
    errors = [call([hf("mistral", 4096, 32, 32000)], raises="ValueError", public=True, label="model_type mistral"),
              call([hf("qwen3", 2048, 30, 151936)], raises="ValueError"),
              call([hf("llama", 2048, 28, 151936)], raises="ValueError")]
    return {
        "public_cases": {"calls": pub, "compare": "exact", "feedback": fb(
            "Match dim, layer count and vocab together, in registry order.",
            "dim、层数、词表大小要同时匹配，并按注册顺序查找。")},
        "hidden_cases": {"calls": hidden, "compare": "exact", "feedback": fb(
            "Hidden configs cover other Qwen3 sizes, qwen2/qwen2_moe model types, the debug flavors and llama.",
            "隐藏用例覆盖其它 Qwen3 尺寸、qwen2/qwen2_moe 类型、debug flavor 和 llama。")},
        "errors": {"calls": errors, "compare": "exact", "feedback": fb(
            "Unsupported model types and configs without a matching flavor must raise ValueError.",
            "不支持的 model_type 或没有匹配 flavor 的配置都要抛出 ValueError。")},
    }


def spec() -> Spec:
    return Spec(
        id="ch05.flavor_derivation",
        title_en="Derive the torchtitan model name and flavor",
        title_zh="推导 torchtitan 模型名与 flavor",
        kernel_family="light",
        answers=[("derive_name_and_flavor", "function")],
        checks=[
            {"name": "public_cases", "answer": "derive_name_and_flavor", "kind": "function", "points": 3,
             "title": ("Course models", "课程中的模型")},
            {"name": "hidden_cases", "answer": "derive_name_and_flavor", "kind": "function", "points": 4,
             "title": ("Other sizes and model types", "其它尺寸和模型类型")},
            {"name": "errors", "answer": "derive_name_and_flavor", "kind": "function", "points": 3,
             "title": ("Unsupported configs raise ValueError", "不支持的配置抛出 ValueError")},
        ],
        reference=_reference(),
        cells=[INTRO, GIVEN, TASK, answer(STUB, SOL), SELFCHECK],
        mistakes=[
            Mistake("dim_only", [("if (dim, n_layers, vocab) == want:", "if dim == want[0]:")],
                    "graded", 5.3571, {"public_cases": "dim 2048, 48 layers (MoE)"}),
            Mistake("moe_types_unmapped", [('"qwen2_moe": "qwen3", "qwen3_moe": "qwen3", ', "")],
                    "error", 7.9286, {"public_cases": "dim 2048, 48 layers (MoE)"}),
            Mistake("returns_none", [('''    raise ValueError(f"No matching torchtitan flavor found for {name} with dim/layers/vocab {want}")''',
                                      "    return None")], "graded", 8.0, {"errors": "hidden"}),
        ],
    )
