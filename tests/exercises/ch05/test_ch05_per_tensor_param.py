"""ch05.per_tensor_param: recompute the reference names/shapes/checksums with the lab on 2 gloo ranks (drift guard).

The launcher is the master's own cell (reference/ch05.per_tensor_param/per_tensor_param.py), so the guard runs
exactly what learners run, with the lab's reference get_per_tensor_param in place of theirs.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grading.authoring.build import master_path
from grading.authoring.master import read_master
from grading.exercise import REPO_ROOT, Catalogue


def _reference_run() -> dict:
    """The master's own launcher cell, run with the lab's get_per_tensor_param (2 gloo ranks, ~10 s)."""
    master = read_master(master_path(Catalogue().get("ch05.per_tensor_param")))
    launcher = next(c.solution for c in master.learner_cells if "def run_materialize" in c.solution)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "per_tensor_worker.py").write_text("from exercises.lab.weight_sync import get_per_tensor_param\n")
        Path(tmp, "launcher_cell.py").write_text(launcher)  # spawned ranks re-import __main__, not this
        Path(tmp, "runner.py").write_text("if __name__ == '__main__':\n    import json\n    import launcher_cell\n"
                                          "    print(json.dumps(launcher_cell.RESULT))\n")
        env = dict(os.environ, PYTHONPATH=f"{REPO_ROOT}:{tmp}", OMP_NUM_THREADS="1")
        proc = subprocess.run([sys.executable, "runner.py"], cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, f"reference run failed:\n{proc.stderr[-3000:]}"
        return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_lab_materialization_matches_answer_file():
    ref = Catalogue().get("ch05.per_tensor_param").reference()["checks"]
    run = _reference_run()
    assert sorted(ref["hf_names"]["expected"]) == run["names"]
    assert ref["full_shapes"]["expected"] == run["shapes"]
    assert run["dtypes"] == ["torch.bfloat16"]
    assert run["tied"] == {"lm_head_is_embedding": True, "ranks_agree": True}
    for name, (abs_sum, sq_sum) in ref["checksums"]["expected"].items():
        assert run["checksums"][name] == pytest.approx([abs_sum, sq_sum], rel=1e-2, abs=1e-3), name
    # full shapes really are global: embedding = vocab x dim of the shipped checkpoint
    assert run["shapes"]["model.embed_tokens.weight"] == [128, 128]


def test_answer_checksums_are_the_shipped_checkpoint_in_bf16():
    """Materializing the sharded model must give back exactly what from_hf loaded: the SFT checkpoint."""
    import torch
    from safetensors.torch import load_file

    from exercises.lab.checkpoint import SHIPPED_CHECKPOINT

    ref = Catalogue().get("ch05.per_tensor_param").reference()["checks"]["checksums"]["expected"]
    weights = load_file(str(SHIPPED_CHECKPOINT / "model.safetensors"))
    weights.setdefault("lm_head.weight", weights["model.embed_tokens.weight"])
    assert sorted(ref) == sorted(weights)
    for name, (abs_sum, sq_sum) in ref.items():
        t = weights[name].to(torch.bfloat16).float()
        assert [float(t.abs().sum()), float(t.pow(2).sum())] == pytest.approx([abs_sum, sq_sum], rel=1e-5), name
