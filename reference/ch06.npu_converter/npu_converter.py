# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · NPU 转换器：把 RMSNorm 与 RoPE 换成 NPU 算子
#
# torchtitan-npu 用**转换器注册表**改造模型：`@register_model_converter(name)` 注册一个转换器，训练配置里写
# `converters=["npu_rms_norm", "npu_rope"]`（课程的 verl 补丁 `apply_npu_patcher` 正是这样做的）。
# - `npu_rms_norm`：把每个 `torchtitan.models.common.rmsnorm.RMSNorm` 换成 `NPURMSNorm`：复制原模块的 `__dict__`，
#   forward 改为 `torch_npu.npu_rms_norm(x, weight, eps)[0]`；eps 依次取 `eps`、`variance_epsilon`、`epsilon`，都没有时用 `finfo(dtype).eps`
#   （模块的 `eps` 可以是 `None`，`torch.nn.RMSNorm` 允许这样，此时按"都没有"处理）。
#   Qwen3-1.7B：28 层 × 4（attention_norm、ffn_norm、q_norm、k_norm）+ 最终 norm = 113 个模块，eps 1e-6。
# - `npu_rope`：替换的是**函数**而不是模块：RoPE 的 cos/sin 应用函数改为调用 `torch_npu.npu_rotary_mul`。课程固定的 torchtitan
#   中它是 `torchtitan.models.common.rope.apply_rotary_emb_cos_sin`；本机的 torchtitan 0.3.0 中同一函数是静态方法
#   `CosSinRoPE.apply_rotary_emb(query, key, rope_cache)`，其中 `cos = rope_cache[..., :head_dim]`、`sin = rope_cache[..., head_dim:]`。
#
# **本机没有 NPU，torch_npu 无法运行**：下面的 `npu_rms_norm` / `npu_rotary_mul` 是**CPU 替身**（接口相同，并统计调用次数），
# 只用于验证转换逻辑与数值。
#
# ---
#
# # 06 · The NPU converter: swap RMSNorm and RoPE for NPU kernels
#
# torchtitan-npu rewrites a model through a **converter registry**: `@register_model_converter(name)` registers a
# converter and the training config lists `converters=["npu_rms_norm", "npu_rope"]` (exactly what the course's verl patch
# `apply_npu_patcher` does).
# - `npu_rms_norm`: every `torchtitan.models.common.rmsnorm.RMSNorm` becomes an `NPURMSNorm`: copy the old module's
#   `__dict__`; forward = `torch_npu.npu_rms_norm(x, weight, eps)[0]`; eps comes from `eps`, `variance_epsilon` or
#   `epsilon`, else `finfo(dtype).eps` (the module's `eps` may be `None`, as `torch.nn.RMSNorm` allows: then none of them
#   is set). Qwen3-1.7B: 28 layers × 4 (attention_norm, ffn_norm, q_norm, k_norm) + the final
#   norm = 113 modules, eps 1e-6.
# - `npu_rope` replaces **functions**, not modules: the cos/sin RoPE application calls `torch_npu.npu_rotary_mul`. In the
#   course's pinned torchtitan that is `torchtitan.models.common.rope.apply_rotary_emb_cos_sin`; in torchtitan 0.3.0
#   (installed here) the same function is the static method `CosSinRoPE.apply_rotary_emb(query, key, rope_cache)`, with
#   `cos = rope_cache[..., :head_dim]` and `sin = rope_cache[..., head_dim:]`.
#
# **There is no NPU here and torch_npu cannot run**: `npu_rms_norm` / `npu_rotary_mul` below are **CPU stand-ins** (same
# interface, and they count their calls), used only to check the conversion logic and the numerics.

# %% tags=["harness"]
import torch
from torchtitan.models.common.nn_modules import RMSNorm
from torchtitan.models.common.rope import CosSinRoPE, RoPE

# CPU stand-ins for the NPU kernels (grader-owned: grading re-runs this cell exactly as shipped, after your cells, and reads the values from that run).
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

# %% [markdown]
# ## 任务
# 1. `register_converter(name)`：装饰器，把转换函数 `convert(model) -> int` 登记到 `CONVERTERS[name]`。
# 2. `NPURMSNorm(RMSNorm)` 与 `"npu_rms_norm"` 转换器：递归替换模型中所有 RMSNorm（包括嵌套的 q_norm/k_norm），返回替换个数。
#    输入 `x` 可以有任意多个前导维（如 `[batch, seq, dim]`），归一化只作用在最后一维。
# 3. `"npu_rope"` 转换器：让 `CosSinRoPE.apply_rotary_emb` 改用 `npu_rotary_mul`（对 q、k 各调用一次），返回模型中 `CosSinRoPE` 模块的个数。
# 4. `apply_converters(model, names) -> dict`：按顺序应用，返回 `{name: 个数}`；未注册的名称抛出 `ValueError`。
#
# ---
#
# ## Tasks
# 1. `register_converter(name)`: a decorator that records a converter function `convert(model) -> int` in `CONVERTERS[name]`.
# 2. `NPURMSNorm(RMSNorm)` and the `"npu_rms_norm"` converter: replace every RMSNorm in the model, recursively (nested
#    q_norm/k_norm included); return how many were replaced.
#    The input `x` may have any number of leading dimensions (e.g. `[batch, seq, dim]`); the norm runs over the last one.
# 3. the `"npu_rope"` converter: make `CosSinRoPE.apply_rotary_emb` use `npu_rotary_mul` (once for q, once for k); return
#    the number of `CosSinRoPE` modules in the model.
# 4. `apply_converters(model, names) -> dict`: apply in order, return `{name: count}`; raise `ValueError` for a name that
#    is not registered.

# %%
CONVERTERS = {}


def register_converter(name):
    ### BEGIN SOLUTION
    def wrap(fn):
        CONVERTERS[name] = fn
        return fn
    return wrap
    ### STUB
    # raise NotImplementedError("register_converter")
    ### END SOLUTION


class NPURMSNorm(RMSNorm):
    ### BEGIN SOLUTION
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
    ### STUB
    # pass
    ### END SOLUTION


def apply_converters(model, names):
    ### BEGIN SOLUTION
    counts = {}
    for name in names:
        if name not in CONVERTERS:
            raise ValueError(f"unknown converter {name!r}; registered: {sorted(CONVERTERS)}")
        counts[name] = CONVERTERS[name](model)
    return counts
    ### STUB
    # raise NotImplementedError("apply_converters")
    ### END SOLUTION

# %% tags=["harness"]
# Grader-facing helpers (grader-owned: grading re-runs this cell exactly as shipped, after your cells, and reads the values from that run):
# they run YOUR converters.
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

# %%
# Public self-check
x = torch.randn(2, 8)
print(converted_norm_forward(x, torch.ones(8), 1e-6)["module"])
r = converted_rope_forward(torch.randn(1, 4, 2, 8), torch.randn(1, 4, 1, 8))
print(r["rope_modules"], r["kernel_calls"])
print(convert_names(["npu_rms_norm"]))

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (the bulky per-check data is in cases.json next to this file), and typical mistakes as
# patches of the solution with the score and the check each must fail.
RULES = {'counts_1_7b': [{'id': 'recursive',
                  'stated': 'replace every RMSNorm in the model, recursively',
                  'hint': {'en': 'Walk every submodule (named_modules or recursion), not only the top level: '
                                 'q_norm and k_norm live inside attention.',
                           'zh': '要遍历所有子模块（named_modules 或递归），不能只看顶层：q_norm 和 k_norm 在 attention 里面。'}},
                 {'id': 'rope_count',
                  'stated': 'the number of `CosSinRoPE` modules in the model',
                  'hint': {'en': 'npu_rope returns how many CosSinRoPE modules the model holds.',
                           'zh': 'npu_rope 返回模型中 CosSinRoPE 模块的个数。'}}],
 'rmsnorm_numerics': [{'id': 'npu_forward',
                       'stated': 'forward = `torch_npu.npu_rms_norm(x, weight, eps)[0]`',
                       'hint': {'en': 'The converted module must be an NPURMSNorm whose forward calls '
                                      'npu_rms_norm(x, weight, eps) exactly once and returns its first '
                                      'output.',
                                'zh': '替换后的模块必须是 NPURMSNorm，forward 只调用一次 npu_rms_norm(x, weight, '
                                      'eps)，并返回它的第一个输出。'}},
                      {'id': 'own_eps',
                       'stated': 'eps comes from `eps`, `variance_epsilon` or `epsilon`, else '
                                 '`finfo(dtype).eps`',
                       'hint': {'en': "Use the module's own eps (looked up as eps, variance_epsilon, "
                                      'epsilon), never a fixed value: small inputs make a wrong eps visible.',
                                'zh': '使用模块自己的 eps（依次查 eps、variance_epsilon、epsilon），不要写死：小输入会暴露错误的 eps。'}},
                      {'id': 'leading_dims',
                       'stated': 'may have any number of leading dimensions',
                       'hint': {'en': 'x can have any number of leading dimensions; the norm runs over the '
                                      'last one only.',
                                'zh': 'x 可以有任意多个前导维；归一化只作用在最后一维。'},
                       'types': 'may have any number of leading dimensions'},
                      {'id': 'none_eps',
                       'stated': "the module's `eps` may be `None`",
                       'hint': {'en': 'A module whose eps is None counts as having none of eps, '
                                      'variance_epsilon and epsilon: fall back to torch.finfo(x.dtype).eps.',
                                'zh': '模块的 eps 为 None 时，视为 eps、variance_epsilon、epsilon 都没有：改用 '
                                      'torch.finfo(x.dtype).eps。'},
                       'types': "the module's `eps` may be `None`"}],
 'rope_numerics': [{'id': 'rope_kernel',
                    'stated': 'make `CosSinRoPE.apply_rotary_emb` use `npu_rotary_mul` (once for q, once for '
                              'k)',
                    'hint': {'en': 'Patch CosSinRoPE.apply_rotary_emb so it calls npu_rotary_mul once for q '
                                   "and once for k; the outputs must equal torchtitan's rotate-half RoPE.",
                             'zh': '修补 CosSinRoPE.apply_rotary_emb，使它对 q、k 各调用一次 npu_rotary_mul；结果须与 '
                                   'torchtitan 的 rotate-half RoPE 一致。'}},
                   {'id': 'cos_sin_split',
                    'stated': '`cos = rope_cache[..., :head_dim]` and `sin = rope_cache[..., head_dim:]`',
                    'hint': {'en': 'Split the cache at head_dim: the first half is cos, the second half is '
                                   'sin.',
                             'zh': '在 head_dim 处切分缓存：前一半是 cos，后一半是 sin。'}}],
 'registry': [{'id': 'apply_in_order',
               'stated': 'apply in order, return `{name: count}`',
               'hint': {'en': 'apply_converters runs each named converter and returns {name: count} for '
                              'every name given.',
                        'zh': 'apply_converters 依次运行每个给出的转换器，并为每个名称返回 {名称: 个数}。'}},
              {'id': 'unknown_raises',
               'stated': 'raise `ValueError` for a name that is not registered',
               'hint': {'en': 'A name that no converter registered raises ValueError, even after other names '
                              'were applied.',
                        'zh': '没有注册的名称要抛出 ValueError，即使之前的名称已经应用。'}}]}

MISTAKES = [{'name': 'hf_eps_name_only',
  'score': 8.8,
  'fails': {'rmsnorm_numerics': 'hidden'},
  'patch': [{'find': '        eps = next((getattr(self, a) for a in ("eps", "variance_epsilon", "epsilon")',
             'replace': '        eps = next((getattr(self, a) for a in ("variance_epsilon",)'}]},
 {'name': 'rotate_half_sign',
  'score': 7.0,
  'fails': {'rope_numerics': 'q [1, 4, 2, 8]'},
  'patch': [{'find': '    q = npu_rotary_mul(query.float(), cos, sin)\n'
                     '    k = npu_rotary_mul(key.float(), cos, sin)',
             'replace': '    q = npu_rotary_mul(query.float(), cos, -sin)\n'
                        '    k = npu_rotary_mul(key.float(), cos, -sin)'}]},
 {'name': 'top_level_only',
  'score': 5.25,
  'fails': {'counts_1_7b': 'every submodule'},
  'patch': [{'find': '    for parent in list(model.modules()):', 'replace': '    for parent in [model]:'}]},
 {'name': 'eps_hard_coded',
  'score': 8.8,
  'fails': {'rmsnorm_numerics': "module's own eps"},
  'patch': [{'find': '        if eps is None:\n            eps = torch.finfo(x.dtype).eps\n',
             'replace': '        eps = 1e-6  # the Qwen3 value, whatever the module says\n'}]},
 {'name': 'unknown_name_skipped',
  'score': 9.5,
  'fails': {'registry': 'ValueError'},
  'patch': [{'find': '            raise ValueError(f"unknown converter {name!r}; registered: '
                     '{sorted(CONVERTERS)}")',
             'replace': '            continue  # silently skip names without a converter'}]},
 {'name': 'eps_attr_only',
  'score': 9.4,
  'fails': {'rmsnorm_numerics': 'own eps'},
  'patch': [{'find': '        eps = next((getattr(self, a) for a in ("eps", "variance_epsilon", "epsilon")\n'
                     '                    if getattr(self, a, None) is not None), None)\n'
                     '        if eps is None:\n'
                     '            eps = torch.finfo(x.dtype).eps\n',
             'replace': '        eps = self.eps  # nn.RMSNorm keeps it here\n'}]}]

EQUIVALENT = [{'mutant': 'str_empty:d0038313:2',
  'reason': "torchtitan's RMSNorm, the only norm the converter meets here, has an `eps` attribute and no "
            "`variance_epsilon`: looking up '' instead finds nothing either way"},
 {'mutant': 'str_empty:d0038313:3',
  'reason': "torchtitan's RMSNorm, the only norm the converter meets here, has an `eps` attribute and no "
            "`epsilon`: looking up '' instead finds nothing either way"}]
