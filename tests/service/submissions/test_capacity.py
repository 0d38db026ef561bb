"""Intake refuses a job no worker could ever run, and accepts one that falls back to CPU ranks."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from grading.exercise import Catalogue, Manifest
from service.errors import Unsatisfiable
from service.submissions.service import check_capacity

TRAINING = Catalogue().get("ch07.three_step_training")


@dataclass
class _Exercise:  # check_capacity reads only these two
    id: str
    manifest: Manifest


def _with(**resources) -> _Exercise:
    res = TRAINING.manifest.resources.model_copy(update=resources)
    return _Exercise(id=TRAINING.id, manifest=TRAINING.manifest.model_copy(update={"resources": res}))


def test_the_training_exercise_falls_back_so_a_cpu_only_deployment_takes_it():
    assert TRAINING.manifest.resources.cpu_fallback and TRAINING.manifest.resources.devices == 2
    check_capacity(exercise=TRAINING, max_devices=lambda: 0, max_world_size=2)


def test_a_strict_device_job_is_refused_naming_the_fix():
    strict = _with(device_kinds=("npu", "cuda"))
    with pytest.raises(Unsatisfiable) as refused:
        check_capacity(exercise=strict, max_devices=lambda: 1, max_world_size=2)
    said = str(refused.value)
    assert "needs 2 accelerator(s)" in said and "npu:0-1" in said
    check_capacity(exercise=strict, max_devices=lambda: 2, max_world_size=2)


def test_ranks_beyond_the_workers_are_refused_even_with_a_fallback():
    with pytest.raises(Unsatisfiable):
        check_capacity(exercise=TRAINING, max_devices=lambda: 0, max_world_size=1)
