"""ch07.environment_preparation: the guard verdicts the exercise expects are the lab recipe's own guard messages
(exercises.lab.recipe.check_guards on the same settings), and every setup verdict is recognised by
ch08.troubleshooting's table of the course's error strings."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from exercises.lab import recipe
from grading.exercise import Catalogue

CATALOGUE = Catalogue()
REF = CATALOGUE.get("ch07.environment_preparation").reference()["checks"]


def _namespace(exercise_id: str) -> dict:
    """The solution notebook's code cells run in-process (grader side)."""
    ex, ns = CATALOGUE.get(exercise_id), {"__name__": "__solution__"}
    for cell in nbformat.read(ex.solution_path, as_version=4).cells:
        if cell.cell_type == "code":
            exec(compile(cell.source, str(ex.solution_path), "exec"), ns)
    return ns


def _env(report: dict) -> dict[str, str]:
    return dict(line.split("=", 1) for line in report["env"].splitlines() if re.match(r"^[A-Za-z_]\w*=", line))


def _visible(report: dict) -> int:
    env = _env(report)
    if "ASCEND_RT_VISIBLE_DEVICES" in env:
        return len(env["ASCEND_RT_VISIBLE_DEVICES"].split(","))
    return sum(bool(re.fullmatch(r"/dev/davinci\d+", line)) for line in report["ls /dev/davinci*"].splitlines())


@pytest.mark.parametrize("call", REF["guard_verdict"]["calls"], ids=range(len(REF["guard_verdict"]["calls"])))
def test_guard_verdicts_are_the_lab_recipes_messages(call, tmp_path: Path):
    report, expected = call["args"][0], call["expect"]
    env = _env(report)
    settings = recipe.RecipeSettings(
        recipe_dir=tmp_path,
        model_path=tmp_path / "model",
        data_dir=tmp_path / "data",
        nnodes=int(env.get("NNODES", "1")),
        npus_per_node=int(env.get("NPUS_PER_NODE", "2")),
    )
    with pytest.raises(recipe.RecipeGuardError) as err:
        recipe.check_guards(settings, npu_count=lambda: _visible(report))
    if expected is None:  # both guards pass; the next guard (files) is the one that fails in an empty directory
        assert str(err.value).startswith("Missing:")
    else:
        assert str(err.value).startswith(expected)


def test_setup_verdicts_are_in_the_troubleshooting_table():
    classify = _namespace("ch08.troubleshooting")["classify"]
    kinds = {
        "uv 0.12.0 is required": "uv_version",
        "CANN set_env.sh was not found.": "cann_missing",
        "NNAL/ATB is required": "atb_missing",
    }
    seen = set()
    for call in REF["setup_verdicts"]["calls"]:
        for verdict in call["expect"]:
            assert classify(verdict) == kinds.get(verdict, "version_pin"), verdict
            seen.add(kinds.get(verdict, "version_pin"))
    assert seen == {"uv_version", "cann_missing", "atb_missing", "version_pin"}


def test_pins_are_the_tt_stack():
    ns = _namespace("ch07.environment_preparation")
    assert ns["PINS"] == {
        "torch": "2.12.0",
        "torchvision": "0.27.0",
        "torch_npu": "2.12.0rc1",
        "vllm": "0.15.0",
        "vllm-ascend": "0.15.0",
        "triton-ascend": "3.2.1",
    }
    assert ns["COMMITS"] == {"verl": "e9aa879", "torchtitan": "ac13e536", "torchtitan-npu": "5901515"}
    assert ns["setup_verdicts"](ns["READY"]) == [] and ns["guard_verdict"](ns["READY"]) is None
