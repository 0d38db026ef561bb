"""Reference bands per profile, device kind and dtype (grading/bands.py): a run is compared with the band of
its profile recorded on its own device; a device with no recorded band leaves the band uncounted and says
so, never a CPU band. run.json is the learner's: claims that would skip the band fail it instead."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

from grading import bands, checks
from grading.checks import CheckContext
from grading.errors import GraderFault
from grading.exercise import REPO_ROOT, Catalogue
from grading.result import CellReport
from grading.scoring import score_checks, total
from grading.steps.execute import Execution

EX = Catalogue().get("ch07.three_step_training")
SPEC = EX.reference()["checks"]["trace_band"]
TRACES = REPO_ROOT / "reference" / "traces"
# Real lab artefacts: seed 1's cpu-tiny metrics as recorded, and a recorded lab run.json (cpu-long's, named
# cpu-tiny) with the dtype fields this lab version writes.
SEED_1 = [json.loads(line) for line in (TRACES / "cpu-tiny" / "seed_1.jsonl").read_text().splitlines()]
RUN_JSON = json.loads((TRACES / "cpu-long" / "run.json").read_text())


def run_answer(*, device="cpu", dtype="float32", shift=0.0, metrics=None):
    run = {**RUN_JSON, "profile": "cpu-tiny", "device": device}
    if dtype is not None:
        run["dtype"] = dtype
    else:
        run.pop("dtype", None)
    records = [{**r, "actor/entropy": r["actor/entropy"] + shift} for r in (metrics or SEED_1)]
    return {"metrics": records, "run": run, "files": ["metrics.jsonl", "run.json"]}


def judge(answer, spec=SPEC, *, lang="en", reference_dir=EX.reference_dir, granted="cpu"):
    ctx = CheckContext(
        lang=lang, name="trace_band", answer_name="result", reference_dir=reference_dir, device=granted
    )
    return checks.get("metric_trace")(answer, spec, ctx)


def test_cpu_run_is_graded_on_the_cpu_band_as_before():
    assert judge(run_answer()).fraction == 1.0
    out = judge(run_answer(shift=1.0))
    assert out.counted and out.fraction == 0.0 and "actor/entropy leaves the accepted band" in out.feedback


@pytest.mark.parametrize(
    ("lang", "said"),
    [
        ("en", "No reference band is recorded for cpu-tiny runs on cuda with float32"),
        ("zh", "尚未记录 cpu-tiny 在 cuda（float32）上运行的参考范围"),
    ],
)
def test_a_cuda_run_without_a_cuda_band_is_not_counted_and_says_so(lang, said):
    """Entropy far outside the CPU band: a silent CPU band would fail it; here it is simply not graded."""
    out = judge(run_answer(device="cuda", shift=5.0), lang=lang, granted="cuda")
    assert out.counted is False and said in out.feedback


def test_a_job_given_a_gpu_that_ran_on_its_cpu_is_held_to_the_cpu_band():
    assert judge(run_answer(device="cpu"), granted="cuda").fraction == 1.0
    assert judge(run_answer(device="cpu", shift=5.0), granted="cuda").fraction == 0.0


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        # a CPU job claiming a device it was not given, to land on a kind with no band
        (run_answer(device="npu", shift=5.0), "says the run used npu, but this grading was given cpu"),
        (run_answer(dtype=None, shift=5.0), "does not say the device and dtype"),
        (run_answer(device=None, shift=5.0), "does not say the device and dtype"),
        (run_answer(dtype="bfloat16", shift=5.0), "band for cpu is recorded in float32"),
    ],
)
def test_a_run_json_claim_that_would_skip_the_band_fails_it(answer, said):
    out = judge(answer)
    assert out.counted and out.fraction == 0.0 and said in out.feedback


def test_a_profile_outside_the_exercises_fails_the_band():
    answer = run_answer(shift=5.0)
    answer["run"]["profile"] = "cuda-small"
    out = judge(answer)
    assert out.counted and out.fraction == 0.0 and "names profile cuda-small" in out.feedback


def test_a_hostile_device_name_is_cut_short_in_the_feedback():
    out = judge(run_answer(device="x" * 100_000))
    assert out.counted and "x" * 32 in out.feedback and "x" * 33 not in out.feedback


def test_other_parts_of_the_check_still_count_when_the_band_is_missing():
    spec = {**SPEC, "steps": 3}
    out = judge(run_answer(device="npu"), spec=spec, granted="npu")
    assert out.counted and out.fraction == 1.0 and "runs on npu" in out.feedback
    out = judge(run_answer(device="npu", metrics=SEED_1[:2]), spec=spec, granted="npu")
    assert out.counted and out.fraction == 0.0 and "2 steps recorded" in out.feedback


def _recorder():
    path = REPO_ROOT / "scripts" / "record_reference_traces.py"
    spec = importlib.util.spec_from_file_location("record_reference_traces_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_band_is_picked_by_the_runs_device(tmp_path, monkeypatch):
    """A cpu-tiny band on cuda recorded by the real script (--reuse of seed traces standing in for a GPU's,
    with entropy 1.0 higher) lands in cpu-tiny/cuda-float32/: a cuda run is held to it, a cpu run to the
    CPU's."""
    recorder = _recorder()
    traces = tmp_path / "traces"
    shutil.copytree(TRACES / "cpu-tiny", traces / "cpu-tiny")
    gpu = traces / "cpu-tiny" / "cuda-float32"
    gpu.mkdir()
    for seed in (1, 2, 3, 4, 5):
        rows = [json.loads(x) for x in (TRACES / "cpu-tiny" / f"seed_{seed}.jsonl").read_text().splitlines()]
        shifted = "".join(json.dumps({**r, "actor/entropy": r["actor/entropy"] + 1.0}) + "\n" for r in rows)
        (gpu / f"seed_{seed}.jsonl").write_text(shifted)
    monkeypatch.setattr(recorder, "TRACES", traces)
    written = recorder.band([1, 2, 3, 4, 5], rerun=False, profile="cpu-tiny", device="cuda")
    assert written == gpu / "band.json"
    doc = json.loads(written.read_text())
    assert doc["device"] == {"kind": "cuda", "dtype": "float32", "rollout_dtype": "bfloat16"}
    assert doc["command"].startswith("python -m exercises.lab.train --profile cpu-tiny --steps 3")
    where = tmp_path / EX.reference_dir.name
    assert judge(run_answer(device="cuda", shift=1.0), reference_dir=where, granted="cuda").fraction == 1.0
    assert judge(run_answer(device="cuda"), reference_dir=where, granted="cuda").fraction == 0.0
    assert judge(run_answer(device="cpu"), reference_dir=where).fraction == 1.0
    assert judge(run_answer(device="cpu", shift=1.0), reference_dir=where).fraction == 0.0


def test_another_profiles_band_on_the_same_device_is_never_used(tmp_path):
    """cuda-small's band (another batch and length) must not stand in for a cpu-tiny run on cuda."""
    traces = tmp_path / "traces"
    shutil.copytree(TRACES / "cpu-tiny", traces / "cpu-tiny")
    doc = json.loads((TRACES / "cpu-tiny" / "band.json").read_text())
    doc.update(profile="cuda-small", device={"kind": "cuda", "dtype": "float32"})
    (traces / "cuda-small").mkdir()
    (traces / "cuda-small" / "band.json").write_text(json.dumps(doc))
    out = judge(run_answer(device="cuda", shift=5.0), reference_dir=tmp_path / "ch07.x", granted="cuda")
    assert out.counted is False and "No reference band is recorded for cpu-tiny runs on cuda" in out.feedback


def test_a_band_that_does_not_state_its_device_is_the_graders_fault(tmp_path):
    (tmp_path / "traces" / "old").mkdir(parents=True)
    doc = json.loads((TRACES / "cpu-tiny" / "band.json").read_text())
    doc.pop("device")
    (tmp_path / "traces" / "old" / "band.json").write_text(json.dumps(doc))
    with pytest.raises(GraderFault, match="stating its device"):
        judge(run_answer(), reference_dir=tmp_path / "ch07.x")


def test_two_bands_for_one_profile_and_device_are_the_graders_fault():
    one = bands.Band(profile="cpu-tiny", kind="cpu", dtype="float32", path=TRACES, doc={})
    two = bands.Band(profile="cpu-long", kind="cpu", dtype="float32", path=TRACES, doc={})
    assert bands.pick_band([one, two], profile="cpu-long", kind="cpu", dtype="float32") is two
    assert bands.pick_band([one, two], profile="other", kind="cpu", dtype="float32") is None
    with pytest.raises(GraderFault, match="several reference bands"):
        bands.pick_band([one, one], profile="cpu-tiny", kind="cpu", dtype="float32")


def _wire(value):
    if isinstance(value, list):
        return [_wire(v) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[k, _wire(v)] for k, v in value.items()]}
    return value


def test_an_uncounted_check_takes_the_rate_of_the_graded_ones():
    """Scored through score_checks on the real exercise: trace_band, not gradable on cuda, neither costs nor
    gifts points; the exercise keeps its maximum (the LMS line item's) and the check says why."""
    answers = {"result": _wire(run_answer(device="cuda", shift=5.0))}  # `config` missing: that check scores 0
    execution = Execution(
        cells=[CellReport(index=0, status="ok")], payloads={"answers": {"nonce": "n", "answers": answers, "calls": {}}}
    )
    results = {c.name: c for c in score_checks(EX, execution, device="cuda")}
    band = results["trace_band"]
    graded = [c for name, c in results.items() if name != "trace_band"]
    rate = sum(c.score for c in graded) / sum(c.max_score for c in graded)
    assert 0 < rate < 1  # config scored 0, the trace shape and values were right
    assert band.max_score == next(c.points for c in EX.manifest.checks if c.name == "trace_band")
    assert band.score == pytest.approx(band.max_score * rate, abs=1e-4) and not band.passed
    assert "No reference band is recorded for cpu-tiny runs on cuda" in band.feedback
    assert total(list(results.values())) == pytest.approx(EX.manifest.max_score * rate, abs=1e-3)
    cpu = {
        c.name: c
        for c in score_checks(
            EX,
            Execution(
                cells=[CellReport(index=0, status="ok")],
                payloads={"answers": {"nonce": "n", "answers": {"result": _wire(run_answer(shift=5.0))}, "calls": {}}},
            ),
        )
    }
    assert cpu["trace_band"].score == 0.0  # the same metrics on the CPU: its band says they are out
