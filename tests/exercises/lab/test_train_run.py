"""The 2-rank CPU training run end to end: one shared 3-step run, a CLI rerun for determinism, a checkpointing run."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from exercises.lab import train
from exercises.lab.metrics import STEP_KEYS, deterministic_view
from exercises.lab.metrics_format import parse_console_lines

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One cpu-tiny 3-step run through `run()` (the notebook entry point)."""
    return train.run({"profile": "cpu-tiny", "steps": 3, "out_dir": str(tmp_path_factory.mktemp("tiny"))})


@pytest.fixture(scope="module")
def cli_rerun(tmp_path_factory):
    """The same run through `python -m exercises.lab.train`, console output captured."""
    out = tmp_path_factory.mktemp("cli")
    proc = subprocess.run(
        [sys.executable, "-m", "exercises.lab.train", "--profile", "cpu-tiny", "--steps", "3", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc.stdout


def test_three_steps_with_every_verl_metric_finite(tiny_run):
    records = tiny_run["metrics"]
    assert [r["step"] for r in records] == [1, 2, 3]
    assert [r["training/global_step"] for r in records] == [1, 2, 3]
    for record in records:
        missing = [k for k in STEP_KEYS if k not in record]
        assert not missing, f"missing metrics {missing}"
        bad = {k: v for k, v in record.items() if not math.isfinite(float(v))}
        assert not bad, f"non-finite metrics {bad}"
        assert 0.0 <= record["critic/score/min"] <= record["critic/score/mean"] <= record["critic/score/max"] <= 2.2
        assert 1 <= record["num_turns/min"] <= record["num_turns/max"] <= 6


def test_kl_loss_is_zero_on_the_first_step_and_then_moves(tiny_run):
    records = tiny_run["metrics"]
    assert records[0]["actor/kl_loss"] == 0.0  # actor == reference before any update
    assert records[0]["actor/ppo_kl"] == 0.0  # on-policy: old log-probs come from the same weights
    assert records[-1]["actor/kl_loss"] > 0.0


def test_lr_follows_torchtitans_clamped_warmup(tiny_run):
    """warmup 5 > total 3 is clamped to 3: factors 1/3, 2/3, 1 (COURSE.md section 10 item 11)."""
    config = train.resolve_config({"profile": "cpu-tiny"})
    lrs = [r["actor/lr"] / config.lr for r in tiny_run["metrics"]]
    assert lrs == pytest.approx([1 / 3, 2 / 3, 1.0], rel=1e-9)
    assert lrs == pytest.approx(_torchtitan_factors(config, total=3, steps=3), rel=1e-12)


def _torchtitan_factors(config, *, total: int, steps: int) -> list[float]:
    import torch
    from torchtitan.components.optimizer import default_adamw

    model = torch.nn.Linear(1, 1)
    opt_cfg = default_adamw(lr=1.0)
    opt_cfg.implementation = "for-loop"
    opts = opt_cfg.build(model_parts=[model])
    schedulers = train.lr_scheduler_config(config).build(optimizers=opts, training_steps=total)
    factors = []
    for _ in range(steps):
        factors.append(schedulers.schedulers[0].get_last_lr()[0])
        opts.step()
        schedulers.step()
    return factors


def test_lr_factors_of_the_course_schedule():
    """total 75, warmup 5: steps 0, 4, 5, 6, 40, 74 -> 0.2, 1.0, 1.0, 0.9995, 0.55, 0.1005."""
    config = train.resolve_config({"profile": "cpu-tiny"})
    factors = _torchtitan_factors(config, total=75, steps=75)
    got = [factors[i] for i in (0, 4, 5, 6, 40, 74)]
    assert got == pytest.approx([0.2, 1.0, 1.0, 0.9995, 0.55, 0.1005], abs=1e-4)


def test_run_json_records_the_torchtitan_fsdp2_setup(tiny_run):
    info = tiny_run["run"]
    assert info["model_engine"] == "torchtitan"
    assert info["params_are_dtensors"] is True
    assert info["world_size"] == 2 and info["device"] == "cpu" and info["backend"] == "gloo"
    assert (info["dtype"], info["rollout_dtype"]) == ("float32", "float32")  # the band's key (grading/bands.py)
    assert info["parallel"]["data_parallel_shard_size"] == 2 and info["parallel"]["context_parallel_size"] == 1
    assert info["mesh"]["world_mesh"]["shape"] == [2]
    assert info["mesh"]["fsdp_mesh"] == {"shape": [2], "dim_names": ["fsdp"]}
    assert set(info["versions"]) == {"torch", "torchtitan", "verl"}
    assert info["seeds"]["seed"] == 1 and info["status"] == "finished"
    assert len(info["peak_rss_mb_per_rank"]) == 2


def test_no_checkpoint_when_save_freq_is_minus_one(tiny_run):
    out = Path(tiny_run["out_dir"])
    assert (out / "metrics.jsonl").is_file() and (out / "run.json").is_file()
    assert not (out / "checkpoints").exists()


def test_cli_rerun_is_identical_apart_from_timings(tiny_run, cli_rerun):
    out, stdout = cli_rerun
    rerun = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [deterministic_view(r) for r in rerun] == [deterministic_view(r) for r in tiny_run["metrics"]]


def test_console_lines_are_verl_format(tiny_run, cli_rerun):
    _, stdout = cli_rerun
    assert "Total training steps: 3" in stdout
    parsed = parse_console_lines(stdout)
    assert [p["step"] for p in parsed] == [1, 2, 3]
    assert parsed[0]["actor/pg_loss"] == pytest.approx(tiny_run["metrics"][0]["actor/pg_loss"], rel=1e-12)


def test_save_freq_writes_an_hf_checkpoint_that_loads_through_from_hf(tmp_path):
    """Also exercises CPU offload (unpinned), reshard_after_forward=never and validation on the test words."""
    from exercises.lab import checkpoint
    from exercises.lab.model import build_titan_model

    result = train.run(profile="cpu-tiny", steps=1, save_freq=1, train_batch_size=2, n=2, ppo_mini_batch_size=2,
                       param_offload=True, optimizer_offload=True, reshard_after_forward="never",
                       test_freq=1, val_before_train=True, out_dir=str(tmp_path), console=False)
    assert 0.0 <= result["metrics"][0]["val-core/wordle/reward/mean@1"] <= 2.2
    assert "val-aux/wordle/format/mean@1" in result["run"]["initial_validation"]
    parallel = result["run"]["parallel"]
    assert parallel["param_offload"] is True and parallel["reshard_after_forward"] == "never"
    assert result["run"]["params_are_dtensors"] is True
    target = tmp_path / "checkpoints" / "global_step_1"
    assert (target / "model.safetensors").is_file() and (target / "tokenizer.json").is_file()
    dims = checkpoint.dims_of_checkpoint(target)
    model = build_titan_model(dims)
    assert checkpoint.load_hf_into_model(model, target, checkpoint.state_dict_adapter(dims)) > 0
    shipped = checkpoint.load_hf_state_dict(checkpoint.SHIPPED_CHECKPOINT)
    saved = checkpoint.load_hf_state_dict(target)
    assert set(saved) == set(shipped)
    assert any(not (saved[k] == shipped[k]).all() for k in saved), "one GRPO step must move the weights"
    assert result["metrics"][0]["step"] == 1


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"data_parallel_shard_size": 2, "world_size": 4}, "Invalid parallel dims"),
        ({"data_parallel_shard_size": 1, "context_parallel_size": 1}, "Invalid parallel dims"),
        ({"ppo_mini_batch_size": 3}, "multiple of ppo_mini_batch_size"),
        ({"reshard_after_forward": "sometimes"}, "reshard_after_forward"),
        ({"steps": 0}, "steps must be a positive integer"),
        ({"spmd_backend": "spmd_types"}, "spmd_backend"),
        ({"learning_rate": 1e-3}, "unknown TrainConfig field"),
        ({"profile": "tpu-huge"}, "unknown profile"),
    ],
)
def test_invalid_config_raises_before_any_rank_starts(overrides, message):
    with pytest.raises(ValueError, match=message):
        train.resolve_config({"profile": "cpu-tiny", **overrides})


def test_seed_one_run_reproduces_the_recorded_reference_trace(tiny_run):
    """Guards reference/traces/cpu-tiny (what the ch07 trend checks compare against) against drift."""
    traces = ROOT / "reference" / "traces" / "cpu-tiny"
    band = json.loads((traces / "band.json").read_text())
    recorded = [json.loads(line) for line in (traces / "seed_1.jsonl").read_text().splitlines()]
    assert band["format"] == "titangrade.metric_band/1" and band["seeds"][0] == 1
    assert band["device"] == {k: tiny_run["run"][f] for k, f in
                              (("kind", "device"), ("dtype", "dtype"), ("rollout_dtype", "rollout_dtype"))}
    for record, ref in zip(tiny_run["metrics"], recorded, strict=True):
        for name in band["metrics"]:
            assert record[name] == pytest.approx(ref[name], rel=1e-6, abs=1e-9), (record["step"], name)
            limits = band["metrics"][name][str(record["step"])]
            assert limits["lo"] <= record[name] <= limits["hi"], (record["step"], name)


def test_ranks_die_with_their_launcher(tmp_path):
    """A killed launcher (a timed-out grading kernel) must not leave training ranks running.

    torch's spawn only arranges SIGINT on parent death, which does nothing when SIGINT is ignored (background
    jobs, some kernel launchers); the launcher here ignores SIGINT so only the ranks' own SIGKILL request helps.
    """
    import signal
    import time

    log = (tmp_path / "launcher.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "exercises.lab.train", "--profile", "cpu-tiny", "--steps", "40", "--out", str(tmp_path),
         "--console", "false"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "OMP_NUM_THREADS": "1"}, preexec_fn=_ignore_interrupts,
    )
    try:
        deadline = time.time() + 120
        while not (tmp_path / "run.json").exists() and time.time() < deadline:  # ranks are up and training
            time.sleep(0.5)
        assert (tmp_path / "run.json").exists(), "the ranks never started"
        children = [int(pid) for task in Path(f"/proc/{proc.pid}/task").iterdir()
                    for pid in (task / "children").read_text().split()]
        assert len(children) >= 2
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.time() + 8
    alive = children
    while alive and time.time() < deadline:
        time.sleep(0.5)
        alive = [pid for pid in children if _running(pid)]
    for pid in alive:  # do not leak them into the rest of the session
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"ranks {alive} outlived their launcher"


def _ignore_interrupts() -> None:
    """What `nohup cmd &` does to a launcher: SIGINT and SIGHUP ignored (inherited by the ranks)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
