"""ch06.mesh_shapes: ParallelDims arithmetic, the three unflattened meshes, loss size and verl DP (COURSE.md section 4)."""
from __future__ import annotations

from ch05_06_common import Mistake, Spec, answer, call, code, fb, md


def reference_mesh_shapes(world, dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, ep=1, etp=1):
    """Grader-side reference (cross-checked against torchtitan's ParallelDims in tests/exercises/ch06)."""
    for v in (world, dp_replicate, cp, tp, pp, ep, etp):
        if v < 1:
            raise ValueError("degrees must be >= 1")
    if dp_shard == -1:
        dp_shard = world // (dp_replicate * cp * tp * pp)
    if dp_shard < 1 or dp_replicate * dp_shard * cp * tp * pp != world:
        raise ValueError("Invalid parallel dims")
    if ep > 1 and etp not in (tp, 1):
        raise ValueError("etp must be tp or 1")
    fsdp = dp_shard * cp
    if (fsdp * tp) % (etp * ep):
        raise ValueError("efsdp not integral")
    batch = dp_replicate * dp_shard
    return {"dense": [pp, batch, cp, tp], "fsdp": [pp, dp_replicate, fsdp, tp],
            "expert": [pp, dp_replicate, fsdp * tp // (etp * ep), ep, etp], "loss": batch * cp, "verl_dp": batch}


# (label, world, kwargs) rows of COURSE.md section 4's table (public) and beyond it (hidden).
TABLE = [
    ("world 2, shard 2 (course)", 2, {"dp_shard": 2}),
    ("world 2, shard 1, cp 2", 2, {"dp_shard": 1, "cp": 2}),
    ("world 8, shard -1, cp 2", 8, {"dp_shard": -1, "cp": 2}),
    ("world 8, rep 2, shard 2, tp 2", 8, {"dp_replicate": 2, "dp_shard": 2, "tp": 2}),
    ("world 8, shard 8, ep 4", 8, {"dp_shard": 8, "ep": 4}),
    ("world 8, pp 2, shard 2, tp 2", 8, {"pp": 2, "dp_shard": 2, "tp": 2}),
]
HIDDEN = [
    (1, {}),
    (16, {"dp_replicate": 2, "cp": 2, "tp": 2}),
    (16, {"pp": 4, "tp": 2}),
    (16, {"dp_shard": 4, "tp": 4, "ep": 2, "etp": 4}),
    (32, {"dp_replicate": 2, "dp_shard": 4, "cp": 2, "tp": 2, "ep": 8}),
    (8, {"cp": 8}),
]
INVALID_PUBLIC = [("world 8, shard 2, cp 2 (4 != 8)", 8, {"dp_shard": 2, "cp": 2})]
INVALID_HIDDEN = [
    (6, {"cp": 4}),
    (8, {"tp": 2, "ep": 2, "etp": 4}),
    (4, {"dp_replicate": 0}),
    (8, {"dp_shard": 3}),
]

INTRO = md("""
# 06 · DeviceMesh 的形状：`ParallelDims` 算术

torchtitan 用 `ParallelDims(dp_replicate, dp_shard, cp, tp, pp, ep, etp, world_size)` 描述并行度：
- `dp_shard=-1` 表示 `world // (dp_replicate·cp·tp·pp)`；随后要求 `dp_replicate·dp_shard·cp·tp·pp == world`，否则报 "Invalid parallel dims"。**ep 不在乘积里。**
- ep > 1 时，etp 只能等于 tp 或 1。
- `build_mesh()` 把一维 world mesh 展开成三种形状：
  - dense（数据加载）`(pp, batch=rep·shard, cp, tp)`；
  - fsdp `(pp, rep, fsdp=shard·cp, tp)`；
  - expert `(pp, rep, efsdp=fsdp·tp/(etp·ep), ep, etp)`（efsdp 必须是整数）。
- loss mesh 的大小 = batch·cp；verl 的 DP 大小 = shard·rep（不含 cp）。

课程用 2 卡：`data_parallel_shard_size=2`、`context_parallel_size=1`。
""", """
# 06 · DeviceMesh shapes: `ParallelDims` arithmetic

torchtitan describes parallelism with `ParallelDims(dp_replicate, dp_shard, cp, tp, pp, ep, etp, world_size)`:
- `dp_shard=-1` means `world // (dp_replicate·cp·tp·pp)`; then `dp_replicate·dp_shard·cp·tp·pp == world` must hold,
  else "Invalid parallel dims". **ep is not in the product.**
- with ep > 1, etp must equal tp or 1.
- `build_mesh()` unflattens the 1-D world mesh three ways:
  - dense (data loading) `(pp, batch=rep·shard, cp, tp)`;
  - fsdp `(pp, rep, fsdp=shard·cp, tp)`;
  - expert `(pp, rep, efsdp=fsdp·tp/(etp·ep), ep, etp)` (efsdp must be a whole number).
- the loss mesh has size batch·cp; verl's DP size is shard·rep (cp not included).

The course runs on 2 cards: `data_parallel_shard_size=2`, `context_parallel_size=1`.
""")

TASK = md("""
## 任务：`mesh_shapes(world, dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, ep=1, etp=1) -> dict`

返回 `{"dense": (pp, batch, cp, tp), "fsdp": (pp, rep, fsdp, tp), "expert": (pp, rep, efsdp, ep, etp), "loss": int, "verl_dp": int}`。
任何非法组合（度数 < 1、乘积不等于 world、etp 不是 tp 或 1、efsdp 不是整数）都抛出 `ValueError`。
""", """
## Task: `mesh_shapes(world, dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, ep=1, etp=1) -> dict`

Return `{"dense": (pp, batch, cp, tp), "fsdp": (pp, rep, fsdp, tp), "expert": (pp, rep, efsdp, ep, etp), "loss": int,
"verl_dp": int}`. Raise `ValueError` on any invalid combination (a degree < 1, product != world, etp neither tp nor 1,
efsdp not a whole number).
""")

STUB = '''
def mesh_shapes(world, dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, ep=1, etp=1):
    """Mesh shapes, loss size and verl DP size for one ParallelDims setting."""
    raise NotImplementedError("mesh_shapes: resolve dp_shard, validate, then build the three shapes")
'''

SOL = '''
def mesh_shapes(world, dp_replicate=1, dp_shard=-1, cp=1, tp=1, pp=1, ep=1, etp=1):
    """Mesh shapes, loss size and verl DP size for one ParallelDims setting."""
    for name, v in dict(world=world, dp_replicate=dp_replicate, cp=cp, tp=tp, pp=pp, ep=ep, etp=etp).items():
        if v < 1:
            raise ValueError(f"{name} must be >= 1, got {v}")
    if dp_shard == -1:
        dp_shard = world // (dp_replicate * cp * tp * pp)
    if dp_shard < 1 or dp_replicate * dp_shard * cp * tp * pp != world:
        raise ValueError(f"Invalid parallel dims: {dp_replicate}*{dp_shard}*{cp}*{tp}*{pp} != {world}")
    if ep > 1 and etp not in (tp, 1):
        raise ValueError("with ep > 1, etp must be tp or 1")
    fsdp = dp_shard * cp
    if (fsdp * tp) % (etp * ep):
        raise ValueError("efsdp = fsdp*tp/(etp*ep) is not a whole number")
    efsdp = fsdp * tp // (etp * ep)
    batch = dp_replicate * dp_shard
    return {
        "dense": (pp, batch, cp, tp),
        "fsdp": (pp, dp_replicate, fsdp, tp),
        "expert": (pp, dp_replicate, efsdp, ep, etp),
        "loss": batch * cp,
        "verl_dp": batch,
    }
'''

SELFCHECK = code('''
# Public self-check: the course's 2-card setting and one invalid setting
print(mesh_shapes(2, dp_shard=2))
print(mesh_shapes(8, dp_shard=-1, cp=2))
try:
    mesh_shapes(8, dp_shard=2, cp=2)
    print("should have raised")
except ValueError as exc:
    print("ValueError:", exc)
''')


def _reference() -> dict:
    table = [call([w], reference_mesh_shapes(w, **kw), kwargs=kw, public=True, label=label) for label, w, kw in TABLE]
    hidden = [call([w], reference_mesh_shapes(w, **kw), kwargs=kw) for w, kw in HIDDEN]
    invalid = [call([w], kwargs=kw, raises="ValueError", public=True, label=label) for label, w, kw in INVALID_PUBLIC]
    invalid += [call([w], kwargs=kw, raises="ValueError") for w, kw in INVALID_HIDDEN]
    return {
        "course_table": {"calls": table, "compare": "exact", "feedback": fb(
            "Resolve dp_shard=-1 first, then batch = rep*shard and fsdp = shard*cp; loss includes cp, verl_dp does not.",
            "先解析 dp_shard=-1，再算 batch = rep*shard、fsdp = shard*cp；loss 含 cp，verl_dp 不含。")},
        "hidden_rows": {"calls": hidden, "compare": "exact", "feedback": fb(
            "Hidden rows use world sizes 1-32 with HSDP, CP, TP, PP and EP together; remember efsdp = fsdp*tp/(etp*ep).",
            "隐藏用例在 world 1-32 上组合 HSDP、CP、TP、PP、EP；注意 efsdp = fsdp*tp/(etp*ep)。")},
        "invalid": {"calls": invalid, "compare": "exact", "feedback": fb(
            "Raise ValueError for degrees < 1, a product that is not the world size (ep excluded), etp not in "
            "{tp, 1} when ep > 1, and a fractional efsdp.",
            "度数 < 1、乘积（不含 ep）不等于 world、ep > 1 时 etp 不是 tp 或 1、efsdp 非整数时都要抛出 ValueError。")},
    }


def spec() -> Spec:
    return Spec(
        id="ch06.mesh_shapes",
        title_en="DeviceMesh shapes from parallel degrees",
        title_zh="由并行度推导 DeviceMesh 形状",
        kernel_family="light",
        answers=[("mesh_shapes", "function")],
        checks=[
            {"name": "course_table", "answer": "mesh_shapes", "kind": "function", "points": 4,
             "title": ("The course's mesh table", "课程中的 mesh 表")},
            {"name": "hidden_rows", "answer": "mesh_shapes", "kind": "function", "points": 3,
             "title": ("Settings beyond the table", "表外的并行设置")},
            {"name": "invalid", "answer": "mesh_shapes", "kind": "function", "points": 3,
             "title": ("Invalid settings raise ValueError", "非法设置抛出 ValueError")},
        ],
        reference=_reference(),
        cells=[INTRO, TASK, answer(STUB, SOL), SELFCHECK],
        mistakes=[
            Mistake("loss_without_cp", [('"loss": batch * cp', '"loss": batch')],
                    "graded", 7.1667, {"course_table": "world 2, shard 1, cp 2"}),
            Mistake("verl_dp_with_cp", [('"verl_dp": batch,', '"verl_dp": batch * cp,')],
                    "graded", 7.1667, {"course_table": "world 8, shard -1, cp 2"}),
            Mistake("no_validation", [(
                '''    if dp_shard < 1 or dp_replicate * dp_shard * cp * tp * pp != world:
        raise ValueError(f"Invalid parallel dims: {dp_replicate}*{dp_shard}*{cp}*{tp}*{pp} != {world}")
''', "")], "graded", 8.2, {"invalid": "world 8, shard 2, cp 2"}),
            Mistake("ep_in_product", [("dp_replicate * dp_shard * cp * tp * pp != world",
                                       "dp_replicate * dp_shard * cp * tp * pp * ep != world")],
                    "graded", 8.3333, {"course_table": "world 8, shard 8, ep 4"}),
        ],
    )
