# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · `get_per_tensor_param()`：把 FSDP2 分片物化成完整的 bf16 张量
#
# 每个训练步之后，verl 的 `update_weights` 把 Actor 的新权重同步给 vLLM：
# 1. 把模型搬回设备，`get_model_state_dict(model)` 取出状态字典——FSDP2 下每个值都是 **DTensor 分片**（`Shard(0)`）；
# 2. `sd_adapter.to_hf()` 把名字换成 HF 名称（tied 时跳过输出头）；
# 3. 权重绑定时补上 `lm_head.weight = model.embed_tokens.weight`；
# 4. 逐个 yield `(name, value.to(dev).full_tensor().to(bf16))`——`full_tensor()` 是一次 all-gather（"物化"），**每个 rank 都必须参与**。
#
# 这里用实验运行时 `exercises.lab` 的小型 torchtitan Qwen3（与 1.7B 同结构，dim 128、4 层、tied；权重是随课程运行时发布的 SFT 检查点，像 `initial_load_in_hf` 一样经 `from_hf` 载入），在 2 个 rank 上用
# torchtitan 的 `ParallelDims` + `parallelize_qwen3` 做 FSDP2 分片（`data_parallel_shard_size=2`），然后调用你的函数。评分节点有 NPU 时用 2 张 NPU（hccl），有 GPU 时用 2 张
# GPU（nccl），否则用 2 个 CPU 进程（gloo）。
#
# ---
#
# # 05 · `get_per_tensor_param()`: materialize FSDP2 shards into full bf16 tensors
#
# After each training step verl's `update_weights` syncs the Actor's new weights into vLLM:
# 1. move the model to the device and take `get_model_state_dict(model)`: under FSDP2 every value is a **DTensor shard**
#    (`Shard(0)`);
# 2. `sd_adapter.to_hf()` renames to HF names (skipping the output head when tied);
# 3. with tied weights, add `lm_head.weight = model.embed_tokens.weight`;
# 4. yield `(name, value.to(dev).full_tensor().to(bf16))` one by one: `full_tensor()` is an all-gather ("materialization"),
#    so **every rank must take part**.
#
# Here the lab runtime `exercises.lab` provides a tiny torchtitan Qwen3 (the 1.7B architecture at dim 128, 4 layers,
# tied; its weights are the runtime's shipped SFT checkpoint, loaded through `from_hf` as `initial_load_in_hf` does), sharded with FSDP2 through torchtitan's `ParallelDims` + `parallelize_qwen3` (`data_parallel_shard_size=2`) on 2
# ranks, which then call your function: 2 NPUs (hccl) where the grading node has them, else 2 GPUs (nccl), else 2 CPU
# processes (gloo).

# %% [markdown]
# ## 任务：在 `per_tensor_worker.py` 中实现 `get_per_tensor_param(model, adapter, device="cpu")`
#
# 生成器，依次 yield `(HF 名称, 完整张量)`：完整形状、`torch.bfloat16`、包含绑定的 `lm_head.weight`。
# （`adapter` 是 torchtitan 的 `Qwen3StateDictAdapter`，`adapter.model_config.enable_weight_tying` 表示是否绑定。）
#
# ---
#
# ## Task: implement `get_per_tensor_param(model, adapter, device="cpu")` in `per_tensor_worker.py`
#
# A generator yielding `(HF name, full tensor)`: full shape, `torch.bfloat16`, the tied `lm_head.weight` included.
# (`adapter` is torchtitan's `Qwen3StateDictAdapter`; `adapter.model_config.enable_weight_tying` says whether weights are tied.)

# %%
# %%writefile per_tensor_worker.py
import torch
from torch.distributed.checkpoint.state_dict import get_model_state_dict
from torch.distributed.tensor import DTensor


def get_per_tensor_param(model, adapter, device="cpu"):
    ### BEGIN SOLUTION
    """Yield (HF name, full bf16 tensor); collective: every rank iterates to the end."""
    sharded = get_model_state_dict(model)  # DTensor shards under FSDP2
    hf = adapter.to_hf(sharded)
    if adapter.model_config.enable_weight_tying:
        hf["lm_head.weight"] = hf["model.embed_tokens.weight"]
    for name, value in hf.items():
        value = value.to(device)
        if isinstance(value, DTensor):
            value = value.full_tensor()  # all-gather of the Shard(0) pieces
        yield name, value.to(torch.bfloat16)
    ### STUB
    # raise NotImplementedError("get_per_tensor_param")
    ### END SOLUTION

# %% tags=["harness"]
# Launcher (grader-owned: grading re-runs this cell exactly as shipped, after your cells, and reads the values from that run): writes the per-rank entry point, spawns 2 ranks, summarizes rank 0.
# The ranks use the device the grader gave this run (TITANGRADE_DEVICE: 2 NPUs on hccl, 2 GPUs on nccl), else 2 CPU ranks on gloo.
from pathlib import Path

Path("per_tensor_harness.py").write_text('''
import os
import torch
import torch.distributed as dist



def entry(rank, rendezvous, out_dir, seed):
    torch.set_num_threads(1)
    kind = os.environ.get("TITANGRADE_DEVICE", "cpu")
    if kind == "cuda":
        torch.cuda.set_device(rank)
    elif kind == "npu":
        import torch_npu
        torch.npu.set_device(rank)
    backend = {"npu": "hccl", "cuda": "nccl"}.get(kind, "gloo")
    dist.init_process_group(backend, init_method=rendezvous, rank=rank, world_size=2)
    from exercises.lab.checkpoint import SHIPPED_CHECKPOINT, dims_of_checkpoint, load_hf_into_model, state_dict_adapter
    from exercises.lab.parallel import ParallelPlan, build_parallel_dims, build_sharded_model, params_are_dtensors
    import per_tensor_worker

    dims = dims_of_checkpoint(SHIPPED_CHECKPOINT)
    plan = ParallelPlan(data_parallel_shard_size=2, context_parallel_size=1, world_size=2,
                        device_type=kind if kind in ("cuda", "npu") else "cpu")
    model = build_sharded_model(dims, plan, build_parallel_dims(plan), seed=seed)
    assert params_are_dtensors(model), "the lab model should be FSDP2-sharded"
    adapter = state_dict_adapter(dims)
    # As the engine's initial_load_in_hf: the SFT checkpoint enters the shards through from_hf.
    load_hf_into_model(model, SHIPPED_CHECKPOINT, adapter)
    out = {}
    for name, t in per_tensor_worker.get_per_tensor_param(model, adapter):
        out[name] = t.detach().clone()
    torch.save(out, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()
    # done and saved: leave without the interpreter's teardown, where a backend thread that aborts (SIGABRT)
    # would fail a launch whose results are already written
    import sys
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
''')

import importlib
import os
import sys
import tempfile

import torch
import torch.multiprocessing as mp


def run_materialize(seed=1234):
    """Launch 2 ranks; each materializes the sharded lab model with YOUR get_per_tensor_param."""
    sys.path.insert(0, os.getcwd())
    import per_tensor_harness
    importlib.reload(per_tensor_harness)
    out_dir = tempfile.mkdtemp(dir=os.getcwd())
    rendezvous = f"file://{out_dir}/rendezvous"  # a file store: no TCP port another process could take first
    mp.start_processes(per_tensor_harness.entry, args=(rendezvous, out_dir, seed), nprocs=2, start_method="spawn")
    r0, r1 = (torch.load(os.path.join(out_dir, f"rank{r}.pt"), map_location="cpu") for r in range(2))
    return {
        "names": sorted(r0),
        "shapes": {n: list(t.shape) for n, t in r0.items()},
        "dtypes": sorted({str(t.dtype) for t in r0.values()}),
        "checksums": {n: [float(t.float().abs().sum()), float(t.float().pow(2).sum())] for n, t in r0.items()},
        "tied": {
            "lm_head_is_embedding": bool("lm_head.weight" in r0 and "model.embed_tokens.weight" in r0
                                         and torch.equal(r0["lm_head.weight"], r0["model.embed_tokens.weight"])),
            "ranks_agree": bool(r0.keys() == r1.keys() and all(torch.equal(r0[n], r1[n]) for n in r0)),
        },
    }


RESULT = run_materialize(seed=1234)
NAMES, SHAPES, DTYPES = RESULT["names"], RESULT["shapes"], RESULT["dtypes"]
CHECKSUMS, TIED = RESULT["checksums"], RESULT["tied"]
print(len(NAMES), DTYPES, TIED)

# %%
# Public self-check: full (not sharded) shapes, bf16, the tied head present and equal on both ranks
print(SHAPES["model.embed_tokens.weight"], "(expect the full [vocab=128, dim=128])")
print("dtypes:", DTYPES, "| tied lm_head equals embedding:", TIED["lm_head_is_embedding"],
      "| ranks agree:", TIED["ranks_agree"])

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'hf_names': {'expected': ['lm_head.weight',
                           'model.embed_tokens.weight',
                           'model.layers.0.input_layernorm.weight',
                           'model.layers.0.mlp.down_proj.weight',
                           'model.layers.0.mlp.gate_proj.weight',
                           'model.layers.0.mlp.up_proj.weight',
                           'model.layers.0.post_attention_layernorm.weight',
                           'model.layers.0.self_attn.k_norm.weight',
                           'model.layers.0.self_attn.k_proj.weight',
                           'model.layers.0.self_attn.o_proj.weight',
                           'model.layers.0.self_attn.q_norm.weight',
                           'model.layers.0.self_attn.q_proj.weight',
                           'model.layers.0.self_attn.v_proj.weight',
                           'model.layers.1.input_layernorm.weight',
                           'model.layers.1.mlp.down_proj.weight',
                           'model.layers.1.mlp.gate_proj.weight',
                           'model.layers.1.mlp.up_proj.weight',
                           'model.layers.1.post_attention_layernorm.weight',
                           'model.layers.1.self_attn.k_norm.weight',
                           'model.layers.1.self_attn.k_proj.weight',
                           'model.layers.1.self_attn.o_proj.weight',
                           'model.layers.1.self_attn.q_norm.weight',
                           'model.layers.1.self_attn.q_proj.weight',
                           'model.layers.1.self_attn.v_proj.weight',
                           'model.layers.2.input_layernorm.weight',
                           'model.layers.2.mlp.down_proj.weight',
                           'model.layers.2.mlp.gate_proj.weight',
                           'model.layers.2.mlp.up_proj.weight',
                           'model.layers.2.post_attention_layernorm.weight',
                           'model.layers.2.self_attn.k_norm.weight',
                           'model.layers.2.self_attn.k_proj.weight',
                           'model.layers.2.self_attn.o_proj.weight',
                           'model.layers.2.self_attn.q_norm.weight',
                           'model.layers.2.self_attn.q_proj.weight',
                           'model.layers.2.self_attn.v_proj.weight',
                           'model.layers.3.input_layernorm.weight',
                           'model.layers.3.mlp.down_proj.weight',
                           'model.layers.3.mlp.gate_proj.weight',
                           'model.layers.3.mlp.up_proj.weight',
                           'model.layers.3.post_attention_layernorm.weight',
                           'model.layers.3.self_attn.k_norm.weight',
                           'model.layers.3.self_attn.k_proj.weight',
                           'model.layers.3.self_attn.o_proj.weight',
                           'model.layers.3.self_attn.q_norm.weight',
                           'model.layers.3.self_attn.q_proj.weight',
                           'model.layers.3.self_attn.v_proj.weight',
                           'model.norm.weight'],
              'feedback': {'en': 'Every torchtitan weight must come out under its HF name (adapter.to_hf), '
                                 'plus the tied lm_head.weight.',
                           'zh': '每个 torchtitan 权重都要用 HF 名称输出（adapter.to_hf），并补上绑定的 lm_head.weight。'}},
 'full_shapes': {'expected': {'model.embed_tokens.weight': [128, 128],
                              'model.layers.0.self_attn.q_proj.weight': [128, 128],
                              'model.layers.0.self_attn.k_proj.weight': [64, 128],
                              'model.layers.0.self_attn.v_proj.weight': [64, 128],
                              'model.layers.0.self_attn.o_proj.weight': [128, 128],
                              'model.layers.0.self_attn.q_norm.weight': [32],
                              'model.layers.0.self_attn.k_norm.weight': [32],
                              'model.layers.0.mlp.gate_proj.weight': [256, 128],
                              'model.layers.0.mlp.down_proj.weight': [128, 256],
                              'model.layers.0.mlp.up_proj.weight': [256, 128],
                              'model.layers.0.input_layernorm.weight': [128],
                              'model.layers.0.post_attention_layernorm.weight': [128],
                              'model.layers.1.self_attn.q_proj.weight': [128, 128],
                              'model.layers.1.self_attn.k_proj.weight': [64, 128],
                              'model.layers.1.self_attn.v_proj.weight': [64, 128],
                              'model.layers.1.self_attn.o_proj.weight': [128, 128],
                              'model.layers.1.self_attn.q_norm.weight': [32],
                              'model.layers.1.self_attn.k_norm.weight': [32],
                              'model.layers.1.mlp.gate_proj.weight': [256, 128],
                              'model.layers.1.mlp.down_proj.weight': [128, 256],
                              'model.layers.1.mlp.up_proj.weight': [256, 128],
                              'model.layers.1.input_layernorm.weight': [128],
                              'model.layers.1.post_attention_layernorm.weight': [128],
                              'model.layers.2.self_attn.q_proj.weight': [128, 128],
                              'model.layers.2.self_attn.k_proj.weight': [64, 128],
                              'model.layers.2.self_attn.v_proj.weight': [64, 128],
                              'model.layers.2.self_attn.o_proj.weight': [128, 128],
                              'model.layers.2.self_attn.q_norm.weight': [32],
                              'model.layers.2.self_attn.k_norm.weight': [32],
                              'model.layers.2.mlp.gate_proj.weight': [256, 128],
                              'model.layers.2.mlp.down_proj.weight': [128, 256],
                              'model.layers.2.mlp.up_proj.weight': [256, 128],
                              'model.layers.2.input_layernorm.weight': [128],
                              'model.layers.2.post_attention_layernorm.weight': [128],
                              'model.layers.3.self_attn.q_proj.weight': [128, 128],
                              'model.layers.3.self_attn.k_proj.weight': [64, 128],
                              'model.layers.3.self_attn.v_proj.weight': [64, 128],
                              'model.layers.3.self_attn.o_proj.weight': [128, 128],
                              'model.layers.3.self_attn.q_norm.weight': [32],
                              'model.layers.3.self_attn.k_norm.weight': [32],
                              'model.layers.3.mlp.gate_proj.weight': [256, 128],
                              'model.layers.3.mlp.down_proj.weight': [128, 256],
                              'model.layers.3.mlp.up_proj.weight': [256, 128],
                              'model.layers.3.input_layernorm.weight': [128],
                              'model.layers.3.post_attention_layernorm.weight': [128],
                              'model.norm.weight': [128],
                              'lm_head.weight': [128, 128]},
                 'feedback': {'en': "Shapes must be the full (global) ones: a DTensor's local shard is only "
                                    'part of dim 0; use full_tensor().',
                              'zh': '形状必须是完整（全局）形状：DTensor 的本地分片只是第 0 维的一部分；请用 full_tensor()。'}},
 'bf16': {'expected': ['torch.bfloat16'],
          'feedback': {'en': 'vLLM receives bf16: convert each materialized tensor with .to(torch.bfloat16).',
                       'zh': 'vLLM 接收 bf16：把每个物化后的张量 .to(torch.bfloat16)。'}},
 'tied': {'expected': {'lm_head_is_embedding': True, 'ranks_agree': True},
          'feedback': {'en': 'With tied weights lm_head.weight must equal model.embed_tokens.weight, and '
                             'both ranks must yield the same full tensors.',
                       'zh': '权重绑定时 lm_head.weight 必须等于 model.embed_tokens.weight，且两个 rank 得到相同的完整张量。'}},
 'checksums': {'expected': {'model.embed_tokens.weight': [642.8109130859375, 34.43091583251953],
                            'model.layers.0.self_attn.q_proj.weight': [323.56878662109375, 10.09402084350586],
                            'model.layers.0.self_attn.k_proj.weight': [159.04664611816406, 4.839781284332275],
                            'model.layers.0.self_attn.v_proj.weight': [144.24649047851562,
                                                                       3.9637060165405273],
                            'model.layers.0.self_attn.o_proj.weight': [288.1639099121094, 8.0068941116333],
                            'model.layers.0.self_attn.q_norm.weight': [32.19921875, 32.40647888183594],
                            'model.layers.0.self_attn.k_norm.weight': [32.1796875, 32.366943359375],
                            'model.layers.0.mlp.gate_proj.weight': [675.792724609375, 21.92656707763672],
                            'model.layers.0.mlp.down_proj.weight': [672.7507934570312, 21.734407424926758],
                            'model.layers.0.mlp.up_proj.weight': [676.3244018554688, 21.889738082885742],
                            'model.layers.0.input_layernorm.weight': [127.5703125, 127.16021728515625],
                            'model.layers.0.post_attention_layernorm.weight': [130.57421875,
                                                                               133.2192840576172],
                            'model.layers.1.self_attn.q_proj.weight': [311.94256591796875, 9.417179107666016],
                            'model.layers.1.self_attn.k_proj.weight': [155.69461059570312, 4.699260234832764],
                            'model.layers.1.self_attn.v_proj.weight': [136.24423217773438,
                                                                       3.5577785968780518],
                            'model.layers.1.self_attn.o_proj.weight': [279.24884033203125, 7.518131732940674],
                            'model.layers.1.self_attn.q_norm.weight': [32.1328125, 32.278228759765625],
                            'model.layers.1.self_attn.k_norm.weight': [32.14453125, 32.30015563964844],
                            'model.layers.1.mlp.gate_proj.weight': [645.567626953125, 20.04413604736328],
                            'model.layers.1.mlp.down_proj.weight': [644.2254028320312, 19.865842819213867],
                            'model.layers.1.mlp.up_proj.weight': [644.4598388671875, 19.78851890563965],
                            'model.layers.1.input_layernorm.weight': [127.2890625, 126.59176635742188],
                            'model.layers.1.post_attention_layernorm.weight': [129.05078125,
                                                                               130.12632751464844],
                            'model.layers.2.self_attn.q_proj.weight': [310.581298828125, 9.23074722290039],
                            'model.layers.2.self_attn.k_proj.weight': [153.01492309570312, 4.549663543701172],
                            'model.layers.2.self_attn.v_proj.weight': [132.21604919433594, 3.353412628173828],
                            'model.layers.2.self_attn.o_proj.weight': [276.78704833984375, 7.304488658905029],
                            'model.layers.2.self_attn.q_norm.weight': [32.0625, 32.134552001953125],
                            'model.layers.2.self_attn.k_norm.weight': [32.06640625, 32.14231872558594],
                            'model.layers.2.mlp.gate_proj.weight': [621.2852172851562, 18.499670028686523],
                            'model.layers.2.mlp.down_proj.weight': [632.9383544921875, 19.19924545288086],
                            'model.layers.2.mlp.up_proj.weight': [623.8262329101562, 18.574264526367188],
                            'model.layers.2.input_layernorm.weight': [127.015625, 126.04586791992188],
                            'model.layers.2.post_attention_layernorm.weight': [127.5234375,
                                                                               127.07058715820312],
                            'model.layers.3.self_attn.q_proj.weight': [320.73443603515625,
                                                                       10.022109031677246],
                            'model.layers.3.self_attn.k_proj.weight': [159.92501831054688, 4.979395866394043],
                            'model.layers.3.self_attn.v_proj.weight': [141.51397705078125,
                                                                       3.8438360691070557],
                            'model.layers.3.self_attn.o_proj.weight': [299.4669189453125, 8.623262405395508],
                            'model.layers.3.self_attn.q_norm.weight': [32.33984375, 32.70912170410156],
                            'model.layers.3.self_attn.k_norm.weight': [32.375, 32.77691650390625],
                            'model.layers.3.mlp.gate_proj.weight': [624.0595092773438, 18.667861938476562],
                            'model.layers.3.mlp.down_proj.weight': [642.04052734375, 19.645280838012695],
                            'model.layers.3.mlp.up_proj.weight': [619.9546508789062, 18.35664176940918],
                            'model.layers.3.input_layernorm.weight': [127.29296875, 126.60484313964844],
                            'model.layers.3.post_attention_layernorm.weight': [126.6953125,
                                                                               125.42990112304688],
                            'model.norm.weight': [139.0625, 151.0947265625],
                            'lm_head.weight': [642.8109130859375, 34.43091583251953]},
               'rtol': 0.01,
               'atol': 0.001,
               'feedback': {'en': 'Values differ from the materialized model (|x| sum and x^2 sum per '
                                  'tensor): gather all shards, do not re-initialize or modify weights.',
                            'zh': '数值与物化后的模型不符（每个张量的 |x| 和与 x^2 和）：要收集所有分片，不要重新初始化或修改权重。'}}}

RULES = {'hf_names': [{'id': 'to_hf_names',
               'stated': '`sd_adapter.to_hf()` renames to HF names',
               'hint': {'en': 'Every torchtitan weight must come out under its HF name: rename the state '
                              'dict with adapter.to_hf().',
                        'zh': '每个 torchtitan 权重都要以 HF 名称输出：用 adapter.to_hf() 改名。'}},
              {'id': 'tied_head_named',
               'stated': 'the tied `lm_head.weight` included',
               'hint': {'en': 'With tied weights to_hf skips the output head, so add lm_head.weight '
                              'yourself.',
                        'zh': '权重绑定时 to_hf 会跳过输出头，所以要自己补上 lm_head.weight。'}}],
 'full_shapes': [{'id': 'full_shape',
                  'stated': '`full_tensor()` is an all-gather',
                  'hint': {'en': "Yield full (global) shapes: a DTensor's local shard is only part of dim 0; "
                                 'gather it with full_tensor().',
                           'zh': '要输出完整（全局）形状：DTensor 的本地分片只是第 0 维的一部分，要用 full_tensor() 收集。'}}],
 'bf16': [{'id': 'bf16',
           'stated': 'full shape, `torch.bfloat16`',
           'hint': {'en': 'vLLM receives bf16: convert every materialized tensor with .to(torch.bfloat16).',
                    'zh': 'vLLM 接收 bf16：把每个物化后的张量 .to(torch.bfloat16)。'}}],
 'tied': [{'id': 'lm_head_is_embedding',
           'stated': 'add `lm_head.weight = model.embed_tokens.weight`',
           'hint': {'en': 'With tied weights lm_head.weight must equal model.embed_tokens.weight: the same '
                          'shape and the same values.',
                    'zh': '权重绑定时 lm_head.weight 就是 model.embed_tokens.weight，形状和数值都相同。'}},
          {'id': 'every_rank',
           'stated': '**every rank must take part**',
           'hint': {'en': 'full_tensor() is a collective: every rank must iterate to the end, and both ranks '
                          'must yield the same full tensors.',
                    'zh': 'full_tensor() 是集合通信：两个 rank 都必须迭代到最后，并得到相同的完整张量。'}}],
 'checksums': [{'id': 'values_kept',
                'stated': 'yield `(name, value.to(dev).full_tensor().to(bf16))` one by one',
                'hint': {'en': "The values must be the model's own weights: gather all shards, and do not "
                               're-initialize, reduce or otherwise change them.',
                         'zh': '数值必须是模型自己的权重、由所有分片收集而来：不要重新初始化、归约或以其它方式修改。'}}]}

MISTAKES = [{'name': 'float32_kept',
  'score': 9.0,
  'fails': {'bf16': 'not the expected'},
  'patch': [{'find': '        yield name, value.to(torch.bfloat16)',
             'replace': '        yield name, value'}]},
 {'name': 'local_shards',
  'score': 4.5,
  'fails': {'full_shapes': 'wrong', 'tied': 'ranks must yield', 'checksums': 'gather all shards'},
  'patch': [{'find': '            value = value.full_tensor()  # all-gather of the Shard(0) pieces',
             'replace': '            value = value.to_local()'}]},
 {'name': 'no_tied_lm_head',
  'score': 9.3298,
  'fails': {'hf_names': 'missing'},
  'patch': [{'find': '    hf = adapter.to_hf(sharded)\n'
                     '    if adapter.model_config.enable_weight_tying:\n'
                     '        hf["lm_head.weight"] = hf["model.embed_tokens.weight"]\n'
                     '    for name, value in hf.items():',
             'replace': '    hf = adapter.to_hf(sharded)\n    for name, value in hf.items():'}]},
 {'name': 'lm_head_transposed',
  'score': 9.5,
  'fails': {'tied': 'must equal model.embed_tokens.weight'},
  'patch': [{'find': '        hf["lm_head.weight"] = hf["model.embed_tokens.weight"]',
             'replace': '        hf["lm_head.weight"] = hf["model.embed_tokens.weight"].t()  # logits = h @ '
                        'E^T'}]},
 {'name': 'all_reduce_after_gather',
  'score': 7.0,
  'fails': {'checksums': 'gather all shards'},
  'patch': [{'find': '            value = value.full_tensor()  # all-gather of the Shard(0) pieces',
             'replace': '            value = value.full_tensor()  # all-gather of the Shard(0) pieces\n'
                        '            torch.distributed.all_reduce(value)  # keep the ranks in sync'}]}]

EQUIVALENT = [{'mutant': 'if_true:5b9a6462:1',
  'reason': 'the lab model the harness builds from the shipped checkpoint is tied (enable_weight_tying is '
            'True), so forcing the condition True changes nothing the launcher can produce'},
 {'mutant': 'stmt_drop:1a1d4808:1',
  'reason': "device is 'cpu' (the launcher's default) and every shard already lives on the CPU gloo ranks: "
            "value.to('cpu') returns the same tensor"},
 {'mutant': 'if_true:af18882f:1',
  'reason': 'under FSDP2 every state-dict value is a DTensor (the launcher asserts params_are_dtensors), so '
            'the isinstance test is always True here'}]
