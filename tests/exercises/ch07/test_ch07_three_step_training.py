"""ch07.three_step_training: the graded expectations agree with the lab trainer's config and torchtitan's LR
schedule, without running a training (the catalogue-wide notebook test runs it)."""
from __future__ import annotations

import pytest

from grading.exercise import Catalogue

EX = Catalogue().get("ch07.three_step_training")
REF = EX.reference()["checks"]
train = pytest.importorskip("exercises.lab.train", reason="the lab trainer needs the training extra")


def test_expected_config_is_a_valid_lab_config_matching_the_course():
    expected = REF["config"]["expected"]
    cfg = train.resolve_config(dict(expected))  # raises on unknown fields or invalid combinations
    assert (cfg.steps, cfg.save_freq, cfg.test_freq) == (3, -1, -1)  # TOTAL_TRAINING_STEPS=3 SAVE_FREQ=-1 TEST_FREQ=-1
    assert (cfg.data_parallel_shard_size, cfg.context_parallel_size, cfg.world_size) == (2, 1, 2)
    assert cfg.reshard_after_forward == "always"
    assert (cfg.warmup_steps, cfg.decay_type, cfg.min_lr_factor) == (5, "cosine", 0.1)
    assert (cfg.kl_loss_coef, cfg.kl_loss_type, cfg.entropy_coeff) == (0.001, "low_var_kl", 0.004)
    assert EX.manifest.resources.world_size == cfg.world_size


def test_lr_expectation_is_torchtitans_schedule_times_the_profile_lr():
    lr_mod = pytest.importorskip("torchtitan.components.optimizer.lr_scheduler")
    import torch

    cfg = train.resolve_config(dict(REF["config"]["expected"]))
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=cfg.lr)
    sched = train.lr_scheduler_config(cfg).build(optimizers=[opt], training_steps=cfg.steps)
    factors = [sched.schedulers[0].lr_lambdas[0](step) for step in range(cfg.steps)]
    assert factors == pytest.approx([1 / 3, 2 / 3, 1.0])  # warmup 5 clamped to the 3 steps (COURSE.md §3)
    assert REF["trace_values"]["equals"]["actor/lr"] == pytest.approx([cfg.lr * f for f in factors], rel=1e-12)


def test_band_is_the_recorded_one_of_the_runs_device():
    """trace_band names the metrics of the band recorded per device (reference/traces/<profile>/band.json);
    the cpu-tiny band is recorded on the CPU in float32 and carries every one of them for the 3 steps."""
    from grading import bands
    from grading.exercise import REPO_ROOT

    recorded = REF["trace_band"]["recorded_band"]
    assert "band" not in REF["trace_band"]  # no inline copy that could go stale against band.json
    found = bands.load_bands(REPO_ROOT / "reference" / "traces")
    assert recorded["profiles"] == ["cpu-tiny"]  # the profile the notebook runs: another's band never stands in
    cpu = bands.pick_band(found, profile="cpu-tiny", kind="cpu", dtype="float32")
    assert cpu is not None and cpu.profile == "cpu-tiny"
    for metric, limits in bands.band_spec(cpu, recorded["metrics"]).items():
        assert len(limits["lower"]) == len(limits["upper"]) == 3, metric
        assert all(lo < hi for lo, hi in zip(limits["lower"], limits["upper"], strict=True)), metric


NEUTRAL = {"save_freq", "reshard_after_forward", "val_before_train"}
# The FSDP script's entropy_coeff (0.002 for 0.004) moves a 3-step run's metrics by less than the trace checks'
# tolerances: mistake fsdp_entropy loses only config and run_setup, and its declared score (9.2) is graded in a
# real kernel by tests/exercises/test_exercise_notebooks.py, which fails if a trace check starts catching it.
NEUTRAL |= {"entropy_coeff"}
# Settings that change the metrics, with the trace checks a mistake changing one must declare failing.
TRAJECTORY = {"warmup_steps": {"trace_values"}, "steps": {"trace_shape", "trace_values", "trace_band"}, "lr": {"trace_band", "trace_values"}}


def test_mistakes_declare_the_trace_checks_their_settings_change():
    """A mistake's declared score assumes the trace checks it does not name still pass: save_freq, the
    reshard policy and the validation before training (each game has its own sampling seed) do not change
    the maths of a step, so the metrics stay those of the solution. A mistake that changes the warm-up,
    the number of steps or the learning rate changes the metrics and must name the trace checks that
    catch it (trace_values, trace_shape, trace_band)."""
    import nbformat

    from grading.exercise import REPO_ROOT

    expected = REF["config"]["expected"]
    seen = set()
    for path in sorted((REPO_ROOT / "tests/fixtures/notebooks" / EX.id).glob("mistake_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        ns: dict = {}
        exec(next(c.source for c in nb.cells if c.cell_type == "code" and c.source.startswith("config = {")), ns)
        config = ns["config"]
        diff = {k for k in (set(expected) | set(config)) - {"out_dir"} if config.get(k, "<unset>") != expected.get(k, "<unset>")}
        assert diff and diff <= NEUTRAL | set(TRAJECTORY), (path.name, diff)
        declared = {c for c in nb.metadata["titangrade"]["expect"]["feedback_contains"] if c.startswith("trace_")}
        needed = set().union(*(TRAJECTORY[k] for k in diff & set(TRAJECTORY)))
        assert declared == needed, (path.name, diff, declared)
        seen |= diff & set(TRAJECTORY)
    assert seen == set(TRAJECTORY)  # every trace check has a mistake that a setting slip makes it fail
