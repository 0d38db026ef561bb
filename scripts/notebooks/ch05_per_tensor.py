"""ch05.per_tensor_param: materialize FSDP2-sharded DTensors of the lab model on 2 gloo ranks into full bf16 HF tensors.

Reference checksums come from running the same launcher with the lab's own `get_per_tensor_param`
(exercises/lab/checkpoint.py) at build time; tests/exercises/ch05 recomputes them to catch drift.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ch05_06_common import ROOT, Mistake, Spec, answer, code, fb, md

HARNESS_SRC = '''
import os
import torch
import torch.distributed as dist



def entry(rank, port, out_dir, seed):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    from exercises.lab.checkpoint import SHIPPED_CHECKPOINT, dims_of_checkpoint, load_hf_into_model, state_dict_adapter
    from exercises.lab.parallel import ParallelPlan, build_parallel_dims, build_sharded_model, params_are_dtensors
    import per_tensor_worker

    dims = dims_of_checkpoint(SHIPPED_CHECKPOINT)
    plan = ParallelPlan(data_parallel_shard_size=2, context_parallel_size=1, world_size=2, device_type="cpu")
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
'''

RUNNER_SRC = '''
import importlib
import os
import socket
import sys
import tempfile

import torch
import torch.multiprocessing as mp


def run_materialize(seed=1234):
    """Launch 2 gloo ranks; each materializes the sharded lab model with YOUR get_per_tensor_param."""
    sys.path.insert(0, os.getcwd())
    import per_tensor_harness
    importlib.reload(per_tensor_harness)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out_dir = tempfile.mkdtemp(dir=os.getcwd())
    mp.start_processes(per_tensor_harness.entry, args=(port, out_dir, seed), nprocs=2, start_method="spawn")
    r0, r1 = (torch.load(os.path.join(out_dir, f"rank{r}.pt")) for r in range(2))
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
'''

LAB_WORKER = '''
from exercises.lab.checkpoint import get_per_tensor_param  # noqa: F401  (reference implementation)
'''


def reference_run() -> dict:
    """Run the launcher with the lab's get_per_tensor_param (2 gloo ranks, ~10 s)."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "per_tensor_harness.py").write_text(HARNESS_SRC)
        Path(tmp, "per_tensor_worker.py").write_text(LAB_WORKER)
        Path(tmp, "runner.py").write_text(RUNNER_SRC + "\nif __name__ == '__main__':\n    import json\n"
                                             "    print(json.dumps(run_materialize(1234)))\n")
        env = dict(os.environ, PYTHONPATH=f"{ROOT}:{tmp}", OMP_NUM_THREADS="1")
        proc = subprocess.run([sys.executable, "runner.py"], cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=300)
        if proc.returncode:
            raise RuntimeError(f"reference run failed:\n{proc.stderr[-3000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])


INTRO = md("""
# 05 · `get_per_tensor_param()`：把 FSDP2 分片物化成完整的 bf16 张量

每个训练步之后，verl 的 `update_weights` 把 Actor 的新权重同步给 vLLM：
1. 把模型搬回设备，`get_model_state_dict(model)` 取出状态字典——FSDP2 下每个值都是 **DTensor 分片**（`Shard(0)`）；
2. `sd_adapter.to_hf()` 把名字换成 HF 名称（tied 时跳过输出头）；
3. 权重绑定时补上 `lm_head.weight = model.embed_tokens.weight`；
4. 逐个 yield `(name, value.to(dev).full_tensor().to(bf16))`——`full_tensor()` 是一次 all-gather（"物化"），**每个 rank 都必须参与**。

这里用实验运行时 `exercises.lab` 的小型 torchtitan Qwen3（与 1.7B 同结构，dim 128、4 层、tied；权重是随课程运行时发布的 SFT 检查点，像 `initial_load_in_hf` 一样经 `from_hf` 载入），在 2 个 gloo 进程上用
torchtitan 的 `ParallelDims` + `parallelize_qwen3` 做 FSDP2 分片（`data_parallel_shard_size=2`），然后调用你的函数。
""", """
# 05 · `get_per_tensor_param()`: materialize FSDP2 shards into full bf16 tensors

After each training step verl's `update_weights` syncs the Actor's new weights into vLLM:
1. move the model to the device and take `get_model_state_dict(model)`: under FSDP2 every value is a **DTensor shard**
   (`Shard(0)`);
2. `sd_adapter.to_hf()` renames to HF names (skipping the output head when tied);
3. with tied weights, add `lm_head.weight = model.embed_tokens.weight`;
4. yield `(name, value.to(dev).full_tensor().to(bf16))` one by one: `full_tensor()` is an all-gather ("materialization"),
   so **every rank must take part**.

Here the lab runtime `exercises.lab` provides a tiny torchtitan Qwen3 (the 1.7B architecture at dim 128, 4 layers,
tied; its weights are the runtime's shipped SFT checkpoint, loaded through `from_hf` as `initial_load_in_hf` does), sharded with FSDP2 through torchtitan's `ParallelDims` + `parallelize_qwen3` (`data_parallel_shard_size=2`) on 2
gloo processes, which then call your function.
""")

TASK = md("""
## 任务：在 `per_tensor_worker.py` 中实现 `get_per_tensor_param(model, adapter, device="cpu")`

生成器，依次 yield `(HF 名称, 完整张量)`：完整形状、`torch.bfloat16`、包含绑定的 `lm_head.weight`。
（`adapter` 是 torchtitan 的 `Qwen3StateDictAdapter`，`adapter.model_config.enable_weight_tying` 表示是否绑定。）
""", """
## Task: implement `get_per_tensor_param(model, adapter, device="cpu")` in `per_tensor_worker.py`

A generator yielding `(HF name, full tensor)`: full shape, `torch.bfloat16`, the tied `lm_head.weight` included.
(`adapter` is torchtitan's `Qwen3StateDictAdapter`; `adapter.model_config.enable_weight_tying` says whether weights are tied.)
""")

STUB = '''
%%writefile per_tensor_worker.py
import torch
from torch.distributed.checkpoint.state_dict import get_model_state_dict
from torch.distributed.tensor import DTensor


def get_per_tensor_param(model, adapter, device="cpu"):
    raise NotImplementedError("get_per_tensor_param")
'''

SOL = '''
%%writefile per_tensor_worker.py
import torch
from torch.distributed.checkpoint.state_dict import get_model_state_dict
from torch.distributed.tensor import DTensor


def get_per_tensor_param(model, adapter, device="cpu"):
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
'''

HARNESS = code("# Launcher (keep as is): writes the per-rank entry point, spawns 2 gloo ranks, summarizes rank 0.\n"
               "from pathlib import Path\n\nPath(\"per_tensor_harness.py\").write_text('''" + HARNESS_SRC + "''')\n"
               + RUNNER_SRC + '''

RESULT = run_materialize(seed=1234)
NAMES, SHAPES, DTYPES = RESULT["names"], RESULT["shapes"], RESULT["dtypes"]
CHECKSUMS, TIED = RESULT["checksums"], RESULT["tied"]
print(len(NAMES), DTYPES, TIED)
''')


SELFCHECK = code('''
# Public self-check: full (not sharded) shapes, bf16, the tied head present and equal on both ranks
print(SHAPES["model.embed_tokens.weight"], "(expect the full [vocab=128, dim=128])")
print("dtypes:", DTYPES, "| tied lm_head equals embedding:", TIED["lm_head_is_embedding"],
      "| ranks agree:", TIED["ranks_agree"])
''')


def _reference() -> dict:
    ref = reference_run()
    assert ref["tied"] == {"lm_head_is_embedding": True, "ranks_agree": True}, ref["tied"]
    assert len(ref["names"]) == 4 * 11 + 2 + 1 and ref["dtypes"] == ["torch.bfloat16"]
    return {
        "hf_names": {"expected": ref["names"], "feedback": fb(
            "Every torchtitan weight must come out under its HF name (adapter.to_hf), plus the tied lm_head.weight.",
            "每个 torchtitan 权重都要用 HF 名称输出（adapter.to_hf），并补上绑定的 lm_head.weight。")},
        "full_shapes": {"expected": ref["shapes"], "feedback": fb(
            "Shapes must be the full (global) ones: a DTensor's local shard is only part of dim 0; use full_tensor().",
            "形状必须是完整（全局）形状：DTensor 的本地分片只是第 0 维的一部分；请用 full_tensor()。")},
        "bf16": {"expected": ["torch.bfloat16"], "feedback": fb(
            "vLLM receives bf16: convert each materialized tensor with .to(torch.bfloat16).",
            "vLLM 接收 bf16：把每个物化后的张量 .to(torch.bfloat16)。")},
        "tied": {"expected": {"lm_head_is_embedding": True, "ranks_agree": True}, "feedback": fb(
            "With tied weights lm_head.weight must equal model.embed_tokens.weight, and both ranks must yield the same "
            "full tensors.", "权重绑定时 lm_head.weight 必须等于 model.embed_tokens.weight，且两个 rank 得到相同的完整张量。")},
        "checksums": {"expected": ref["checksums"], "rtol": 1e-2, "atol": 1e-3, "feedback": fb(
            "Values differ from the materialized model (|x| sum and x^2 sum per tensor): gather all shards, do not "
            "re-initialize or modify weights.", "数值与物化后的模型不符（每个张量的 |x| 和与 x^2 和）：要收集所有分片，不要重新初始化或修改权重。")},
    }


def spec() -> Spec:
    return Spec(
        id="ch05.per_tensor_param",
        title_en="get_per_tensor_param: materialize FSDP2 shards for vLLM",
        title_zh="get_per_tensor_param：为 vLLM 物化 FSDP2 分片",
        kernel_family="training",
        lane="long",
        world_size=2,
        answers=[("NAMES", "value"), ("SHAPES", "value"), ("DTYPES", "value"), ("TIED", "value"),
                 ("CHECKSUMS", "value")],
        checks=[
            {"name": "hf_names", "answer": "NAMES", "kind": "set", "points": 3,
             "title": ("HF names incl. tied lm_head", "HF 名称（含绑定的 lm_head）")},
            {"name": "full_shapes", "answer": "SHAPES", "kind": "mapping", "points": 2,
             "title": ("Full (materialized) shapes", "完整（物化后）形状")},
            {"name": "bf16", "answer": "DTYPES", "kind": "exact", "points": 1, "title": ("bf16 dtype", "bf16 类型")},
            {"name": "tied", "answer": "TIED", "kind": "mapping", "points": 1,
             "title": ("Tied lm_head and rank agreement", "绑定的 lm_head 与各 rank 一致")},
            {"name": "checksums", "answer": "CHECKSUMS", "kind": "mapping", "points": 3,
             "title": ("Tensor checksums", "张量校验和")},
        ],
        reference=_reference(),
        cells=[INTRO, TASK, answer(STUB, SOL), HARNESS, SELFCHECK],
        mistakes=[
            Mistake("local_shards", [("            value = value.full_tensor()  # all-gather of the Shard(0) pieces",
                                      "            value = value.to_local()")],
                    "graded", 4.5, {"full_shapes": "wrong"}),  # names 3 + bf16 1 + half of tied: the ranks disagree
            Mistake("no_tied_lm_head", [('''    if adapter.model_config.enable_weight_tying:
        hf["lm_head.weight"] = hf["model.embed_tokens.weight"]
''', "")], "graded", round(10 - 8 / 47 - 0.5, 4), {"hf_names": "missing"}),  # 1 of 47 names missing
            Mistake("float32_kept", [("        yield name, value.to(torch.bfloat16)", "        yield name, value")],
                    "graded", 9.0, {"bf16": "not the expected"}),
        ],
    )
