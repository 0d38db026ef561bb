"""The trainer's shape and its command line: config -> per-rank trainer -> launcher, no import cycles,
one device -> backend map, and the tyro CLI over TrainConfig (parsed in-process; no rank starts here)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from exercises.lab import device, train
from exercises.lab.config import PROFILES, TrainConfig, resolve_config

LAB = Path(__file__).resolve().parents[3] / "exercises" / "lab"


def _lab_imports(path: Path) -> set[str]:
    """Every exercises.lab module this file imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("exercises.lab"):
            if node.module == "exercises.lab":
                found.update(f"exercises.lab.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("exercises.lab."))
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(LAB.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_lab_has_no_import_cycles():
    graph = {_module_name(p): _lab_imports(p) for p in LAB.rglob("*.py")}
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        if state.get(name) == "done":
            return
        assert state.get(name) != "open", f"import cycle: {' -> '.join([*trail, name])}"
        state[name] = "open"
        for target in sorted(graph.get(name, ())):
            visit(target, [*trail, name])
        state[name] = "done"

    for name in sorted(graph):
        visit(name, [])
    assert "exercises.lab.train" not in graph["exercises.lab.trainer"] | graph["exercises.lab.config"]
    assert "exercises.lab.trainer" not in graph["exercises.lab.config"]


def test_the_device_backend_map_has_one_home():
    """Only device.py spells out which process-group backend a device uses."""
    spelled = [p.name for p in LAB.rglob("*.py") if '"hccl"' in p.read_text() or "'hccl'" in p.read_text()]
    assert spelled == ["device.py"]
    assert device.BACKENDS == {"npu": "hccl", "cuda": "nccl", "cpu": "gloo"}


def test_public_names_stay_importable_from_train():
    """Notebooks and tests import these from exercises.lab.train."""
    assert train.TrainConfig is TrainConfig and train.PROFILES is PROFILES and train.resolve_config is resolve_config
    assert callable(train.run) and callable(train.lr_scheduler_config)


def test_no_flags_is_the_cpu_tiny_profile():
    assert train.parse_cli([]) == resolve_config({"profile": "cpu-tiny"})


def test_profile_gives_the_defaults_and_flags_override_them():
    config = train.parse_cli(["--steps", "7", "--profile", "cpu-long", "--out", "runs/x", "--lr-total-steps", "9"])
    expected = resolve_config({"profile": "cpu-long", "steps": 7, "out_dir": "runs/x", "lr_total_steps": 9})
    assert config == expected
    assert config.train_batch_size == PROFILES["cpu-long"]["train_batch_size"] != TrainConfig().train_batch_size
    assert train.parse_cli(["--out-dir=runs/y", "--lr-total-steps", "None"]).out_dir == "runs/y"


@pytest.mark.parametrize(
    ("word", "value"), [("false", False), ("0", False), ("no", False), ("True", True), ("yes", True), ("1", True)]
)
def test_booleans_take_a_value(word, value):
    assert train.parse_cli(["--console", word, "--param-offload", word]).console is value


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--console", "maybe"], "expected true or false, got 'maybe'"),
        (["--profile", "tpu-huge"], "invalid choice: 'tpu-huge'"),
        (["--ppo-mini-batch-size", "3"], "must be a multiple of ppo_mini_batch_size (3)"),
        (["--steps", "three"], "--steps"),
        (["--learning-rate", "1e-3"], "--learning-rate"),
    ],
)
def test_bad_command_lines_exit_2_naming_the_problem(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        train.parse_cli(argv)
    assert exc.value.code == 2
    err = capsys.readouterr()
    assert message in " ".join((err.err + err.out).split()).replace("│", "").replace("  ", " ")


def test_help_lists_every_field_with_its_docstring(capsys):
    with pytest.raises(SystemExit) as exc:
        train.parse_cli(["--help", "--profile", "cpu-long"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in ("--out", "--train-batch-size", "--console", "--reshard-after-forward", "--seed"):
        assert name in out
    assert "Rollouts per prompt" in out
