"""HF-format checkpoints in and out of the (sharded) torchtitan model, the course's way.

Loading mirrors torchtitan's `initial_load_in_hf`: safetensors -> `Qwen3StateDictAdapter.from_hf`
-> the model's (DTensor) state dict. `get_per_tensor_param` mirrors verl's engine: state dict ->
`to_hf` names -> `full_tensor()` (all-gather) -> bf16, with the tied `lm_head` added.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict
from torchtitan.models.qwen3 import Qwen3StateDictAdapter

from exercises.lab.model import ModelDims, dims_from_hf_config, titan_config

#: Where the SFT-warmed lab checkpoint ships (built by scripts/make_tiny_checkpoint.py).
SHIPPED_CHECKPOINT = Path(__file__).resolve().parent / "assets" / "qwen3-tiny-wordle-sft"
WEIGHTS_FILE = "model.safetensors"


def read_hf_config(directory: str | Path) -> dict:
    """config.json of an HF checkpoint directory, with a clear error when it is missing."""
    path = Path(directory) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found; point model_path at an HF checkpoint directory "
            "(config.json + model.safetensors) or rebuild it with scripts/make_tiny_checkpoint.py."
        )
    return json.loads(path.read_text())


def load_hf_state_dict(directory: str | Path) -> dict[str, torch.Tensor]:
    """All tensors of `directory/model.safetensors`, keyed by HF names."""
    from safetensors.torch import load_file

    path = Path(directory) / WEIGHTS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; rebuild the checkpoint with scripts/make_tiny_checkpoint.py.")
    return load_file(str(path))


def save_hf_checkpoint(directory: str | Path, hf_state_dict: dict[str, torch.Tensor], config: dict) -> Path:
    """Write model.safetensors + config.json (tied lm_head omitted, as HF does for tied Qwen3)."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().contiguous().cpu() for k, v in hf_state_dict.items() if k != "lm_head.weight"}
    save_file(tensors, str(directory / WEIGHTS_FILE), metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return directory


def state_dict_adapter(dims: ModelDims, hf_assets_path: str | None = None) -> Qwen3StateDictAdapter:
    """torchtitan's Qwen3 adapter for a model with these dimensions."""
    return Qwen3StateDictAdapter(titan_config(dims), hf_assets_path)


def load_hf_into_model(model: torch.nn.Module, directory: str | Path, adapter: Qwen3StateDictAdapter) -> int:
    """Load an HF checkpoint into `model` (plain or FSDP2-sharded) through `adapter.from_hf`; returns keys loaded.

    Every rank reads the full tensors and `set_model_state_dict(full_state_dict=True)` keeps its own
    shard, which is what DCP's HF reader achieves for the real engine.
    """
    titan_sd = adapter.from_hf(dict(load_hf_state_dict(directory)))
    set_model_state_dict(model, titan_sd, options=StateDictOptions(full_state_dict=True, strict=True))
    return len(titan_sd)


def save_actor_checkpoint(
    directory: str | Path,
    model: torch.nn.Module,
    adapter: Qwen3StateDictAdapter,
    config: dict,
    *,
    rank: int,
    step: int,
    device: str | torch.device = "cpu",
) -> Path | None:
    """Materialize the actor's weights (collective) and write them, HF format, on rank 0 only."""
    from exercises.lab.weight_sync import get_per_tensor_param  # lazy: hidden in ch05.per_tensor_param

    full = {name: t.cpu() for name, t in get_per_tensor_param(model, adapter, dtype=torch.float32, device=device)}
    if rank != 0:
        return None
    out = save_hf_checkpoint(directory, full, config)
    (Path(directory) / "trainer_state.json").write_text(json.dumps({"global_step": step}) + "\n")
    return out


def dims_of_checkpoint(directory: str | Path) -> ModelDims:
    """The `ModelDims` of an HF checkpoint directory."""
    return dims_from_hf_config(read_hf_config(directory))
