"""scripts/device_check.sh, the GPU path's check, run up to the point that needs the device: this machine has
no GPU. A FAKE `nvidia-smi` stands in for a GPU machine's, to reach the steps after the GPU is found."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "device_check.sh"


def _run(tmp_path: Path, *args: str, path: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SCRIPT), "--out", str(tmp_path / "out"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": path, **env},
    )


def _fake_nvidia_smi(tmp_path: Path, gpus: int) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "nvidia-smi"
    lines = "".join(f"echo 'GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:08d})'\n" for i in range(gpus))
    tool.write_text("#!/bin/sh\n" + lines)
    tool.chmod(0o755)
    return f"{bin_dir}:/usr/bin:/bin"


def test_without_a_gpu_it_stops_before_any_device_step_and_says_why(tmp_path):
    proc = _run(tmp_path, path="/usr/bin:/bin")
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "no NVIDIA GPU here (nvidia-smi not found)" in summary
    assert "| train |" not in summary and not (tmp_path / "out" / "train.log").exists()


def test_a_gpu_listed_without_a_cuda_torch_stops_at_torch(tmp_path):
    """nvidia-smi lists a GPU, the venv's torch is the CPU build: with installing off it stops, exit 4."""
    proc = _run(tmp_path, path=_fake_nvidia_smi(tmp_path, 1), DEVICE_CHECK_NO_INSTALL="1")
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "| gpu | 1 GPU(s); the cuda-small run uses 1 rank(s) on nccl |" in summary
    assert "| venv | ok" in summary and "has no CUDA and installing is off" in summary


@pytest.mark.parametrize(("gpus", "ranks"), [(1, 1), (2, 2), (8, 2)])
def test_the_plan_runs_each_step_for_the_gpus_it_has(tmp_path, gpus, ranks):
    proc = _run(tmp_path, "--plan", "--gpus", str(gpus), path="/usr/bin:/bin")
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert f"--profile cuda-small --steps 3 --world-size {ranks}" in out and "TITANGRADE_DEVICE=cuda" in out
    for exercise in ("ch05.per_tensor_param", "ch06.context_parallel", "ch07.three_step_training"):
        assert f"reference/{exercise}/solution.ipynb\" --devices detect --json" in out
    assert ("band --profile cpu-tiny" in out) == (gpus >= 2)
    assert ("bands: skipped: the bands' 2 ranks need 2 GPUs" in out) == (gpus < 2)
    assert "VLLMRolloutEngine" in out
    assert not (tmp_path / "out" / "summary.md").exists()  # a plan runs nothing


def test_an_unknown_argument_is_refused():
    proc = subprocess.run(["bash", str(SCRIPT), "--gpu", "2"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown argument --gpu" in proc.stderr
