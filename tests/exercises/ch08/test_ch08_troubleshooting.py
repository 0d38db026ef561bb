"""ch08.troubleshooting: the table is complete and consistent, and the solution's classify recognises errors as
really raised by torchtitan's ParallelDims and the lab's recipe guards (not only our own strings)."""
from __future__ import annotations

import pytest

from grading.exercise import Catalogue
from ch08_solution_ns import solution_namespace  # helper next to this file (rootdir-relative imports)

EX = Catalogue().get("ch08.troubleshooting")
REF = EX.reference()["checks"]
NS = solution_namespace(EX)


def test_every_error_has_a_distinct_cause_and_fix():
    causes, fixes = REF["causes"]["expected"], REF["fixes"]["expected"]
    assert set(causes) == set(fixes) == set(NS["ERRORS"])
    assert len(set(causes.values())) == len(causes) == len(NS["CAUSES"])
    assert len(set(fixes.values())) == len(fixes) == len(NS["FIXES"])
    assert set(causes.values()) == set(NS["CAUSES"]) and set(fixes.values()) == set(NS["FIXES"])


@pytest.mark.parametrize("phrase,key", [
    ("uv 0.12.0 is required", "uv_version"), ("CANN set_env.sh was not found.", "cann_missing"),
    ("NNAL/ATB is required", "atb_missing"), ("This backend requires exactly one node with two NPUs.", "node_count"),
    ("Expected exactly two visible NPUs, got", "npu_count"), ("torchtitan_npu is required", "torchtitan_npu_missing"),
    ("No matching torchtitan flavor found", "flavor"), ("grad_norm is not finite", "grad_norm"),
    ("Invalid parallel dims", "parallel_dims"), ("[Ulysses CP] n_heads=", "ulysses_heads"),
])
def test_course_strings_are_in_the_table(phrase, key):
    """COURSE.md §9's troubleshooting strings each appear in the table row the answers are keyed by."""
    assert phrase in NS["ERRORS"][key]
    assert NS["classify"](NS["ERRORS"][key]) == key


def test_classify_on_torchtitan_parallel_dims_error():
    parallel_dims = pytest.importorskip("torchtitan.distributed.parallel_dims")
    with pytest.raises(AssertionError) as err:
        parallel_dims.ParallelDims(dp_replicate=1, dp_shard=2, cp=2, tp=1, pp=1, ep=1, world_size=2)
    assert NS["classify"](f"AssertionError: {err.value}") == "parallel_dims"


def test_classify_on_lab_recipe_guards(tmp_path):
    recipe = pytest.importorskip("exercises.lab.recipe")
    two_nodes = recipe.RecipeSettings.from_env({"NNODES": "2"}, recipe_dir=tmp_path)
    with pytest.raises(recipe.RecipeGuardError) as err:
        recipe.check_guards(two_nodes, npu_count=lambda: 2)
    assert NS["classify"](str(err.value)) == "node_count"
    one_card = recipe.RecipeSettings.from_env({}, recipe_dir=tmp_path)
    with pytest.raises(recipe.RecipeGuardError) as err:
        recipe.check_guards(one_card, npu_count=lambda: 1)
    assert NS["classify"](str(err.value)) == "npu_count"
