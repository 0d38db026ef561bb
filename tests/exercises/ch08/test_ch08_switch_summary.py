"""ch08.switch_summary: the recorded artefacts are what the lab really produces (the DRY_RUN lines are the lab
recipe's lines, bash itself unquotes them to the same overrides, run.json is a finished 3-step run), and the hidden
step_of cases cover every key of the recorded 3-step line."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from exercises.lab import recipe
from grading.exercise import Catalogue

EX = Catalogue().get("ch08.switch_summary")
REF = EX.reference()["checks"]
RECORDED = EX.directory / "recorded"
ENVS = {
    "dry_run.txt": {},
    "dry_run_three_steps.txt": {"TOTAL_TRAINING_STEPS": "3", "SAVE_FREQ": "-1", "TEST_FREQ": "-1"},
}


@pytest.mark.parametrize("name", sorted(ENVS))
def test_recorded_lines_are_the_lab_recipes(name):
    settings = recipe.RecipeSettings.from_env(ENVS[name], recipe_dir="/root/wordle/torchtitan-npu")
    assert (RECORDED / name).read_text(encoding="utf-8") == recipe.build_command(settings).shell_line() + "\n"


@pytest.mark.parametrize("name", sorted(ENVS))
def test_bash_unquotes_the_lines_as_shlex_does(name):
    line = (RECORDED / name).read_text(encoding="utf-8")
    out = subprocess.run(
        ["bash", "-c", 'eval "set -- $1"; printf "%s\\0" "$@"', "_", line], check=True, capture_output=True, text=True
    ).stdout
    assert out.split("\0")[:-1] == shlex.split(line)


def test_recorded_run_is_a_finished_three_step_torchtitan_run():
    run = json.loads((RECORDED / "run.json").read_text(encoding="utf-8"))
    assert (run["model_engine"], run["strategy"], run["total_training_steps"], run["status"]) == (
        "torchtitan",
        "fsdp2",
        3,
        "finished",
    )
    assert (run["config"]["save_freq"], run["config"]["test_freq"]) == (-1, -1)
    assert run["parallel"]["data_parallel_shard_size"] == 2 and run["parallel"]["context_parallel_size"] == 1


def test_step_of_cases_cover_every_recorded_key():
    line = (RECORDED / "dry_run_three_steps.txt").read_text(encoding="utf-8")
    keys = {word.split("=", 1)[0] for word in shlex.split(line) if "=" in word}
    graded = {call["args"][0] for call in REF["step_of"]["calls"]}
    assert keys <= graded
    steps = {call["expect"] for call in REF["step_of"]["calls"]}
    assert steps == {"keep", "backend", "mapping", "npu_features", "validation"}  # no key is call_chain
