"""Mesh and FSDP2 for the lab model through torchtitan's own `ParallelDims` and `parallelize_qwen3`.

CPU needs three documented workarounds (PLATFORM.md section 2), each applied here and only on CPU:
`parallel_dims.device_type = "cpu"` (torchtitan falls back to "cuda"), force-sum reductions
(gloo has no PREMUL_SUM/AVG) and `CPUOffloadPolicy(pin_memory=False)` (pinning needs an accelerator).
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from types import SimpleNamespace

import torch
from torch.distributed.fsdp import CPUOffloadPolicy, FSDPModule
from torchtitan.config import CompileConfig, ParallelismConfig, TrainingConfig
from torchtitan.distributed import ParallelDims
from torchtitan.distributed.utils import set_spmd_backend
from torchtitan.models.qwen3 import Qwen3Model, parallelize_qwen3

from exercises.lab.device import PARAM_DTYPE
from exercises.lab.model import ModelDims, titan_config

#: torchtitan's default "spmd_types" fails in fully_shard with torch 2.13 (PLATFORM.md section 2).
SPMD_BACKENDS = ("partial_dtensor", "full_dtensor")
RESHARD_POLICIES = ("default", "always", "never")


@dataclass(kw_only=True, slots=True)
class ParallelPlan:
    """What the FSDP2 wrapping needs, resolved from the trainer config."""

    data_parallel_shard_size: int
    """FSDP2 shard degree (course: 2)."""
    context_parallel_size: int
    """CP degree (course: 1; CP needs varlen/Ulysses on NPU, not available here)."""
    world_size: int
    """Ranks launched."""
    device_type: str
    """"cpu", "cuda" or "npu"."""
    reshard_after_forward: str = "always"
    """torchtitan's fsdp_reshard_after_forward policy."""
    param_offload: bool = False
    """FSDP2 CPUOffloadPolicy: parameters (and grads) live on the CPU."""
    spmd_backend: str = "partial_dtensor"
    """torchtitan SPMD backend for parallelize_qwen3."""


def validate_parallel_sizes(*, data_parallel_shard_size: int, context_parallel_size: int, world_size: int) -> None:
    """torchtitan's ParallelDims check, raised before any rank starts, in its own words."""
    if data_parallel_shard_size < 1 or context_parallel_size < 1:
        raise ValueError(
            "Invalid parallel dims: data_parallel_shard_size and context_parallel_size must be >= 1 "
            f"(got {data_parallel_shard_size}, {context_parallel_size})."
        )
    if data_parallel_shard_size * context_parallel_size != world_size:
        raise ValueError(
            f"Invalid parallel dims: dp_replicate(1) * dp_shard({data_parallel_shard_size}) * "
            f"cp({context_parallel_size}) * tp(1) * pp(1) != WORLD_SIZE({world_size}); "
            "make data_parallel_shard_size * context_parallel_size equal the world size."
        )


def parallelism_config(plan: ParallelPlan) -> ParallelismConfig:
    """The torchtitan `ParallelismConfig` the verl engine would build from `actor.torchtitan.*`."""
    return ParallelismConfig(
        data_parallel_replicate_degree=1,
        data_parallel_shard_degree=plan.data_parallel_shard_size,
        context_parallel_degree=plan.context_parallel_size,
        tensor_parallel_degree=1,
        pipeline_parallel_degree=1,
        expert_parallel_degree=1,
        fsdp_reshard_after_forward=plan.reshard_after_forward,
        spmd_backend=plan.spmd_backend,
    )


def build_parallel_dims(plan: ParallelPlan) -> ParallelDims:
    """`ParallelDims.build_mesh()` on the current process group (call after init_process_group)."""
    validate_parallel_sizes(
        data_parallel_shard_size=plan.data_parallel_shard_size,
        context_parallel_size=plan.context_parallel_size,
        world_size=plan.world_size,
    )
    if plan.spmd_backend not in SPMD_BACKENDS:
        raise ValueError(f"spmd_backend must be one of {SPMD_BACKENDS}, got {plan.spmd_backend!r}.")
    import torchtitan.distributed.parallel_dims as pd_module

    if plan.device_type == "cpu":
        # torchtitan resolves its device as `_get_available_device_type() or "cuda"`; on a CPU host
        # that names CUDA, so the mesh would try to set a CUDA device.
        pd_module.device_type = "cpu"
    dims = ParallelDims.from_config(parallelism_config(plan), world_size=plan.world_size)
    dims.build_mesh()
    set_spmd_backend(plan.spmd_backend)
    return dims


def mesh_summary(parallel_dims: ParallelDims) -> dict:
    """Shape and names of the world mesh and of every 1-D sub-mesh (for run.json)."""
    world = parallel_dims.world_mesh
    return {
        "world_mesh": {"shape": list(world.shape), "dim_names": list(world.mesh_dim_names or ())},
        "fsdp_mesh": _describe(
            parallel_dims, ["fsdp"] if parallel_dims.spmd_backend == "partial_dtensor" else ["dp_shard"]
        ),
        "one_dimensional": {
            name: list(mesh.shape) for name, mesh in sorted(parallel_dims.get_all_one_dimensional_meshes().items())
        },
    }


def _describe(parallel_dims: ParallelDims, names: list[str]) -> dict:
    mesh = parallel_dims.get_mesh(names)
    return {"shape": list(mesh.shape), "dim_names": list(mesh.mesh_dim_names or ())}


@contextlib.contextmanager
def _unpinned_offload_on_cpu(device_type: str):
    """torchtitan builds `CPUOffloadPolicy()` (pin_memory=True), which needs an accelerator; unpin on CPU."""
    import torchtitan.distributed.fsdp as fsdp_module

    original = fsdp_module.CPUOffloadPolicy
    if device_type == "cpu":
        fsdp_module.CPUOffloadPolicy = functools.partial(CPUOffloadPolicy, pin_memory=False)
    try:
        yield
    finally:
        fsdp_module.CPUOffloadPolicy = original


def build_sharded_model(dims: ModelDims, plan: ParallelPlan, parallel_dims: ParallelDims, *, seed: int) -> Qwen3Model:
    """Meta-build the tiny Qwen3, wrap it with FSDP2 via `parallelize_qwen3`, then materialize and init."""
    parallelism = parallelism_config(plan)
    config = titan_config(dims)
    config.update_from_config(config=SimpleNamespace(parallelism=parallelism))
    with torch.device("meta"):
        model = config.build()
    training = TrainingConfig(mixed_precision_param=PARAM_DTYPE, enable_cpu_offload=plan.param_offload)
    with _unpinned_offload_on_cpu(plan.device_type):
        parallelize_qwen3(
            model,
            parallel_dims=parallel_dims,
            training=training,
            parallelism=parallelism,
            compile_config=CompileConfig(enable=False),
            ac_config=None,
            dump_folder="/tmp",
        )
    dp_size = plan.data_parallel_shard_size
    for module in model.modules():
        if isinstance(module, FSDPModule):
            # verl's engine calls enable_fsdp_gradient_division(dp_size): gradients are averaged over
            # dp ranks, matching agg_loss's `* dp_size`. Sum-then-divide keeps gloo happy.
            module.set_gradient_divide_factor(float(dp_size))
            if plan.device_type == "cpu":
                module.set_force_sum_reduction_for_comms(True)
    init_device = "cpu" if plan.param_offload or plan.device_type == "cpu" else plan.device_type
    model.to_empty(device=init_device)
    torch.manual_seed(seed)
    with torch.no_grad():
        model.init_states(buffer_device=torch.device(plan.device_type if not plan.param_offload else "cpu"))
    return model


def params_are_dtensors(model: torch.nn.Module) -> bool:
    """True when every parameter is a DTensor (FSDP2 sharded), as the course expects."""
    from torch.distributed.tensor import DTensor

    params = list(model.parameters())
    return bool(params) and all(isinstance(p, DTensor) for p in params)
