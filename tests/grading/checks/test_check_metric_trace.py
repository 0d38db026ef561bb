"""metric_trace: each sub-check earns its share and feedback names the failing parts."""
import json

import pytest

from grading import checks
from grading.checks import CheckContext
from grading.codec import MISSING, Raised


def run_answer(losses, lr=0.1, files=("metrics.jsonl", "run.json"), run=None):
    metrics = [{"step": i + 1, "loss": v, "lr": lr} for i, v in enumerate(losses)]
    return {"metrics": metrics, "run": run or {"model_engine": "torchtitan", "total_steps": len(losses)},
            "files": list(files)}


FULL = {
    "metrics": ["loss", "lr"], "steps": 3, "finite": True,
    "equals": {"lr": [0.1, 0.1, 0.1]},
    "band": {"loss": {"lower": [15, 10, 6], "upper": [17, 11, 7]}},
    "monotone": {"loss": "decreasing"},
    "bounded": {"lr": {"min": 0, "max": 1}},
    "run": {"model_engine": "torchtitan", "total_steps": 3},
    "absent_files": ["checkpoints*"],
    "present_files": ["metrics.jsonl"],
}


def judge(answer, spec=FULL, ctx=None):
    return checks.get("metric_trace")(answer, spec, ctx or CheckContext(lang="en", answer_name="run_dir"))


def test_good_run_gets_everything():
    out = judge(run_answer([16.0, 10.24, 6.55]))
    assert out.fraction == 1 and out.feedback == ""


def test_each_failing_part_costs_its_share_and_is_named():
    parts = 10  # present, steps, finite, equals, band, monotone, bounded, run, absent_files, present_files
    out = judge(run_answer([16.0, 10.24, 6.55], files=["metrics.jsonl", "checkpoints/global_step_3/x.pt"]))
    assert out.fraction == pytest.approx((parts - 1) / parts)
    assert "absent_files" in out.feedback and "checkpoints/global_step_3" in out.feedback
    wrong_engine = judge(run_answer([16.0, 10.24, 6.55], run={"model_engine": "dp", "total_steps": 3}))
    assert wrong_engine.fraction == pytest.approx((parts - 1) / parts) and "model_engine" in wrong_engine.feedback


def test_nan_loss_fails_finite_band_and_monotone_without_quoting_the_band():
    out = judge(run_answer([16.0, float("nan"), 6.55]))
    for part in ("finite", "band", "monotone"):
        assert f"{part}:" in out.feedback
    assert "15" not in out.feedback and "17" not in out.feedback
    assert out.fraction == pytest.approx(7 / 10)


def test_too_few_steps_and_missing_metric():
    answer = run_answer([16.0, 10.24])
    answer["metrics"][1].pop("lr")
    out = judge(answer)
    assert "steps: 2 steps recorded, expected 3" in out.feedback
    assert "lr missing at 1 of 2 steps" in out.feedback
    assert out.fraction < 0.6


def test_equals_tolerance_and_weights():
    spec = {"metrics": ["loss"], "finite": False, "equals": {"loss": {"values": [1.0, 0.5], "rtol": 1e-3}},
            "weights": {"present": 1, "equals": 3}}
    assert judge({"metrics": [{"step": 1, "loss": 1.0004}, {"step": 2, "loss": 0.5}]}, spec).fraction == 1
    assert judge({"metrics": [{"step": 1, "loss": 1.1}, {"step": 2, "loss": 0.5}]}, spec).fraction == pytest.approx(0.25)


def test_records_are_ordered_by_step():
    spec = {"metrics": ["loss"], "monotone": {"loss": "decreasing"}}
    shuffled = {"metrics": [{"step": 2, "loss": 2.0}, {"step": 1, "loss": 3.0}, {"step": 3, "loss": 1.0}]}
    assert judge(shuffled, spec).fraction == 1


def test_relative_band_around_a_named_reference_trace(tmp_path):
    (tmp_path / "ref.json").write_text(json.dumps({"loss": [10.0, 8.0]}))
    spec = {"band": {"loss": {"reference": "ref", "rel": 0.1}}}
    ctx = CheckContext(lang="en", reference_dir=tmp_path)
    assert judge({"metrics": [{"step": 1, "loss": 10.9}, {"step": 2, "loss": 7.3}]}, spec, ctx).fraction == 1
    out = judge({"metrics": [{"step": 1, "loss": 11.5}, {"step": 2, "loss": 7.3}]}, spec, ctx)
    assert out.fraction == 0 and "steps 0" in out.feedback
    inline = {"band": {"loss": {"reference": [10.0, 8.0], "rel": 0.0, "abs": 0.5}}}
    assert judge({"metrics": [{"step": 1, "loss": 10.4}, {"step": 2, "loss": 8.4}]}, inline).fraction == 1


def test_no_run_at_all():
    assert judge(MISSING).fraction == 0
    out = judge(Raised("FileNotFoundError", "run directory run not found"))
    assert out.fraction == 0 and "run directory run not found" in out.feedback


def test_zh_feedback_names_parts():
    out = judge(run_answer([16.0, 10.24, 6.55], lr=2.0), ctx=CheckContext(lang="zh"))
    assert "未通过的部分" in out.feedback and "bounded" in out.feedback


def test_a_band_whose_bounds_disagree_in_length_is_a_reference_fault_not_a_lenient_check():
    """lower has 3 steps, upper 2: zipping them would leave step 3 unchecked. The grader refuses the spec."""
    from grading.errors import GraderFault

    spec = {"band": {"loss": {"lower": [15, 10, 6], "upper": [17, 11]}}}
    with pytest.raises(GraderFault, match="lower has 3 steps but upper has 2") as caught:
        judge(run_answer([16, 10.5, 99]), spec)
    assert caught.value.retryable is False


def test_a_band_naming_a_trace_without_a_reference_directory_is_a_reference_fault():
    from grading.errors import GraderFault

    with pytest.raises(GraderFault, match="no reference directory"):
        judge(run_answer([10.0, 8.0]), {"band": {"loss": {"reference": "ref", "rel": 0.1}}})
