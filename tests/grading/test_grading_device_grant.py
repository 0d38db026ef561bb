"""A job given accelerators its node cannot use is the host's fault, never the learner's zero. Real kernel,
real course runtime: the grant is FAKE (cuda ids on a machine with no GPU), which is exactly the broken
node this stands for; the solution's own train.run refuses the device before any rank starts."""

from __future__ import annotations

import pytest

from grading.exercise import Catalogue
from grading.pipeline import _device_unusable, grade_notebook
from grading.result import CellReport, Status
from grading.sandbox import CPU_ONLY, DeviceGrant

TRAINING = Catalogue().get("ch07.three_step_training")


@pytest.mark.slow
def test_an_unusable_gpu_grant_is_not_gradable_not_a_zero(engine_sandbox):
    grant = DeviceGrant(kind="cuda", ids=(0, 1))
    result = grade_notebook(TRAINING.solution_path.read_bytes(), sandbox=engine_sandbox, devices=grant)
    assert result.status == Status.NOT_GRADABLE, (result.status, result.message, result.cells)
    assert "cuda devices [0, 1] given to this job cannot be used here" in result.message
    assert "torch.cuda sees no GPU" in result.message
    assert result.device == "cuda" and result.device_count == 2


def test_the_same_error_on_a_cpu_grant_is_the_learners():
    cells = [CellReport(index=3, status="error", message="cell 3 raised DeviceUnavailable: TITANGRADE_DEVICE=cuda")]
    assert _device_unusable(cells, CPU_ONLY) is None  # they asked for a device by name on a CPU job
    said = _device_unusable(cells, DeviceGrant(kind="npu", ids=(4, 5)))
    assert said is not None and said.startswith("the npu devices [4, 5] given to this job cannot be used here")
    other = [CellReport(index=0, status="error", message="cell 0 raised ValueError: x")]
    assert _device_unusable(other, DeviceGrant(kind="npu", ids=(0,))) is None
