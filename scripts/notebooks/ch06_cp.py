"""ch06.context_parallel: Ulysses CP head arithmetic and the head-scatter / sequence-gather all_to_all on 2 gloo ranks."""
from __future__ import annotations

from ch05_06_common import Mistake, Spec, answer, call, code, fb, md


def ref_heads(n_heads, n_kv, cp):
    if n_heads % cp or n_kv % cp:
        raise ValueError
    return [n_heads // cp, n_kv // cp]


def ref_valid(n_heads, n_kv, max_cp):
    return [c for c in range(1, max_cp + 1) if n_heads % c == 0 and n_kv % c == 0]


def ref_a2a(shapes):
    import torch

    out = []
    for B, S, H, D in shapes:
        full = torch.arange(B * S * H * D, dtype=torch.float32).reshape(B, S, H, D)
        ranks = [full[:, :, r * H // 2:(r + 1) * H // 2, :] for r in range(2)]
        out.append({"rank0": _t(ranks[0]), "rank1": _t(ranks[1]), "roundtrip": True})
    return out


def _t(x) -> dict:
    return {"__tensor__": {"dtype": "float32", "shape": list(x.shape), "data": x.tolist()}}


INTRO = md("""
# 06 · 上下文并行（Ulysses CP）

长序列时，NPU 的 Qwen3 用 Ulysses 式上下文并行 `NPUVarlenUlyssesCP`：每张卡先持有**一段序列、全部头**；
注意力前的 pre-hook 对 q/k/v 做 `all_to_all`：**按头（dim 2）分散、按序列（dim 1）聚合**，于是每张卡持有**全部序列、一部分头**，
可以独立算注意力；post-hook 做反向交换。`VarlenMetadata` 不切分。

前提：`n_heads % cp == 0` 且 `n_kv_heads % cp == 0`，否则报 "[Ulysses CP] n_heads=… must be divisible…"。
Qwen3-1.7B（16 个 q 头、8 个 kv 头）：cp ∈ {1, 2, 4, 8}；cp=2 时每卡 8 个 q 头、4 个 kv 头；cp=16 非法。

本练习在 2 个 gloo 进程上真实运行这次交换（gloo 在 CPU 上支持 `all_to_all_single`）。
""", """
# 06 · Context parallelism (Ulysses CP)

For long sequences the NPU Qwen3 uses Ulysses-style context parallelism, `NPUVarlenUlyssesCP`: each card starts with
**a slice of the sequence and all heads**; a pre-hook runs `all_to_all` on q/k/v that **scatters heads (dim 2) and
gathers the sequence (dim 1)**, so each card then holds **the whole sequence for a subset of heads** and computes
attention on its own; a post-hook reverses the exchange. `VarlenMetadata` is not sharded.

It requires `n_heads % cp == 0` and `n_kv_heads % cp == 0`, else "[Ulysses CP] n_heads=… must be divisible…". Qwen3-1.7B
(16 q heads, 8 kv heads): cp ∈ {1, 2, 4, 8}; at cp=2 each card has 8 q heads and 4 kv heads; cp=16 is invalid.

This exercise runs the exchange for real on 2 gloo processes (gloo supports `all_to_all_single` on CPU).
""")

TASK1 = md("""
## 任务 1
- `ulysses_local_heads(n_heads, n_kv_heads, cp) -> (q_heads, kv_heads)`：每卡头数；不能整除时抛出 `ValueError`。
- `valid_cp_degrees(n_heads, n_kv_heads, max_cp) -> list[int]`：1…max_cp 中所有合法的 cp，升序。
""", """
## Task 1
- `ulysses_local_heads(n_heads, n_kv_heads, cp) -> (q_heads, kv_heads)`: heads per card; raise `ValueError` when not
  divisible.
- `valid_cp_degrees(n_heads, n_kv_heads, max_cp) -> list[int]`: every valid cp in 1…max_cp, ascending.
""")

STUB1 = '''
def ulysses_local_heads(n_heads, n_kv_heads, cp):
    raise NotImplementedError("ulysses_local_heads")


def valid_cp_degrees(n_heads, n_kv_heads, max_cp):
    raise NotImplementedError("valid_cp_degrees")
'''

SOL1 = '''
def ulysses_local_heads(n_heads, n_kv_heads, cp):
    if n_heads % cp or n_kv_heads % cp:
        raise ValueError(f"[Ulysses CP] n_heads={n_heads} and n_kv_heads={n_kv_heads} must be divisible by cp={cp}")
    return n_heads // cp, n_kv_heads // cp


def valid_cp_degrees(n_heads, n_kv_heads, max_cp):
    valid = []
    for cp in range(1, max_cp + 1):
        try:
            ulysses_local_heads(n_heads, n_kv_heads, cp)
        except ValueError:
            continue
        valid.append(cp)
    return valid
'''

TASK2 = md("""
## 任务 2：`ulysses_worker.py`
下一个单元格把你的代码写入 `ulysses_worker.py`（子进程要 import 它，所以必须是文件）。实现：
- `seq_to_head(x, group=None)`：本卡 `[B, S/cp, H, D]` → `[B, S, H/cp, D]`（rank j 得到第 j 组头，序列按 rank 顺序拼接）；
- `head_to_seq(y, group=None)`：反向，`[B, S, H/cp, D]` → `[B, S/cp, H, D]`。

用 `torch.distributed.all_to_all_single`（或 `all_to_all`）；`cp = dist.get_world_size(group)`。
""", """
## Task 2: `ulysses_worker.py`
The next cell writes your code to `ulysses_worker.py` (the child processes import it, so it must be a file). Implement:
- `seq_to_head(x, group=None)`: local `[B, S/cp, H, D]` → `[B, S, H/cp, D]` (rank j gets the j-th group of heads, the
  sequence concatenated in rank order);
- `head_to_seq(y, group=None)`: the reverse, `[B, S, H/cp, D]` → `[B, S/cp, H, D]`.

Use `torch.distributed.all_to_all_single` (or `all_to_all`); `cp = dist.get_world_size(group)`.
""")

STUB2 = '''
%%writefile ulysses_worker.py
import torch
import torch.distributed as dist


def seq_to_head(x, group=None):
    raise NotImplementedError("seq_to_head")


def head_to_seq(y, group=None):
    raise NotImplementedError("head_to_seq")
'''

SOL2 = '''
%%writefile ulysses_worker.py
import torch
import torch.distributed as dist


def seq_to_head(x, group=None):
    """[B, S/cp, H, D] -> [B, S, H/cp, D]: scatter heads, gather the sequence."""
    cp = dist.get_world_size(group)
    B, s, H, D = x.shape
    send = x.reshape(B, s, cp, H // cp, D).permute(2, 0, 1, 3, 4).contiguous()  # [cp, B, s, H/cp, D]
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)  # recv[j]: rank j's sequence slice of my heads
    return recv.permute(1, 0, 2, 3, 4).reshape(B, cp * s, H // cp, D)


def head_to_seq(y, group=None):
    """[B, S, H/cp, D] -> [B, S/cp, H, D]: scatter the sequence, gather heads."""
    cp = dist.get_world_size(group)
    B, S, h, D = y.shape
    send = y.reshape(B, cp, S // cp, h, D).permute(1, 0, 2, 3, 4).contiguous()  # [cp, B, S/cp, h, D]
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)  # recv[j]: rank j's heads of my sequence slice
    return recv.permute(1, 2, 0, 3, 4).reshape(B, S // cp, cp * h, D)
'''

HARNESS = code('''
# Launcher (keep as is): 2 gloo ranks via torch.multiprocessing spawn; each rank holds a sequence slice of
# full = arange(B*S*H*D).reshape(B, S, H, D), runs your seq_to_head, then head_to_seq back.
import importlib
import os
import socket
import sys
import tempfile
from pathlib import Path

import torch
import torch.multiprocessing as mp

Path("ulysses_harness.py").write_text("""
import os
import torch
import torch.distributed as dist


def entry(rank, shapes, port, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    import ulysses_worker
    results = []
    for B, S, H, D in shapes:
        full = torch.arange(B * S * H * D, dtype=torch.float32).reshape(B, S, H, D)
        local = full.chunk(2, dim=1)[rank].contiguous()
        heads = ulysses_worker.seq_to_head(local)
        back = ulysses_worker.head_to_seq(heads)
        results.append({"heads": heads, "roundtrip": bool(back.shape == local.shape and torch.equal(back, local))})
    torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()
""")
sys.path.insert(0, os.getcwd())


def run_ulysses(shapes):
    """shapes: list of [B, S, H, D] -> per shape {"rank0": heads, "rank1": heads, "roundtrip": bool}."""
    import ulysses_harness
    importlib.reload(ulysses_harness)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out_dir = tempfile.mkdtemp(dir=os.getcwd())
    mp.start_processes(ulysses_harness.entry, args=(shapes, port, out_dir), nprocs=2, start_method="spawn")
    r0, r1 = (torch.load(os.path.join(out_dir, f"rank{r}.pt")) for r in range(2))
    return [{"rank0": a["heads"], "rank1": b["heads"], "roundtrip": a["roundtrip"] and b["roundtrip"]}
            for a, b in zip(r0, r1)]
''')

SELFCHECK = code('''
# Public self-check
print(ulysses_local_heads(16, 8, 2), valid_cp_degrees(16, 8, 16))
print(run_ulysses([[1, 4, 4, 2]]))
''')


def _reference() -> dict:
    heads = [call([16, 8, 2], ref_heads(16, 8, 2), public=True, label="1.7B, cp 2"),
             call([16, 8, 16], raises="ValueError", public=True, label="1.7B, cp 16"),
             call([32, 4, 4], ref_heads(32, 4, 4)), call([16, 8, 8], ref_heads(16, 8, 8)),
             call([64, 4, 4], ref_heads(64, 4, 4)), call([32, 4, 8], raises="ValueError"),
             call([24, 8, 3], raises="ValueError")]
    valid = [call([16, 8, 16], ref_valid(16, 8, 16), public=True, label="1.7B up to 16"),
             call([32, 4, 16], ref_valid(32, 4, 16)), call([40, 8, 8], ref_valid(40, 8, 8)),
             call([12, 6, 12], ref_valid(12, 6, 12))]
    assert ref_heads(16, 8, 2) == [8, 4] and ref_valid(16, 8, 16) == [1, 2, 4, 8]
    pub_shapes = [[1, 4, 4, 2]]
    hid_shapes = [[2, 6, 2, 3], [1, 2, 8, 1], [3, 4, 6, 2]]
    return {
        "local_heads": {"calls": heads, "compare": "exact", "feedback": fb(
            "Both the q heads and the kv heads must divide by cp; otherwise raise ValueError.",
            "q 头数和 kv 头数都必须能被 cp 整除，否则抛出 ValueError。")},
        "valid_degrees": {"calls": valid, "compare": "exact", "feedback": fb(
            "List every cp from 1 to max_cp that divides both head counts.",
            "列出 1 到 max_cp 之间同时整除两个头数的所有 cp。")},
        "all_to_all_public": {"calls": [call([pub_shapes], ref_a2a(pub_shapes), public=True,
                                             label="B=1, S=4, H=4, D=2")], "compare": "exact", "feedback": fb(
            "After seq_to_head rank j must hold heads [j*H/cp, (j+1)*H/cp) for the whole sequence, in sequence "
            "order; head_to_seq must give back the rank's own slice.",
            "seq_to_head 之后 rank j 应持有整条序列上第 [j*H/cp, (j+1)*H/cp) 个头，序列按顺序排列；head_to_seq 必须还原本卡的切片。")},
        "all_to_all_hidden": {"calls": [call([hid_shapes], ref_a2a(hid_shapes))], "compare": "exact",
                              "feedback": fb("Hidden shapes use batch > 1 and other head counts: mind the order of "
                                             "dimensions when you permute before/after the exchange.",
                                             "隐藏用例的 batch > 1、头数不同：交换前后 permute 的维度顺序要正确。")},
    }


def spec() -> Spec:
    return Spec(
        id="ch06.context_parallel",
        title_en="Context parallelism: Ulysses heads and all_to_all",
        title_zh="上下文并行：Ulysses 头划分与 all_to_all",
        kernel_family="training",
        lane="long",
        world_size=2,
        answers=[("ulysses_local_heads", "function"), ("valid_cp_degrees", "function"), ("run_ulysses", "function")],
        checks=[
            {"name": "local_heads", "answer": "ulysses_local_heads", "kind": "function", "points": 2,
             "title": ("Local heads per card", "每卡本地头数")},
            {"name": "valid_degrees", "answer": "valid_cp_degrees", "kind": "function", "points": 2,
             "title": ("Valid CP degrees", "合法的 CP 度数")},
            {"name": "all_to_all_public", "answer": "run_ulysses", "kind": "function", "points": 3,
             "title": ("all_to_all on 2 ranks: public shape", "2 个 rank 上的 all_to_all：公开形状")},
            {"name": "all_to_all_hidden", "answer": "run_ulysses", "kind": "function", "points": 3,
             "title": ("all_to_all on 2 ranks: hidden shapes", "2 个 rank 上的 all_to_all：隐藏形状")},
        ],
        reference=_reference(),
        cells=[INTRO, TASK1, answer(STUB1, SOL1), TASK2, answer(STUB2, SOL2), HARNESS, SELFCHECK],
        mistakes=[
            Mistake("kv_heads_ignored", [("if n_heads % cp or n_kv_heads % cp:", "if n_heads % cp:")],
                    "graded", 7.1429, {"valid_degrees": "1.7B up to 16"}),
            Mistake("no_permute_back", [("return recv.permute(1, 0, 2, 3, 4).reshape(B, cp * s, H // cp, D)",
                                         "return recv.reshape(B, cp * s, H // cp, D)")],
                    "graded", 7.0, {"all_to_all_hidden": "hidden"}),
            Mistake("scatter_sequence", [("send = x.reshape(B, s, cp, H // cp, D).permute(2, 0, 1, 3, 4).contiguous()",
                                          "send = x.reshape(B, cp, s // cp, H, D).permute(1, 0, 2, 3, 4).contiguous()")],
                    "graded", 4.0, {"all_to_all_public": "B=1, S=4, H=4, D=2"}),
        ],
    )
