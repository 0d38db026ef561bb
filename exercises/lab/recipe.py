"""Profile ``npu-qwen3-1.7b``: launch the real recipe (verl ``main_ppo`` with ``model_engine=torchtitan``).

A Python rendering of the recipe's ``run_qwen3_1.7b_wordle_torchtitan_npu.sh``: the guards (run before
DRY_RUN, as in the script), the override list of COURSE.md sections 1 and 3, the exported env vars,
DRY_RUN printing like bash ``printf '%q '``, and the launch, whose console log becomes metrics records.

Unverified here (no NPU, CANN, vLLM-Ascend or the recipe checkout on these machines): the launch
itself and the log text of a real run (tests use hand-written logs in verl's documented format).
Reconstructed rather than read from the script: the env-var names MODEL_PATH, DATA_DIR, NNODES,
NPUS_PER_NODE and EXPERIMENT_NAME, the default experiment name, the ``runtime_sources`` entries, the
``custom_reward_function`` wiring and the order of the overrides.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from exercises.lab.metrics_format import ParsedLog, parse_log, write_metrics_jsonl

PROFILE = "npu-qwen3-1.7b"
ENTRY = ("python3", "-m", "verl.trainer.main_ppo")
RECIPE_ENV = {
    "TORCH_COMPILE_DISABLE": "1",
    "VLLM_USE_V1": "1",
    "TASK_QUEUE_ENABLE": "1",
    "HCCL_CONNECT_TIMEOUT": "3600",
}
ACTOR_TORCHTITAN = (
    ("param_offload", "True"),
    ("optimizer_offload", "True"),
    ("reshard_after_forward", "always"),
    ("forward_prefetch", "False"),
    ("use_torch_compile", "False"),
    ("data_parallel_replicate_size", "1"),
    ("data_parallel_shard_size", "2"),
    ("tensor_parallel_size", "1"),
    ("expert_parallel_size", "1"),
    ("+expert_tensor_parallel_size", "1"),  # '+': the yaml lacks the key, the dataclass has it
    ("pipeline_parallel_size", "1"),
    ("context_parallel_size", "1"),
    ("attn_type", "varlen"),
    ("max_seq_len", "5120"),
)
REF_TORCHTITAN = (("param_offload", "True"), ("use_torch_compile", "False"), ("max_seq_len", "5120"))
DEFAULT_EXPERIMENT_NAME = "qwen3_1.7b_wordle_torchtitan_npu"
RUNTIME_SOURCES = ("verl", "torchtitan", "torchtitan-npu", "vllm", "vllm-ascend")


class RecipeGuardError(RuntimeError):
    """A precondition of the recipe script failed; the message is the script's, plus the fix."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecipeSettings:
    """Everything the script reads from its environment and its directory layout."""

    recipe_dir: Path  # the recipe's torchtitan-npu/ directory, the script's working directory
    model_path: Path  # the Qwen3-1.7B-Wordle-SFT HF checkpoint
    data_dir: Path  # holds wordle_train.parquet and wordle_test.parquet
    nnodes: int = 1
    npus_per_node: int = 2
    fsdp_size: int = 2  # TORCHTITAN_FSDP_SIZE
    total_training_steps: int | None = None
    save_freq: int = 25
    test_freq: int = 5
    experiment_name: str = DEFAULT_EXPERIMENT_NAME
    dry_run: bool = False

    @property
    def venv(self) -> Path:
        return self.recipe_dir / ".venv"

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, recipe_dir: str | Path) -> RecipeSettings:
        """Read the script's variables (TOTAL_TRAINING_STEPS, SAVE_FREQ, TEST_FREQ, DRY_RUN, ...)."""
        recipe_dir = Path(recipe_dir)

        def optional_integer(name: str) -> int | None:
            raw = env.get(name, "").strip()
            if not raw:
                return None
            try:
                return int(raw)
            except ValueError:
                raise ValueError(f"{name}={raw!r} is not an integer; set it to a whole number or unset it") from None

        def integer(name: str, default: int) -> int:
            value = optional_integer(name)
            return default if value is None else value

        return cls(
            recipe_dir=recipe_dir,
            model_path=Path(env.get("MODEL_PATH", str(recipe_dir / "models" / "Qwen3-1.7B-Wordle-SFT"))),
            data_dir=Path(env.get("DATA_DIR", str(recipe_dir / "data"))),
            nnodes=integer("NNODES", 1),
            npus_per_node=integer("NPUS_PER_NODE", 2),
            fsdp_size=integer("TORCHTITAN_FSDP_SIZE", 2),
            total_training_steps=optional_integer("TOTAL_TRAINING_STEPS"),
            save_freq=integer("SAVE_FREQ", 25),
            test_freq=integer("TEST_FREQ", 5),
            experiment_name=env.get("EXPERIMENT_NAME", "") or DEFAULT_EXPERIMENT_NAME,
            dry_run=env.get("DRY_RUN", "0").strip() == "1",
        )


def bash_quote(arg: str) -> str:
    """One word as bash's ``printf '%q'`` writes it (bash 5: backslashes, or $'...' for control chars)."""
    if arg == "":
        return "''"
    if any(ord(c) < 32 or ord(c) == 127 for c in arg):
        named = {
            "\a": "\\a",
            "\b": "\\b",
            "\t": "\\t",
            "\n": "\\n",
            "\v": "\\v",
            "\f": "\\f",
            "\r": "\\r",
            "\x1b": "\\E",
            "'": "\\'",
            "\\": "\\\\",
        }
        body = "".join(named.get(c) or (f"\\{ord(c):03o}" if ord(c) < 32 or ord(c) == 127 else c) for c in arg)
        return f"$'{body}'"
    out = []
    for i, c in enumerate(arg):
        special_here = (c == "#" and i == 0) or (c == "~" and (i == 0 or arg[i - 1] in ":="))  # comment, home
        if c in " !\"$&'()*,;<>?[\\]^`{|}" or special_here:
            out.append("\\")
        out.append(c)
    return "".join(out)


@dataclass(frozen=True, slots=True)
class RecipeCommand:
    """The resolved launch: argv (entry + overrides), the overrides alone in order, and the exported env."""

    argv: tuple[str, ...]
    overrides: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path

    def override_map(self) -> dict[str, str]:
        """Overrides as {key: value}; a leading '+' (Hydra append) is kept in the key."""
        return dict(item.split("=", 1) for item in self.overrides)

    def shell_line(self) -> str:
        """What DRY_RUN prints: ``printf '%q ' "${CMD[@]}"`` (every word followed by one space)."""
        return "".join(bash_quote(word) + " " for word in self.argv)


def recipe_overrides(s: RecipeSettings) -> list[tuple[str, str]]:
    """The script's Hydra overrides, in order, as (key, value) pairs."""
    actor, ref, rollout = "actor_rollout_ref.actor", "actor_rollout_ref.ref", "actor_rollout_ref.rollout"
    pairs = [
        ("algorithm.adv_estimator", "grpo"),
        ("algorithm.use_kl_in_reward", "False"),
        ("algorithm.kl_ctrl.kl_coef", "0"),
        ("data.train_files", str(s.data_dir / "wordle_train.parquet")),
        ("data.val_files", str(s.data_dir / "wordle_test.parquet")),
        ("data.seed", "42"),
        ("data.return_raw_chat", "True"),
        ("data.train_batch_size", "128"),
        ("data.max_prompt_length", "1024"),
        ("data.max_response_length", "4096"),
        ("data.filter_overlong_prompts", "True"),
        ("data.truncation", "error"),
        ("custom_reward_function.path", str(s.recipe_dir / "wordle_reward.py")),
        ("custom_reward_function.name", "compute_score"),
        ("model_engine", "torchtitan"),
        ("actor_rollout_ref.model.path", str(s.model_path)),
        ("actor_rollout_ref.model.use_remove_padding", "True"),
        ("actor_rollout_ref.model.enable_gradient_checkpointing", "True"),
        (f"{actor}.use_torch_compile", "False"),
        (f"{actor}.use_kl_loss", "True"),
        (f"{actor}.kl_loss_coef", "0.001"),
        (f"{actor}.kl_loss_type", "low_var_kl"),
        (f"{actor}.entropy_coeff", "0.004"),
        (f"{actor}.optim.lr", "1e-6"),
        (f"{actor}.optim.decay_type", "cosine"),
        (f"{actor}.optim.min_lr_factor", "0.1"),
        (f"{actor}.optim.lr_warmup_steps", "5"),
        (f"{actor}.use_dynamic_bsz", "True"),
        (f"{actor}.ppo_mini_batch_size", "32"),
        (f"{actor}.ppo_max_token_len_per_gpu", "5120"),
    ]
    for key, value in ACTOR_TORCHTITAN:
        plus = "+" if key.startswith("+") else ""
        pairs.append((f"{plus}{actor}.torchtitan.{key.lstrip('+')}", value))
    pairs.append((f"{ref}.log_prob_max_token_len_per_gpu", "20480"))
    pairs += [(f"{ref}.torchtitan.{key}", value) for key, value in REF_TORCHTITAN]
    pairs += [
        (f"{rollout}.name", "vllm"),
        (f"{rollout}.mode", "async"),
        (f"{rollout}.tensor_model_parallel_size", "2"),
        (f"{rollout}.data_parallel_size", "1"),
        (f"{rollout}.expert_parallel_size", "1"),
        (f"{rollout}.pipeline_model_parallel_size", "1"),
        (f"{rollout}.enforce_eager", "True"),
        (f"{rollout}.max_model_len", "5120"),
        (f"{rollout}.enable_chunked_prefill", "False"),
        (f"{rollout}.gpu_memory_utilization", "0.70"),
        (f"{rollout}.n", "8"),
        (f"{rollout}.multi_turn.max_user_turns", "6"),
        (f"{rollout}.multi_turn.max_assistant_turns", "6"),
        (f"{rollout}.multi_turn.format", "hermes"),
        (f"{rollout}.multi_turn.tokenization_sanity_check_mode", "disable"),
        (f"{rollout}.agent.num_workers", "4"),
        (f"{rollout}.agent.default_agent_loop", "wordle_agent"),
        (f"{rollout}.agent.agent_loop_config_path", str(s.recipe_dir / "agent_loop.yaml")),
        (f"{rollout}.val_kwargs.temperature", "0.7"),
        (f"{rollout}.val_kwargs.n", "5"),
        (f"{rollout}.val_kwargs.do_sample", "True"),
        ("trainer.use_legacy_worker_impl", "disable"),
        ("trainer.logger", "['console','tensorboard']"),
        ("trainer.project_name", "wordle_rl"),
        ("trainer.experiment_name", s.experiment_name),
        ("trainer.n_gpus_per_node", str(s.npus_per_node)),
        ("trainer.nnodes", str(s.nnodes)),
        ("trainer.device", "npu"),
        ("trainer.val_before_train", "True"),
        ("trainer.save_freq", str(s.save_freq)),
        ("trainer.test_freq", str(s.test_freq)),
        ("trainer.log_val_generations", "5"),
        ("trainer.resume_mode", "disable"),
        ("trainer.total_epochs", "5"),
    ]
    if s.total_training_steps is not None:
        pairs.append(("trainer.total_training_steps", str(s.total_training_steps)))
    return pairs


def build_command(settings: RecipeSettings) -> RecipeCommand:
    """The resolved command for these settings (no checks; see ``check_guards``)."""
    overrides = tuple(f"{k}={v}" for k, v in recipe_overrides(settings))
    return RecipeCommand(argv=ENTRY + overrides, overrides=overrides, env=dict(RECIPE_ENV), cwd=settings.recipe_dir)


def _count_npus() -> int:
    import torch
    import torch_npu  # noqa: F401

    return int(torch.npu.device_count())


def check_guards(settings: RecipeSettings, *, npu_count: Callable[[], int] = _count_npus) -> None:
    """The script's guards, in its order; all run before DRY_RUN, so a DRY_RUN needs the NPU host too."""
    s = settings
    if s.nnodes != 1 or s.npus_per_node != 2:
        raise RecipeGuardError(
            f"This backend requires exactly one node with two NPUs. (NNODES={s.nnodes}, "
            f"NPUS_PER_NODE={s.npus_per_node}; set NNODES=1 NPUS_PER_NODE=2)"
        )
    if s.fsdp_size != 2:
        raise RecipeGuardError(
            f"TORCHTITAN_FSDP_SIZE must be 2 (got {s.fsdp_size}): the recipe shards over both NPUs; unset it"
        )
    try:
        visible = npu_count()
    except ImportError as exc:
        raise RecipeGuardError(
            f"Expected exactly two visible NPUs, got 0 (torch_npu failed to import: {exc}). "
            "Source CANN's set_env.sh and run setup_backend.sh"
        ) from exc
    if visible != 2:
        raise RecipeGuardError(
            f"Expected exactly two visible NPUs, got {visible}. Set ASCEND_RT_VISIBLE_DEVICES to two devices"
        )
    missing = [("venv", s.venv)]
    missing += [(f"runtime_sources/{name}", s.recipe_dir / "runtime_sources" / name) for name in RUNTIME_SOURCES]
    missing += [
        ("model", s.model_path),
        ("train data", s.data_dir / "wordle_train.parquet"),
        ("val data", s.data_dir / "wordle_test.parquet"),
    ]
    absent = [f"{what} ({path})" for what, path in missing if not path.exists()]
    if absent:
        raise RecipeGuardError(
            "Missing: " + ", ".join(absent) + ". Run setup_backend.sh, download the model and run prepare_data.py"
        )


@dataclass
class RunResult:
    """What a launch left: exit status, the parsed log, and where the log and metrics went."""

    returncode: int
    parsed: ParsedLog = field(default_factory=ParsedLog)
    log_path: Path | None = None
    metrics_path: Path | None = None


def launch(
    command: RecipeCommand,
    *,
    out_dir: str | Path,
    base_env: Mapping[str, str] | None = None,
    venv: Path | None = None,
    echo: TextIO | None = None,
    entry: Iterable[str] | None = None,
) -> RunResult:
    """Run the command, tee its output to ``out_dir/train.log``, parse it into ``out_dir/metrics.jsonl``.

    ``entry`` replaces ``python3 -m verl.trainer.main_ppo`` (the tests replay a recorded log with it).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ if base_env is None else base_env)
    env.update(command.env)
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    argv = [*(entry if entry is not None else command.argv[: len(ENTRY)]), *command.overrides]
    log_path, lines = out / "train.log", []
    with (
        open(log_path, "w", encoding="utf-8") as log,
        subprocess.Popen(
            argv, cwd=command.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        ) as proc,
    ):
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            lines.append(line)
            if echo is not None:
                echo.write(line)
    parsed = parse_log("".join(lines))
    metrics_path = out / "metrics.jsonl"
    write_metrics_jsonl(parsed.records, metrics_path)
    return RunResult(proc.returncode, parsed, log_path, metrics_path)


def run_profile(
    settings: RecipeSettings,
    *,
    out_dir: str | Path,
    npu_count: Callable[[], int] = _count_npus,
    stdout: TextIO = sys.stdout,
) -> RunResult | None:
    """The script end to end: guards, then DRY_RUN (print and return None) or the launch."""
    check_guards(settings, npu_count=npu_count)
    command = build_command(settings)
    if settings.dry_run:
        stdout.write(command.shell_line() + "\n")
        return None
    return launch(command, out_dir=out_dir, venv=settings.venv, echo=stdout)


def main(argv: list[str] | None = None) -> int:
    """``python -m exercises.lab.recipe RECIPE_DIR [OUT_DIR]``, configured by the script's env vars."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m exercises.lab.recipe RECIPE_DIR [OUT_DIR]", file=sys.stderr)
        return 2
    settings = RecipeSettings.from_env(os.environ, recipe_dir=args[0])
    try:
        result = run_profile(settings, out_dir=args[1] if len(args) > 1 else "outputs")
    except RecipeGuardError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0 if result is None else result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
