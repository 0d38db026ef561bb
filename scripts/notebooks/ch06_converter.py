"""ch06.npu_converter: a converter registry swapping RMSNorm modules and the RoPE function for NPU kernels.

torch_npu cannot run on CPU machines, so the notebook ships labelled CPU stand-ins for `torch_npu.npu_rms_norm`
and `torch_npu.npu_rotary_mul`; expected outputs come from torchtitan's own RMSNorm / CosSinRoPE here.
"""
from __future__ import annotations

from ch05_06_common import Mistake, Spec, answer, call, code, fb, md


def _t(x) -> dict:
    return {"__tensor__": {"dtype": "float32", "shape": list(x.shape), "data": x.tolist()}}


def _inputs():
    import torch

    g = torch.Generator().manual_seed(606)

    def rnd(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).round(decimals=4)

    return torch, rnd


def ref_norm(x, w, eps):
    torch, _ = _inputs()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)


def ref_rope(q, k):
    from torchtitan.models.common.rope import CosSinRoPE

    rope = CosSinRoPE(CosSinRoPE.Config(dim=q.shape[-1], max_seq_len=q.shape[1], theta=1_000_000.0))
    return rope(q, k)


INTRO = md("""
# 06 · NPU 转换器：把 RMSNorm 与 RoPE 换成 NPU 算子

torchtitan-npu 用**转换器注册表**改造模型：`@register_model_converter(name)` 注册一个转换器，训练配置里写
`converters=["npu_rms_norm", "npu_rope"]`（课程的 verl 补丁 `apply_npu_patcher` 正是这样做的）。
- `npu_rms_norm`：把每个 `torchtitan.models.common.rmsnorm.RMSNorm` 换成 `NPURMSNorm`：复制原模块的 `__dict__`，
  forward 改为 `torch_npu.npu_rms_norm(x, weight, eps)[0]`；eps 依次取 `eps`、`variance_epsilon`、`epsilon`，都没有时用 `finfo(dtype).eps`。
  Qwen3-1.7B：28 层 × 4（attention_norm、ffn_norm、q_norm、k_norm）+ 最终 norm = 113 个模块，eps 1e-6。
- `npu_rope`：替换的是**函数**而不是模块：RoPE 的 cos/sin 应用函数改为调用 `torch_npu.npu_rotary_mul`。课程固定的 torchtitan
  中它是 `torchtitan.models.common.rope.apply_rotary_emb_cos_sin`；本机的 torchtitan 0.3.0 中同一函数是静态方法
  `CosSinRoPE.apply_rotary_emb(query, key, rope_cache)`，其中 `cos = rope_cache[..., :head_dim]`、`sin = rope_cache[..., head_dim:]`。

**本机没有 NPU，torch_npu 无法运行**：下面的 `npu_rms_norm` / `npu_rotary_mul` 是**CPU 替身**（接口相同，并统计调用次数），
只用于验证转换逻辑与数值。
""", """
# 06 · The NPU converter: swap RMSNorm and RoPE for NPU kernels

torchtitan-npu rewrites a model through a **converter registry**: `@register_model_converter(name)` registers a
converter and the training config lists `converters=["npu_rms_norm", "npu_rope"]` (exactly what the course's verl patch
`apply_npu_patcher` does).
- `npu_rms_norm`: every `torchtitan.models.common.rmsnorm.RMSNorm` becomes an `NPURMSNorm`: copy the old module's
  `__dict__`; forward = `torch_npu.npu_rms_norm(x, weight, eps)[0]`; eps comes from `eps`, `variance_epsilon` or
  `epsilon`, else `finfo(dtype).eps`. Qwen3-1.7B: 28 layers × 4 (attention_norm, ffn_norm, q_norm, k_norm) + the final
  norm = 113 modules, eps 1e-6.
- `npu_rope` replaces **functions**, not modules: the cos/sin RoPE application calls `torch_npu.npu_rotary_mul`. In the
  course's pinned torchtitan that is `torchtitan.models.common.rope.apply_rotary_emb_cos_sin`; in torchtitan 0.3.0
  (installed here) the same function is the static method `CosSinRoPE.apply_rotary_emb(query, key, rope_cache)`, with
  `cos = rope_cache[..., :head_dim]` and `sin = rope_cache[..., head_dim:]`.

**There is no NPU here and torch_npu cannot run**: `npu_rms_norm` / `npu_rotary_mul` below are **CPU stand-ins** (same
interface, and they count their calls), used only to check the conversion logic and the numerics.
""")

GIVEN = code('''
import torch
from torchtitan.models.common.nn_modules import RMSNorm
from torchtitan.models.common.rope import CosSinRoPE, RoPE

KERNEL_CALLS = {"npu_rms_norm": 0, "npu_rotary_mul": 0}


def npu_rms_norm(x, gamma, epsilon=1e-6):
    """CPU STAND-IN for torch_npu.npu_rms_norm (torch_npu cannot run here): returns (y, rstd)."""
    KERNEL_CALLS["npu_rms_norm"] += 1
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + epsilon)
    return (xf * rstd).to(x.dtype) * gamma, rstd


def npu_rotary_mul(x, cos, sin):
    """CPU STAND-IN for torch_npu.npu_rotary_mul: x*cos + rotate_half(x)*sin."""
    KERNEL_CALLS["npu_rotary_mul"] += 1
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin
''')

TASK = md("""
## 任务
1. `register_converter(name)`：装饰器，把转换函数 `convert(model) -> int` 登记到 `CONVERTERS[name]`。
2. `NPURMSNorm(RMSNorm)` 与 `"npu_rms_norm"` 转换器：递归替换模型中所有 RMSNorm（包括嵌套的 q_norm/k_norm），返回替换个数。
3. `"npu_rope"` 转换器：让 `CosSinRoPE.apply_rotary_emb` 改用 `npu_rotary_mul`（对 q、k 各调用一次），返回模型中 `CosSinRoPE` 模块的个数。
4. `apply_converters(model, names) -> dict`：按顺序应用，返回 `{name: 个数}`；未注册的名称抛出 `ValueError`。
""", """
## Tasks
1. `register_converter(name)`: a decorator that records a converter function `convert(model) -> int` in `CONVERTERS[name]`.
2. `NPURMSNorm(RMSNorm)` and the `"npu_rms_norm"` converter: replace every RMSNorm in the model, recursively (nested
   q_norm/k_norm included); return how many were replaced.
3. the `"npu_rope"` converter: make `CosSinRoPE.apply_rotary_emb` use `npu_rotary_mul` (once for q, once for k); return
   the number of `CosSinRoPE` modules in the model.
4. `apply_converters(model, names) -> dict`: apply in order, return `{name: count}`; raise `ValueError` for a name that
   is not registered.
""")

STUB = '''
CONVERTERS = {}


def register_converter(name):
    raise NotImplementedError("register_converter")


class NPURMSNorm(RMSNorm):
    pass


def apply_converters(model, names):
    raise NotImplementedError("apply_converters")
'''

SOL = '''
CONVERTERS = {}


def register_converter(name):
    def wrap(fn):
        CONVERTERS[name] = fn
        return fn
    return wrap


class NPURMSNorm(RMSNorm):
    """RMSNorm whose forward runs the NPU kernel."""

    def forward(self, x):
        eps = next((getattr(self, a) for a in ("eps", "variance_epsilon", "epsilon")
                    if getattr(self, a, None) is not None), None)
        if eps is None:
            eps = torch.finfo(x.dtype).eps
        return npu_rms_norm(x, self.weight, eps)[0]


@register_converter("npu_rms_norm")
def convert_rms_norm(model):
    replaced = 0
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, RMSNorm) and not isinstance(child, NPURMSNorm):
                new = NPURMSNorm.__new__(NPURMSNorm)
                new.__dict__.update(child.__dict__)
                setattr(parent, child_name, new)
                replaced += 1
    return replaced


def npu_apply_rotary_emb(query, key, rope_cache):
    head_dim = query.shape[-1]
    cos, sin = rope_cache[..., :head_dim], rope_cache[..., head_dim:]
    q = npu_rotary_mul(query.float(), cos, sin)
    k = npu_rotary_mul(key.float(), cos, sin)
    return q.type_as(query), k.type_as(key)


@register_converter("npu_rope")
def convert_rope(model):
    CosSinRoPE.apply_rotary_emb = staticmethod(npu_apply_rotary_emb)
    return sum(isinstance(m, CosSinRoPE) for m in model.modules())


def apply_converters(model, names):
    counts = {}
    for name in names:
        if name not in CONVERTERS:
            raise ValueError(f"unknown converter {name!r}; registered: {sorted(CONVERTERS)}")
        counts[name] = CONVERTERS[name](model)
    return counts
'''

HARNESS = code('''
# Grader-facing helpers (keep as they are): they run YOUR converters.
from torchtitan.models.qwen3 import model_registry


def build_qwen3_1_7b_on_meta():
    with torch.device("meta"):
        return model_registry("1.7B", attn_backend="flex").model.build()


CONVERTED_1_7B = apply_converters(build_qwen3_1_7b_on_meta(), ["npu_rms_norm", "npu_rope"])
print(CONVERTED_1_7B)


def converted_norm_forward(x, weight, eps):
    holder = torch.nn.Module()
    holder.block = torch.nn.Module()
    holder.block.norm = RMSNorm(RMSNorm.Config(normalized_shape=x.shape[-1], eps=eps))
    with torch.no_grad():
        holder.block.norm.weight.copy_(weight)
    apply_converters(holder, ["npu_rms_norm"])
    KERNEL_CALLS["npu_rms_norm"] = 0
    with torch.no_grad():
        out = holder.block.norm(x)
    return {"module": type(holder.block.norm).__name__, "kernel_calls": KERNEL_CALLS["npu_rms_norm"], "out": out}


def converted_rope_forward(q, k):
    holder = torch.nn.Module()
    holder.rope = CosSinRoPE(CosSinRoPE.Config(dim=q.shape[-1], max_seq_len=q.shape[1], theta=1_000_000.0))
    counts = apply_converters(holder, ["npu_rope"])
    KERNEL_CALLS["npu_rotary_mul"] = 0
    q_out, k_out = holder.rope(q, k)
    return {"rope_modules": counts["npu_rope"], "kernel_calls": KERNEL_CALLS["npu_rotary_mul"], "q": q_out, "k": k_out}


def convert_names(names):
    with torch.device("meta"):
        model = model_registry("debugmodel", attn_backend="flex").model.build()
    return apply_converters(model, names)
''')

SELFCHECK = code('''
# Public self-check
x = torch.randn(2, 8)
print(converted_norm_forward(x, torch.ones(8), 1e-6)["module"])
r = converted_rope_forward(torch.randn(1, 4, 2, 8), torch.randn(1, 4, 1, 8))
print(r["rope_modules"], r["kernel_calls"])
print(convert_names(["npu_rms_norm"]))
''')


def _reference() -> dict:
    torch, rnd = _inputs()
    norm_cases = [(rnd(2, 8), rnd(8, scale=0.5) + 1, 1e-6), (rnd(3, 16), rnd(16) , 1e-5),
                  (rnd(2, 3, 8, scale=1e-3), rnd(8) + 1, 1e-6)]
    norm = []
    for i, (x, w, eps) in enumerate(norm_cases):
        exp = {"module": "NPURMSNorm", "kernel_calls": 1, "out": _t(ref_norm(x, w, eps))}
        norm.append(call([_t(x), _t(w), eps], exp, public=i == 0, label="x [2, 8], eps 1e-6" if i == 0 else None))
    rope = []
    for i, (q, k) in enumerate([(rnd(1, 4, 2, 8), rnd(1, 4, 1, 8)), (rnd(2, 6, 4, 16), rnd(2, 6, 2, 16))]):
        qo, ko = ref_rope(q, k)
        exp = {"rope_modules": 1, "kernel_calls": 2, "q": _t(qo), "k": _t(ko)}
        rope.append(call([_t(q), _t(k)], exp, public=i == 0, label="q [1, 4, 2, 8], k [1, 4, 1, 8]" if i == 0 else None))
    names = [call([["npu_rms_norm", "npu_rope"]], {"npu_rms_norm": 33, "npu_rope": 8}, public=True,
                  label="debugmodel, both converters"),
             call([["npu_flash_attention"]], raises="ValueError", public=True, label="unknown converter"),
             call([["npu_rope"]], {"npu_rope": 8})]
    tol = {"compare": "numeric", "rtol": 1e-5, "atol": 1e-6}
    return {
        "counts_1_7b": {"expected": {"npu_rms_norm": 113, "npu_rope": 28}, "feedback": fb(
            "Walk every submodule (named_modules / recursion), not only the top level: q_norm and k_norm live inside "
            "attention.", "要遍历所有子模块（named_modules 或递归），不能只看顶层：q_norm 和 k_norm 在 attention 里面。")},
        "rmsnorm_numerics": {"calls": norm, **tol, "feedback": fb(
            "The converted module must be an NPURMSNorm whose forward calls npu_rms_norm exactly once, with the module's "
            "own eps (small inputs make a wrong eps visible).",
            "替换后的模块必须是 NPURMSNorm，forward 只调用一次 npu_rms_norm，并使用模块自身的 eps（小输入会暴露错误的 eps）。")},
        "rope_numerics": {"calls": rope, **tol, "feedback": fb(
            "Patch CosSinRoPE.apply_rotary_emb so it splits the cache into cos | sin and calls npu_rotary_mul for q "
            "and for k; outputs must equal torchtitan's rotate-half RoPE.",
            "修补 CosSinRoPE.apply_rotary_emb：把缓存分成 cos | sin，对 q 和 k 各调用一次 npu_rotary_mul；结果须与 torchtitan 的 rotate-half RoPE 一致。")},
        "registry": {"calls": names, "compare": "exact", "feedback": fb(
            "apply_converters returns {name: count} in order and raises ValueError for unregistered names.",
            "apply_converters 按顺序返回 {名称: 个数}，未注册的名称抛出 ValueError。")},
    }


def spec() -> Spec:
    return Spec(
        id="ch06.npu_converter",
        title_en="NPU converter registry: RMSNorm and RoPE",
        title_zh="NPU 转换器注册表：RMSNorm 与 RoPE",
        kernel_family="torch",
        answers=[("CONVERTED_1_7B", "value"), ("converted_norm_forward", "function"),
                 ("converted_rope_forward", "function"), ("convert_names", "function")],
        checks=[
            {"name": "counts_1_7b", "answer": "CONVERTED_1_7B", "kind": "mapping", "points": 3,
             "title": ("Modules converted on Qwen3-1.7B (meta device)", "Qwen3-1.7B（meta 设备）上替换的模块数")},
            {"name": "rmsnorm_numerics", "answer": "converted_norm_forward", "kind": "function", "points": 3,
             "title": ("NPURMSNorm numerics", "NPURMSNorm 数值")},
            {"name": "rope_numerics", "answer": "converted_rope_forward", "kind": "function", "points": 3,
             "title": ("npu_rope numerics", "npu_rope 数值")},
            {"name": "registry", "answer": "convert_names", "kind": "function", "points": 1,
             "title": ("Registry lookup and errors", "注册表查找与报错")},
        ],
        reference=_reference(),
        cells=[INTRO, GIVEN, TASK, answer(STUB, SOL), HARNESS, SELFCHECK],
        mistakes=[
            Mistake("top_level_only", [("for parent in list(model.modules()):", "for parent in [model]:")],
                    "graded", 5.1667, {"counts_1_7b": "npu_rms_norm"}),
            Mistake("hf_eps_name_only", [('for a in ("eps", "variance_epsilon", "epsilon")',
                                          'for a in ("variance_epsilon",)')],
                    "graded", 9.0, {"rmsnorm_numerics": "hidden"}),
            Mistake("rotate_half_sign", [("    q = npu_rotary_mul(query.float(), cos, sin)\n    k = npu_rotary_mul(key.float(), cos, sin)",
                                          "    q = npu_rotary_mul(query.float(), cos, -sin)\n    k = npu_rotary_mul(key.float(), cos, -sin)")],
                    "graded", 7.0, {"rope_numerics": "q [1, 4, 2, 8]"}),
        ],
    )
