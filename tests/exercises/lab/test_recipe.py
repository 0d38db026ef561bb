"""Profile npu-qwen3-1.7b: every override, env, guards, DRY_RUN quoting and the launch-to-metrics path.

No NPU exists here: the visible-NPU count is injected (a hardware fake), and the launch test replays
a hand-written log through a stand-in entry point instead of verl.
"""

import importlib.util
import io
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from exercises.lab.recipe import (
    RECIPE_ENV,
    RUNTIME_SOURCES,
    RecipeGuardError,
    RecipeSettings,
    bash_quote,
    build_command,
    check_guards,
    launch,
    run_profile,
)

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
VERL_YAML = Path(yaml.__file__).parents[1] / "verl" / "trainer" / "config" / "_generated_ppo_torchtitan_trainer.yaml"

EXPECTED = {
    "algorithm.adv_estimator": "grpo", "algorithm.use_kl_in_reward": "False", "algorithm.kl_ctrl.kl_coef": "0",
    "data.seed": "42", "data.return_raw_chat": "True", "data.train_batch_size": "128",
    "data.max_prompt_length": "1024", "data.max_response_length": "4096",
    "data.filter_overlong_prompts": "True", "data.truncation": "error",
    "model_engine": "torchtitan",
    "actor_rollout_ref.model.use_remove_padding": "True",
    "actor_rollout_ref.model.enable_gradient_checkpointing": "True",
    "actor_rollout_ref.actor.use_torch_compile": "False",
    "actor_rollout_ref.actor.use_kl_loss": "True", "actor_rollout_ref.actor.kl_loss_coef": "0.001",
    "actor_rollout_ref.actor.kl_loss_type": "low_var_kl", "actor_rollout_ref.actor.entropy_coeff": "0.004",
    "actor_rollout_ref.actor.optim.lr": "1e-6", "actor_rollout_ref.actor.optim.decay_type": "cosine",
    "actor_rollout_ref.actor.optim.min_lr_factor": "0.1", "actor_rollout_ref.actor.optim.lr_warmup_steps": "5",
    "actor_rollout_ref.actor.use_dynamic_bsz": "True", "actor_rollout_ref.actor.ppo_mini_batch_size": "32",
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": "5120",
    "actor_rollout_ref.actor.torchtitan.param_offload": "True",
    "actor_rollout_ref.actor.torchtitan.optimizer_offload": "True",
    "actor_rollout_ref.actor.torchtitan.reshard_after_forward": "always",
    "actor_rollout_ref.actor.torchtitan.forward_prefetch": "False",
    "actor_rollout_ref.actor.torchtitan.use_torch_compile": "False",
    "actor_rollout_ref.actor.torchtitan.data_parallel_replicate_size": "1",
    "actor_rollout_ref.actor.torchtitan.data_parallel_shard_size": "2",
    "actor_rollout_ref.actor.torchtitan.tensor_parallel_size": "1",
    "actor_rollout_ref.actor.torchtitan.expert_parallel_size": "1",
    "+actor_rollout_ref.actor.torchtitan.expert_tensor_parallel_size": "1",
    "actor_rollout_ref.actor.torchtitan.pipeline_parallel_size": "1",
    "actor_rollout_ref.actor.torchtitan.context_parallel_size": "1",
    "actor_rollout_ref.actor.torchtitan.attn_type": "varlen",
    "actor_rollout_ref.actor.torchtitan.max_seq_len": "5120",
    "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu": "20480",
    "actor_rollout_ref.ref.torchtitan.param_offload": "True",
    "actor_rollout_ref.ref.torchtitan.use_torch_compile": "False",
    "actor_rollout_ref.ref.torchtitan.max_seq_len": "5120",
    "actor_rollout_ref.rollout.name": "vllm", "actor_rollout_ref.rollout.mode": "async",
    "actor_rollout_ref.rollout.tensor_model_parallel_size": "2",
    "actor_rollout_ref.rollout.data_parallel_size": "1", "actor_rollout_ref.rollout.expert_parallel_size": "1",
    "actor_rollout_ref.rollout.pipeline_model_parallel_size": "1",
    "actor_rollout_ref.rollout.enforce_eager": "True", "actor_rollout_ref.rollout.max_model_len": "5120",
    "actor_rollout_ref.rollout.enable_chunked_prefill": "False",
    "actor_rollout_ref.rollout.gpu_memory_utilization": "0.70", "actor_rollout_ref.rollout.n": "8",
    "actor_rollout_ref.rollout.multi_turn.max_user_turns": "6",
    "actor_rollout_ref.rollout.multi_turn.max_assistant_turns": "6",
    "actor_rollout_ref.rollout.multi_turn.format": "hermes",
    "actor_rollout_ref.rollout.multi_turn.tokenization_sanity_check_mode": "disable",
    "actor_rollout_ref.rollout.agent.num_workers": "4",
    "actor_rollout_ref.rollout.agent.default_agent_loop": "wordle_agent",
    "actor_rollout_ref.rollout.val_kwargs.temperature": "0.7", "actor_rollout_ref.rollout.val_kwargs.n": "5",
    "actor_rollout_ref.rollout.val_kwargs.do_sample": "True",
    "trainer.use_legacy_worker_impl": "disable", "trainer.logger": "['console','tensorboard']",
    "trainer.project_name": "wordle_rl", "trainer.n_gpus_per_node": "2", "trainer.nnodes": "1",
    "trainer.device": "npu", "trainer.val_before_train": "True", "trainer.save_freq": "25",
    "trainer.test_freq": "5", "trainer.log_val_generations": "5", "trainer.resume_mode": "disable",
    "trainer.total_epochs": "5",
}
# Keys of the pinned verl (e9aa879) that verl 0.9.1's generated config no longer lists, or Hydra
# defaults-group choices rather than config fields.
NOT_IN_VERL_091_YAML = {"model_engine", "trainer.use_legacy_worker_impl"}


def settings(tmp_path=Path("/srv/recipe/torchtitan-npu"), **kw):
    return RecipeSettings(recipe_dir=tmp_path, model_path=tmp_path / "model", data_dir=tmp_path / "data", **kw)


def test_every_course_override_present_and_correct():
    got = build_command(settings()).override_map()
    for key, value in EXPECTED.items():
        assert got.get(key) == value, key
    assert got["data.train_files"] == "/srv/recipe/torchtitan-npu/data/wordle_train.parquet"
    assert got["data.val_files"] == "/srv/recipe/torchtitan-npu/data/wordle_test.parquet"
    assert got["actor_rollout_ref.model.path"] == "/srv/recipe/torchtitan-npu/model"
    assert "trainer.total_training_steps" not in got
    assert len(got) == len(build_command(settings()).overrides)  # no key given twice
    paths = {"data.train_files", "data.val_files", "actor_rollout_ref.model.path", "trainer.experiment_name",
             "custom_reward_function.path", "custom_reward_function.name",
             "actor_rollout_ref.rollout.agent.agent_loop_config_path"}
    assert set(got) == set(EXPECTED) | paths  # nothing unexpected either


def test_override_keys_exist_in_verl_config():
    config = yaml.safe_load(VERL_YAML.read_text())

    def has(path):
        node = config
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True

    for key in build_command(settings()).override_map():
        if key.startswith("+") or key in NOT_IN_VERL_091_YAML:
            assert not key.startswith("+") or not has(key[1:]), f"{key} exists; drop the '+'"
            continue
        assert has(key), f"{key} is not a verl config key"


def test_env_vars():
    assert build_command(settings()).env == {"TORCH_COMPILE_DISABLE": "1", "VLLM_USE_V1": "1",
                                             "TASK_QUEUE_ENABLE": "1", "HCCL_CONNECT_TIMEOUT": "3600"}


def test_total_training_steps_only_when_set_and_env_overrides():
    env = {"TOTAL_TRAINING_STEPS": "3", "SAVE_FREQ": "-1", "TEST_FREQ": "-1"}
    got = build_command(RecipeSettings.from_env(env, recipe_dir="/r")).override_map()
    assert got["trainer.total_training_steps"] == "3"
    assert (got["trainer.save_freq"], got["trainer.test_freq"]) == ("-1", "-1")
    assert "trainer.total_training_steps" not in build_command(RecipeSettings.from_env({}, recipe_dir="/r")).override_map()
    with pytest.raises(ValueError, match="TOTAL_TRAINING_STEPS='three' is not an integer"):
        RecipeSettings.from_env({"TOTAL_TRAINING_STEPS": "three"}, recipe_dir="/r")


def test_from_env_defaults_are_the_scripts_values():
    """With nothing set, from_env gives the dataclass defaults (a slotted class has no class-level defaults
    to read back: cls.experiment_name was once a member descriptor here)."""
    got = RecipeSettings.from_env({}, recipe_dir="/r")
    assert got == replace(got, nnodes=1, npus_per_node=2, fsdp_size=2, save_freq=25, test_freq=5,
                          experiment_name="qwen3_1.7b_wordle_torchtitan_npu", total_training_steps=None)
    assert build_command(got).override_map()["trainer.experiment_name"] == "qwen3_1.7b_wordle_torchtitan_npu"
    assert RecipeSettings.from_env({"EXPERIMENT_NAME": "mine"}, recipe_dir="/r").experiment_name == "mine"


@pytest.mark.parametrize("word", ["plain", "a b", "trainer.logger=['console','tensorboard']", "", "#x", "~/m",
                                  "x=~/m", "a:~b", "a~b", "$HOME", "semi;colon", "quote\"s", "back\\slash",
                                  "line\nbreak", "tab\tx", "ctl\x01x", "é-ok", "{a,b}", "1e-6", "x=0.70"])
def test_bash_quote_matches_bash_printf(word):
    out = subprocess.run(["bash", "-c", 'printf "%q" "$1"', "_", word], capture_output=True, text=True,
                         check=True, env={"LC_ALL": "C.UTF-8"})
    assert bash_quote(word) == out.stdout


def test_dry_run_line_round_trips_through_shlex(tmp_path):
    s = settings(tmp_path / "dir with space", total_training_steps=3, dry_run=True)
    cmd = build_command(s)
    line = cmd.shell_line()
    assert line.endswith(" ") and line.startswith("python3 -m verl.trainer.main_ppo ")
    assert tuple(shlex.split(line)) == cmd.argv
    assert "trainer.logger=\\[\\'console\\'\\,\\'tensorboard\\'\\]" in line


def make_checkout(root: Path) -> RecipeSettings:
    s = settings(root)
    for p in [s.venv, s.model_path, *(root / "runtime_sources" / n for n in RUNTIME_SOURCES)]:
        p.mkdir(parents=True, exist_ok=True)
    s.data_dir.mkdir()
    for name in ("wordle_train.parquet", "wordle_test.parquet"):
        (s.data_dir / name).write_bytes(b"")
    return s


def two_npus():  # hardware fake: what torch.npu.device_count() returns on the course's 2-NPU host
    return 2


def test_guards_pass_on_a_complete_checkout(tmp_path):
    check_guards(make_checkout(tmp_path), npu_count=two_npus)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nnodes": 2}, "exactly one node with two NPUs"),
        ({"npus_per_node": 4}, "exactly one node with two NPUs"),
        ({"fsdp_size": 1}, "TORCHTITAN_FSDP_SIZE must be 2"),
    ],
)
def test_topology_guards(tmp_path, change, message):
    s = make_checkout(tmp_path)
    with pytest.raises(RecipeGuardError, match=message):
        check_guards(replace(s, **change), npu_count=two_npus)


def test_visible_npu_guard(tmp_path):
    s = make_checkout(tmp_path)
    with pytest.raises(RecipeGuardError, match="Expected exactly two visible NPUs, got 1."):
        check_guards(s, npu_count=lambda: 1)


@pytest.mark.skipif(importlib.util.find_spec("torch_npu") is not None, reason="torch_npu present: not a CPU host")
def test_real_npu_probe_fails_cleanly_here(tmp_path):
    with pytest.raises(RecipeGuardError, match="got 0 \\(torch_npu failed to import"):
        check_guards(make_checkout(tmp_path))


def test_missing_paths_guard_names_them(tmp_path):
    s = make_checkout(tmp_path)
    (s.data_dir / "wordle_test.parquet").unlink()
    (tmp_path / "runtime_sources" / "verl").rmdir()
    with pytest.raises(RecipeGuardError, match=r"runtime_sources/verl .*val data"):
        check_guards(s, npu_count=two_npus)


def test_guards_run_before_dry_run(tmp_path):
    s = replace(make_checkout(tmp_path), dry_run=True)
    with pytest.raises(RecipeGuardError):
        run_profile(s, out_dir=tmp_path / "out", npu_count=lambda: 0)
    buf = io.StringIO()
    assert run_profile(s, out_dir=tmp_path / "out", npu_count=two_npus, stdout=buf) is None
    assert shlex.split(buf.getvalue()) == list(build_command(s).argv)
    assert not (tmp_path / "out").exists()


def test_launch_tees_log_and_writes_metrics(tmp_path):
    """Stand-in entry point: a python one-liner that prints a recorded log (verl cannot run here)."""
    cmd = build_command(settings(tmp_path, total_training_steps=3))
    replay = [sys.executable, "-c", "import sys, os; assert os.environ['HCCL_CONNECT_TIMEOUT'] == '3600'; "
              f"sys.stdout.write(open({str(LOGS / 'npu_qwen3_1.7b_tt_3steps.log')!r}).read())"]
    result = launch(cmd, out_dir=tmp_path / "out", entry=replay)
    assert result.returncode == 0
    assert result.parsed.total_training_steps == 3
    assert (tmp_path / "out" / "train.log").read_text() == (LOGS / "npu_qwen3_1.7b_tt_3steps.log").read_text()
    lines = result.metrics_path.read_text().splitlines()
    assert len(lines) == 4 and '"step": 3' in lines[-1]
