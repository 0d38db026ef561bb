# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 06 · 上下文并行（Ulysses CP）
#
# 长序列时，NPU 的 Qwen3 用 Ulysses 式上下文并行 `NPUVarlenUlyssesCP`：每张卡先持有**一段序列、全部头**；
# 注意力前的 pre-hook 对 q/k/v 做 `all_to_all`：**按头（dim 2）分散、按序列（dim 1）聚合**，于是每张卡持有**全部序列、一部分头**，
# 可以独立算注意力；post-hook 做反向交换。`VarlenMetadata` 不切分。
#
# 前提：`n_heads % cp == 0` 且 `n_kv_heads % cp == 0`，否则报 "[Ulysses CP] n_heads=… must be divisible…"。
# Qwen3-1.7B（16 个 q 头、8 个 kv 头）：cp ∈ {1, 2, 4, 8}；cp=2 时每卡 8 个 q 头、4 个 kv 头；cp=16 非法。
#
# 本练习在 2 个 rank 上真实运行这次交换：评分节点有 NPU 时用 2 张 NPU（hccl），有 GPU 时用 2 张 GPU（nccl），否则用 2 个
# CPU 进程（gloo，它在 CPU 上支持 `all_to_all_single`）。
#
# ---
#
# # 06 · Context parallelism (Ulysses CP)
#
# For long sequences the NPU Qwen3 uses Ulysses-style context parallelism, `NPUVarlenUlyssesCP`: each card starts with
# **a slice of the sequence and all heads**; a pre-hook runs `all_to_all` on q/k/v that **scatters heads (dim 2) and
# gathers the sequence (dim 1)**, so each card then holds **the whole sequence for a subset of heads** and computes
# attention on its own; a post-hook reverses the exchange. `VarlenMetadata` is not sharded.
#
# It requires `n_heads % cp == 0` and `n_kv_heads % cp == 0`, else "[Ulysses CP] n_heads=… must be divisible…". Qwen3-1.7B
# (16 q heads, 8 kv heads): cp ∈ {1, 2, 4, 8}; at cp=2 each card has 8 q heads and 4 kv heads; cp=16 is invalid.
#
# This exercise runs the exchange for real on 2 ranks: 2 NPUs (hccl) where the grading node has them, else 2 GPUs
# (nccl), else 2 CPU processes (gloo, which supports `all_to_all_single` on CPU).

# %% [markdown]
# ## 任务 1
# - `ulysses_local_heads(n_heads, n_kv_heads, cp) -> (q_heads, kv_heads)`：每卡头数；不能整除时抛出 `ValueError`。
# - `valid_cp_degrees(n_heads, n_kv_heads, max_cp) -> list[int]`：1…max_cp 中所有合法的 cp，升序。
#
# ---
#
# ## Task 1
# - `ulysses_local_heads(n_heads, n_kv_heads, cp) -> (q_heads, kv_heads)`: heads per card; raise `ValueError` when not
#   divisible.
# - `valid_cp_degrees(n_heads, n_kv_heads, max_cp) -> list[int]`: every valid cp in 1…max_cp, ascending.

# %%
def ulysses_local_heads(n_heads, n_kv_heads, cp):
    ### BEGIN SOLUTION
    if n_heads % cp or n_kv_heads % cp:
        raise ValueError(f"[Ulysses CP] n_heads={n_heads} and n_kv_heads={n_kv_heads} must be divisible by cp={cp}")
    return n_heads // cp, n_kv_heads // cp
    ### STUB
    # raise NotImplementedError("ulysses_local_heads")
    ### END SOLUTION


def valid_cp_degrees(n_heads, n_kv_heads, max_cp):
    ### BEGIN SOLUTION
    valid = []
    for cp in range(1, max_cp + 1):
        try:
            ulysses_local_heads(n_heads, n_kv_heads, cp)
        except ValueError:
            continue
        valid.append(cp)
    return valid
    ### STUB
    # raise NotImplementedError("valid_cp_degrees")
    ### END SOLUTION

# %% [markdown]
# ## 任务 2：`ulysses_worker.py`
# 下一个单元格把你的代码写入 `ulysses_worker.py`（子进程要 import 它，所以必须是文件）。实现：
# - `seq_to_head(x, group=None)`：本卡 `[B, S/cp, H, D]` → `[B, S, H/cp, D]`（rank j 得到第 j 组头，序列按 rank 顺序拼接）；
# - `head_to_seq(y, group=None)`：反向，`[B, S, H/cp, D]` → `[B, S/cp, H, D]`。
#
# 用 `torch.distributed.all_to_all_single`（或 `all_to_all`）；`cp = dist.get_world_size(group)`。
#
# ---
#
# ## Task 2: `ulysses_worker.py`
# The next cell writes your code to `ulysses_worker.py` (the child processes import it, so it must be a file). Implement:
# - `seq_to_head(x, group=None)`: local `[B, S/cp, H, D]` → `[B, S, H/cp, D]` (rank j gets the j-th group of heads, the
#   sequence concatenated in rank order);
# - `head_to_seq(y, group=None)`: the reverse, `[B, S, H/cp, D]` → `[B, S/cp, H, D]`.
#
# Use `torch.distributed.all_to_all_single` (or `all_to_all`); `cp = dist.get_world_size(group)`.

# %%
# %%writefile ulysses_worker.py
import torch
import torch.distributed as dist


def seq_to_head(x, group=None):
    ### BEGIN SOLUTION
    """[B, S/cp, H, D] -> [B, S, H/cp, D]: scatter heads, gather the sequence."""
    cp = dist.get_world_size(group)
    B, s, H, D = x.shape
    send = x.reshape(B, s, cp, H // cp, D).permute(2, 0, 1, 3, 4).contiguous()  # [cp, B, s, H/cp, D]
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)  # recv[j]: rank j's sequence slice of my heads
    return recv.permute(1, 0, 2, 3, 4).reshape(B, cp * s, H // cp, D)
    ### STUB
    # raise NotImplementedError("seq_to_head")
    ### END SOLUTION


def head_to_seq(y, group=None):
    ### BEGIN SOLUTION
    """[B, S, H/cp, D] -> [B, S/cp, H, D]: scatter the sequence, gather heads."""
    cp = dist.get_world_size(group)
    B, S, h, D = y.shape
    send = y.reshape(B, cp, S // cp, h, D).permute(1, 0, 2, 3, 4).contiguous()  # [cp, B, S/cp, h, D]
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)  # recv[j]: rank j's heads of my sequence slice
    return recv.permute(1, 2, 0, 3, 4).reshape(B, S // cp, cp * h, D)
    ### STUB
    # raise NotImplementedError("head_to_seq")
    ### END SOLUTION

# %% tags=["harness"]
# Launcher (grader-owned: grading re-runs this cell exactly as shipped, after your cells, and reads the values from that run): 2 ranks via torch.multiprocessing spawn
# (on the device the grader gave this run, TITANGRADE_DEVICE: 2 NPUs on hccl, 2 GPUs on nccl, else 2 CPU ranks on gloo); each rank holds a sequence slice of
# full = arange(B*S*H*D).reshape(B, S, H, D), runs your seq_to_head, then head_to_seq back.
import importlib
import os
import sys
import tempfile
from pathlib import Path

import torch
import torch.multiprocessing as mp

Path("ulysses_harness.py").write_text("""
import os
import torch
import torch.distributed as dist


def entry(rank, shapes, rendezvous, out_dir):
    torch.set_num_threads(1)
    kind = os.environ.get("TITANGRADE_DEVICE", "cpu")
    device = torch.device("cpu")
    if kind == "cuda":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    elif kind == "npu":
        import torch_npu
        torch.npu.set_device(rank)
        device = torch.device("npu", rank)
    backend = {"npu": "hccl", "cuda": "nccl"}.get(kind, "gloo")
    dist.init_process_group(backend, init_method=rendezvous, rank=rank, world_size=2)
    import ulysses_worker
    results = []
    for B, S, H, D in shapes:
        full = torch.arange(B * S * H * D, dtype=torch.float32, device=device).reshape(B, S, H, D)
        local = full.chunk(2, dim=1)[rank].contiguous()
        heads = ulysses_worker.seq_to_head(local)
        back = ulysses_worker.head_to_seq(heads)
        ok = bool(back.shape == local.shape and torch.equal(back, local))
        results.append({"heads": heads.cpu() if isinstance(heads, torch.Tensor) else heads, "roundtrip": ok})
    torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()
    # done and saved: leave without the interpreter's teardown, where a backend thread that aborts (SIGABRT)
    # would fail a launch whose results are already written
    import sys
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
""")
sys.path.insert(0, os.getcwd())


def run_ulysses(shapes):
    """shapes: list of [B, S, H, D] -> per shape {"rank0": heads, "rank1": heads, "roundtrip": bool}."""
    import ulysses_harness
    importlib.reload(ulysses_harness)
    out_dir = tempfile.mkdtemp(dir=os.getcwd())
    rendezvous = f"file://{out_dir}/rendezvous"  # a file store: no TCP port another process could take first
    mp.start_processes(ulysses_harness.entry, args=(shapes, rendezvous, out_dir), nprocs=2, start_method="spawn")
    r0, r1 = (torch.load(os.path.join(out_dir, f"rank{r}.pt"), map_location="cpu") for r in range(2))
    return [{"rank0": a["heads"], "rank1": b["heads"], "roundtrip": a["roundtrip"] and b["roundtrip"]}
            for a, b in zip(r0, r1)]

# %%
# Public self-check
print(ulysses_local_heads(16, 8, 2), valid_cp_degrees(16, 8, 16))
print(run_ulysses([[1, 4, 4, 2]]))

# %% tags=["grader"]
# Grader only: never in the template or the solution. Hidden cases with their expected values
# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score
# and the check each must fail.
CHECKS = {'local_heads': {'calls': [{'args': [16, 8, 2],
                            'kwargs': {},
                            'public': True,
                            'expect': [8, 4],
                            'label': '1.7B, cp 2',
                            'rules': ['per_card']},
                           {'args': [16, 8, 16],
                            'kwargs': {},
                            'public': True,
                            'raises': 'ValueError',
                            'label': '1.7B, cp 16',
                            'rules': ['q_divisible', 'kv_heads']},
                           {'args': [32, 4, 4],
                            'kwargs': {},
                            'public': False,
                            'expect': [8, 1],
                            'rules': ['per_card']},
                           {'args': [16, 8, 8],
                            'kwargs': {},
                            'public': False,
                            'expect': [2, 1],
                            'rules': ['per_card']},
                           {'args': [64, 4, 4],
                            'kwargs': {},
                            'public': False,
                            'expect': [16, 1],
                            'rules': ['per_card']},
                           {'args': [32, 4, 8],
                            'kwargs': {},
                            'public': False,
                            'raises': 'ValueError',
                            'rules': ['kv_heads']},
                           {'args': [24, 8, 3],
                            'kwargs': {},
                            'public': False,
                            'raises': 'ValueError',
                            'rules': ['kv_heads']},
                           {'args': [12, 8, 8],
                            'kwargs': {},
                            'public': False,
                            'raises': 'ValueError',
                            'rules': ['q_divisible']},
                           {'args': [6, 6, 4],
                            'kwargs': {},
                            'public': False,
                            'raises': 'ValueError',
                            'rules': ['q_divisible']}],
                 'compare': 'exact',
                 'feedback': {'en': 'Both the q heads and the kv heads must divide by cp; otherwise raise '
                                    'ValueError.',
                              'zh': 'q 头数和 kv 头数都必须能被 cp 整除，否则抛出 ValueError。'}},
 'valid_degrees': {'calls': [{'args': [16, 8, 16],
                              'kwargs': {},
                              'public': True,
                              'expect': [1, 2, 4, 8],
                              'label': '1.7B up to 16',
                              'rules': ['every_cp', 'kv_heads']},
                             {'args': [32, 4, 16],
                              'kwargs': {},
                              'public': False,
                              'expect': [1, 2, 4],
                              'rules': ['kv_heads']},
                             {'args': [40, 8, 8],
                              'kwargs': {},
                              'public': False,
                              'expect': [1, 2, 4, 8],
                              'rules': ['every_cp']},
                             {'args': [12, 6, 12],
                              'kwargs': {},
                              'public': False,
                              'expect': [1, 2, 3, 6],
                              'rules': ['every_cp', 'kv_heads']},
                             {'args': [12, 8, 12],
                              'kwargs': {},
                              'public': False,
                              'expect': [1, 2, 4],
                              'rules': ['kv_heads']},
                             {'args': [16, 8, 4],
                              'kwargs': {},
                              'public': False,
                              'expect': [1, 2, 4],
                              'rules': ['every_cp']},
                             {'args': [16, 8, 3],
                              'kwargs': {},
                              'public': False,
                              'expect': [1, 2],
                              'rules': ['every_cp']}],
                   'compare': 'exact',
                   'feedback': {'en': 'List every cp from 1 to max_cp that divides both head counts.',
                                'zh': '列出 1 到 max_cp 之间同时整除两个头数的所有 cp。'}},
 'all_to_all_public': {'calls': [{'args': [[[1, 4, 4, 2]]],
                                  'kwargs': {},
                                  'public': True,
                                  'expect': [{'rank0': {'__tensor__': {'dtype': 'float32',
                                                                       'shape': [1, 4, 2, 2],
                                                                       'data': [[[[0.0, 1.0], [2.0, 3.0]],
                                                                                 [[8.0, 9.0], [10.0, 11.0]],
                                                                                 [[16.0, 17.0], [18.0, 19.0]],
                                                                                 [[24.0, 25.0],
                                                                                  [26.0, 27.0]]]]}},
                                              'rank1': {'__tensor__': {'dtype': 'float32',
                                                                       'shape': [1, 4, 2, 2],
                                                                       'data': [[[[4.0, 5.0], [6.0, 7.0]],
                                                                                 [[12.0, 13.0], [14.0, 15.0]],
                                                                                 [[20.0, 21.0], [22.0, 23.0]],
                                                                                 [[28.0, 29.0],
                                                                                  [30.0, 31.0]]]]}},
                                              'roundtrip': True}],
                                  'label': 'B=1, S=4, H=4, D=2',
                                  'rules': ['scatter_heads', 'roundtrip']}],
                       'compare': 'exact',
                       'feedback': {'en': 'After seq_to_head rank j must hold heads [j*H/cp, (j+1)*H/cp) for '
                                          'the whole sequence, in sequence order; head_to_seq must give back '
                                          "the rank's own slice.",
                                    'zh': 'seq_to_head 之后 rank j 应持有整条序列上第 [j*H/cp, (j+1)*H/cp) '
                                          '个头，序列按顺序排列；head_to_seq 必须还原本卡的切片。'}},
 'all_to_all_hidden': {'calls': [{'args': [[[2, 6, 2, 3], [1, 2, 8, 1], [3, 4, 6, 2]]],
                                  'kwargs': {},
                                  'public': False,
                                  'expect': [{'rank0': {'__tensor__': {'dtype': 'float32',
                                                                       'shape': [2, 6, 1, 3],
                                                                       'data': [[[[0.0, 1.0, 2.0]],
                                                                                 [[6.0, 7.0, 8.0]],
                                                                                 [[12.0, 13.0, 14.0]],
                                                                                 [[18.0, 19.0, 20.0]],
                                                                                 [[24.0, 25.0, 26.0]],
                                                                                 [[30.0, 31.0, 32.0]]],
                                                                                [[[36.0, 37.0, 38.0]],
                                                                                 [[42.0, 43.0, 44.0]],
                                                                                 [[48.0, 49.0, 50.0]],
                                                                                 [[54.0, 55.0, 56.0]],
                                                                                 [[60.0, 61.0, 62.0]],
                                                                                 [[66.0, 67.0, 68.0]]]]}},
                                              'rank1': {'__tensor__': {'dtype': 'float32',
                                                                       'shape': [2, 6, 1, 3],
                                                                       'data': [[[[3.0, 4.0, 5.0]],
                                                                                 [[9.0, 10.0, 11.0]],
                                                                                 [[15.0, 16.0, 17.0]],
                                                                                 [[21.0, 22.0, 23.0]],
                                                                                 [[27.0, 28.0, 29.0]],
                                                                                 [[33.0, 34.0, 35.0]]],
                                                                                [[[39.0, 40.0, 41.0]],
                                                                                 [[45.0, 46.0, 47.0]],
                                                                                 [[51.0, 52.0, 53.0]],
                                                                                 [[57.0, 58.0, 59.0]],
                                                                                 [[63.0, 64.0, 65.0]],
                                                                                 [[69.0, 70.0, 71.0]]]]}},
                                              'roundtrip': True},
                                             {'rank0': {'__tensor__': {'dtype': 'float32',
                                                                       'shape': [1, 2, 4, 1],
                                                                       'data': [[[[0.0], [1.0], [2.0], [3.0]],
                                                                                 [[8.0],
                                                                                  [9.0],
                                                                                  [10.0],
                                                                                  [11.0]]]]}},
                                              'rank1': {'__tensor__': {'dtype': 'float32',
                                                                       'shape': [1, 2, 4, 1],
                                                                       'data': [[[[4.0], [5.0], [6.0], [7.0]],
                                                                                 [[12.0],
                                                                                  [13.0],
                                                                                  [14.0],
                                                                                  [15.0]]]]}},
                                              'roundtrip': True},
                                             {'rank0': {'__tensor__': {'dtype': 'float32',
                                                                       'shape': [3, 4, 3, 2],
                                                                       'data': [[[[0.0, 1.0],
                                                                                  [2.0, 3.0],
                                                                                  [4.0, 5.0]],
                                                                                 [[12.0, 13.0],
                                                                                  [14.0, 15.0],
                                                                                  [16.0, 17.0]],
                                                                                 [[24.0, 25.0],
                                                                                  [26.0, 27.0],
                                                                                  [28.0, 29.0]],
                                                                                 [[36.0, 37.0],
                                                                                  [38.0, 39.0],
                                                                                  [40.0, 41.0]]],
                                                                                [[[48.0, 49.0],
                                                                                  [50.0, 51.0],
                                                                                  [52.0, 53.0]],
                                                                                 [[60.0, 61.0],
                                                                                  [62.0, 63.0],
                                                                                  [64.0, 65.0]],
                                                                                 [[72.0, 73.0],
                                                                                  [74.0, 75.0],
                                                                                  [76.0, 77.0]],
                                                                                 [[84.0, 85.0],
                                                                                  [86.0, 87.0],
                                                                                  [88.0, 89.0]]],
                                                                                [[[96.0, 97.0],
                                                                                  [98.0, 99.0],
                                                                                  [100.0, 101.0]],
                                                                                 [[108.0, 109.0],
                                                                                  [110.0, 111.0],
                                                                                  [112.0, 113.0]],
                                                                                 [[120.0, 121.0],
                                                                                  [122.0, 123.0],
                                                                                  [124.0, 125.0]],
                                                                                 [[132.0, 133.0],
                                                                                  [134.0, 135.0],
                                                                                  [136.0, 137.0]]]]}},
                                              'rank1': {'__tensor__': {'dtype': 'float32',
                                                                       'shape': [3, 4, 3, 2],
                                                                       'data': [[[[6.0, 7.0],
                                                                                  [8.0, 9.0],
                                                                                  [10.0, 11.0]],
                                                                                 [[18.0, 19.0],
                                                                                  [20.0, 21.0],
                                                                                  [22.0, 23.0]],
                                                                                 [[30.0, 31.0],
                                                                                  [32.0, 33.0],
                                                                                  [34.0, 35.0]],
                                                                                 [[42.0, 43.0],
                                                                                  [44.0, 45.0],
                                                                                  [46.0, 47.0]]],
                                                                                [[[54.0, 55.0],
                                                                                  [56.0, 57.0],
                                                                                  [58.0, 59.0]],
                                                                                 [[66.0, 67.0],
                                                                                  [68.0, 69.0],
                                                                                  [70.0, 71.0]],
                                                                                 [[78.0, 79.0],
                                                                                  [80.0, 81.0],
                                                                                  [82.0, 83.0]],
                                                                                 [[90.0, 91.0],
                                                                                  [92.0, 93.0],
                                                                                  [94.0, 95.0]]],
                                                                                [[[102.0, 103.0],
                                                                                  [104.0, 105.0],
                                                                                  [106.0, 107.0]],
                                                                                 [[114.0, 115.0],
                                                                                  [116.0, 117.0],
                                                                                  [118.0, 119.0]],
                                                                                 [[126.0, 127.0],
                                                                                  [128.0, 129.0],
                                                                                  [130.0, 131.0]],
                                                                                 [[138.0, 139.0],
                                                                                  [140.0, 141.0],
                                                                                  [142.0, 143.0]]]]}},
                                              'roundtrip': True}],
                                  'rules': ['scatter_heads', 'roundtrip']}],
                       'compare': 'exact',
                       'feedback': {'en': 'Hidden shapes use batch > 1 and other head counts: mind the order '
                                          'of dimensions when you permute before/after the exchange.',
                                    'zh': '隐藏用例的 batch > 1、头数不同：交换前后 permute 的维度顺序要正确。'}}}

RULES = {'local_heads': [{'id': 'per_card',
                  'stated': 'heads per card',
                  'hint': {'en': 'Each card keeps n_heads // cp q heads and n_kv_heads // cp kv heads, '
                                 'returned as (q_heads, kv_heads).',
                           'zh': '每卡保留 n_heads // cp 个 q 头和 n_kv_heads // cp 个 kv 头，按 (q_heads, kv_heads) '
                                 '返回。'}},
                 {'id': 'q_divisible',
                  'stated': 'raise `ValueError` when not divisible',
                  'hint': {'en': 'When cp does not divide the q head count, raise ValueError.',
                           'zh': 'cp 不能整除 q 头数时抛出 ValueError。'}},
                 {'id': 'kv_heads',
                  'stated': '`n_heads % cp == 0` and `n_kv_heads % cp == 0`',
                  'hint': {'en': 'The kv heads are split too: when cp does not divide n_kv_heads (even if it '
                                 'divides n_heads), raise ValueError.',
                           'zh': 'kv 头也要切分：cp 不能整除 n_kv_heads 时（即使能整除 n_heads）也要抛出 ValueError。'}}],
 'valid_degrees': [{'id': 'every_cp',
                    'stated': 'every valid cp in 1…max_cp, ascending',
                    'hint': {'en': 'List every cp from 1 up to and including max_cp that is valid, in '
                                   'ascending order.',
                             'zh': '按升序列出 1 到 max_cp（含 max_cp）之间所有合法的 cp。'}},
                   {'id': 'kv_heads',
                    'stated': '`n_heads % cp == 0` and `n_kv_heads % cp == 0`',
                    'hint': {'en': 'A cp is valid only when it divides both n_heads and n_kv_heads.',
                             'zh': '只有同时整除 n_heads 和 n_kv_heads 的 cp 才合法。'}}],
 'all_to_all_public': [{'id': 'scatter_heads',
                        'stated': 'rank j gets the j-th group of heads, the sequence concatenated in rank '
                                  'order',
                        'hint': {'en': 'After seq_to_head rank j must hold head group j (heads j*H/cp to '
                                       "(j+1)*H/cp - 1) for the whole sequence, the ranks' sequence slices "
                                       'concatenated in rank order.',
                                 'zh': 'seq_to_head 之后 rank j 应持有第 j 组头（第 j*H/cp 到 (j+1)*H/cp - 1 个头）的整条序列，各 '
                                       'rank 的序列切片按 rank 顺序拼接。'}},
                       {'id': 'roundtrip',
                        'stated': '`head_to_seq(y, group=None)`: the reverse',
                        'hint': {'en': 'head_to_seq must undo seq_to_head exactly: each rank gets back its '
                                       'own sequence slice with all heads.',
                                 'zh': 'head_to_seq 必须精确还原 seq_to_head：每个 rank 拿回自己的序列切片和全部头。'}}],
 'all_to_all_hidden': [{'id': 'scatter_heads',
                        'stated': 'rank j gets the j-th group of heads, the sequence concatenated in rank '
                                  'order',
                        'hint': {'en': 'After seq_to_head rank j must hold head group j (heads j*H/cp to '
                                       "(j+1)*H/cp - 1) for the whole sequence, the ranks' sequence slices "
                                       'concatenated in rank order.',
                                 'zh': 'seq_to_head 之后 rank j 应持有第 j 组头（第 j*H/cp 到 (j+1)*H/cp - 1 个头）的整条序列，各 '
                                       'rank 的序列切片按 rank 顺序拼接。'}},
                       {'id': 'roundtrip',
                        'stated': '`head_to_seq(y, group=None)`: the reverse',
                        'hint': {'en': 'head_to_seq must undo seq_to_head exactly: each rank gets back its '
                                       'own sequence slice with all heads.',
                                 'zh': 'head_to_seq 必须精确还原 seq_to_head：每个 rank 拿回自己的序列切片和全部头。'}}]}

MISTAKES = [{'name': 'kv_heads_ignored',
  'score': 7.9047,
  'fails': {'valid_degrees': '1.7B up to 16', 'local_heads': 'kv heads'},
  'patch': [{'find': '    if n_heads % cp or n_kv_heads % cp:', 'replace': '    if n_heads % cp:'}]},
 {'name': 'no_permute_back',
  'score': 7.0,
  'fails': {'all_to_all_hidden': 'hidden'},
  'patch': [{'find': '    return recv.permute(1, 0, 2, 3, 4).reshape(B, cp * s, H // cp, D)',
             'replace': '    return recv.reshape(B, cp * s, H // cp, D)'}]},
 {'name': 'scatter_sequence',
  'score': 4.0,
  'fails': {'all_to_all_public': 'B=1, S=4, H=4, D=2'},
  'patch': [{'find': '    send = x.reshape(B, s, cp, H // cp, D).permute(2, 0, 1, 3, 4).contiguous()  # [cp, '
                     'B, s, H/cp, D]',
             'replace': '    send = x.reshape(B, cp, s // cp, H, D).permute(1, 0, 2, 3, 4).contiguous()  # '
                        '[cp, B, s, H/cp, D]'}]},
 {'name': 'max_cp_excluded',
  'score': 9.4286,
  'fails': {'valid_degrees': 'max_cp'},
  'patch': [{'find': '    for cp in range(1, max_cp + 1):', 'replace': '    for cp in range(1, max_cp):'}]}]

EQUIVALENT = [{'mutant': 'args_swap:077b2a5f:1',
  'reason': 'valid_cp_degrees only asks whether ulysses_local_heads raises, and its condition (cp divides '
            'both head counts) is symmetric in n_heads and n_kv_heads, so swapping them changes no answer'}]
