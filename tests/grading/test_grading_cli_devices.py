"""`titangrade grade --devices`: which devices a one-shot grading gets (grading/cli.py `_grant`). The
inventories are FAKE (ids on a machine with no accelerator; no vendor tool is installed, so none is held)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grading.cli import _grant
from grading.exercise import REPO_ROOT, Catalogue
from grading.sandbox import CPU_ONLY, DeviceGrant

CATALOGUE = Catalogue()
TRAINING = "ch07.three_step_training"  # 2 NPUs, else 2 GPUs, else 2 CPU ranks


def test_an_exercise_asking_for_devices_gets_them_from_the_spec():
    assert _grant("cuda:0,1", CATALOGUE, TRAINING) == DeviceGrant(kind="cuda", ids=(0, 1))
    assert _grant("cuda:0,1;npu:4-7", CATALOGUE, TRAINING) == DeviceGrant(kind="npu", ids=(4, 5))  # NPUs first


def test_too_few_devices_fall_back_to_cpu_ranks_and_cpu_exercises_stay_on_the_cpu():
    assert _grant("cuda:0", CATALOGUE, TRAINING) == CPU_ONLY
    assert _grant("", CATALOGUE, TRAINING) == CPU_ONLY
    assert _grant("npu:0-7", CATALOGUE, "ch07.wordle_reward") == CPU_ONLY
    assert _grant("npu:0-7", CATALOGUE, None) == CPU_ONLY  # unknown exercise: the pipeline says why


def test_a_bad_spec_is_an_input_error_naming_the_format():
    proc = subprocess.run(
        [sys.executable, "-m", "service.cli", "grade", str(CATALOGUE.get(TRAINING).solution_path), "--devices", "gpu:0"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    )
    assert proc.returncode == 2 and "bad_devices" in proc.stderr and "cuda:IDS or npu:IDS" in proc.stderr


def test_cli_help_names_the_option():
    proc = subprocess.run(
        [sys.executable, "-m", "service.cli", "grade", "--help"], capture_output=True, text=True, cwd=REPO_ROOT,
        timeout=60,
    )
    assert proc.returncode == 0 and "--devices" in proc.stdout


@pytest.mark.parametrize("spec", ["npu:0-1", "cuda:0,1"])
def test_the_grant_comes_from_the_first_kind_the_exercise_accepts(spec):
    grant = _grant(spec, CATALOGUE, TRAINING)
    assert grant.kind == spec.split(":")[0] and len(grant.ids) == 2
