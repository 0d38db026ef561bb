"""exact, numeric, mapping, shape, sequence, set: credit and feedback, and no expected value in feedback."""
import math

import numpy as np
import pytest

from grading import checks
from grading.checks import CheckContext
from grading.codec import decode

CTX = CheckContext(lang="en", name="c", answer_name="a")


def run(kind, answer, spec, ctx=CTX):
    return checks.get(kind)(answer, spec, ctx)


def test_exact_tuple_equals_list_and_bool_is_not_int():
    assert run("exact", (1, 2), {"expected": [1, 2]}).fraction == 1
    assert run("exact", 1, {"expected": True}).fraction == 0
    out = run("exact", 41, {"expected": 42})
    assert out.fraction == 0 and "42" not in out.feedback


def test_exact_arrays_and_nan():
    assert run("exact", np.array([1, 2]), {"expected": [1, 2]}).fraction == 1
    assert run("exact", np.array([1, 2, 3]), {"expected": [1, 2]}).fraction == 0
    assert run("exact", math.nan, {"expected": {"__float__": "nan"}}).fraction == 1


def test_numeric_tolerances_scalars_lists_tensors():
    spec = {"expected": [1.0, 2.0, 3.0], "rtol": 1e-3}
    assert run("numeric", [1.0005, 2.0, 3.0], spec).fraction == 1
    out = run("numeric", [1.1, 2.0, 3.3], spec)
    assert out.fraction == 0 and "2 of 3" in out.feedback
    tensor = {"expected": {"__tensor__": {"dtype": "float32", "shape": [2], "data": [0.5, 1.5]}}, "atol": 1e-6}
    assert run("numeric", np.array([0.5, 1.5], dtype=np.float32), tensor).fraction == 1
    assert run("numeric", [0.5, 1.5], tensor).fraction == 1
    assert run("numeric", np.array([0.5, 1.5, 2.0]), tensor).fraction == 0
    assert run("numeric", 1e-9, {"expected": 0.0, "atol": 1e-8}).fraction == 1
    assert "structure" in run("numeric", "1.0", {"expected": 1.0}).feedback


def test_numeric_recurses_into_dicts():
    spec = {"expected": {"lr": 1e-6, "steps": [1, 2]}, "rtol": 1e-6}
    assert run("numeric", {"lr": 1e-6, "steps": [1, 2]}, spec).fraction == 1
    assert run("numeric", {"lr": 2e-6, "steps": [1, 2]}, spec).fraction == 0


def test_mapping_partial_credit_counts_keys_never_names_them():
    spec = {"expected": {"akey": 1, "bkey": "varlen", "ckey": 3, "dkey": 4}}
    out = run("mapping", {"akey": 1, "bkey": "flex", "ckey": 3, "zzkey": 0}, spec)
    assert out.fraction == pytest.approx((2 - 1) / 4)  # two right, one extra penalised
    assert "1 of 4 expected keys have a wrong value" in out.feedback
    assert "1 of 4 expected keys are missing" in out.feedback and "1 key(s) are not expected" in out.feedback
    assert not any(word in out.feedback for word in ("bkey", "dkey", "zzkey", "varlen", "flex"))
    ignoring = run("mapping", {"akey": 1, "bkey": "varlen", "ckey": 3, "dkey": 4, "zz": 0},
                   {**spec, "extra_keys": "ignore"})
    assert ignoring.fraction == 1


def test_mapping_with_tolerance_and_wrong_type():
    spec = {"expected": {"x": 0.1}, "rtol": 1e-3}
    assert run("mapping", {"x": 0.10001}, spec).fraction == 1
    assert run("mapping", [("x", 0.1)], spec).fraction == 0


def test_shape_from_tensor_tuple_or_list():
    spec = {"expected": [2, 3]}
    assert run("shape", np.zeros((2, 3)), spec).fraction == 1
    assert run("shape", (2, 3), spec).fraction == 1
    out = run("shape", (3, 2), spec)
    assert out.fraction == 0 and "(3, 2)" in out.feedback
    assert run("shape", "2x3", spec).fraction == 0


def test_sequence_per_position_and_all_or_nothing():
    spec = {"expected": ["a", "b", "c", "d"]}
    out = run("sequence", ["a", "x", "c", "d"], spec)
    assert out.fraction == pytest.approx(0.75) and "positions 1" in out.feedback
    assert run("sequence", ["a", "x", "c", "d"], {**spec, "partial": False}).fraction == 0
    longer = run("sequence", ["a", "b", "c", "d", "e"], spec)
    assert longer.fraction == pytest.approx(0.75) and "length 5" in longer.feedback
    assert run("sequence", ("a", "b", "c", "d"), spec).fraction == 1


def test_set_per_element_extras_subtract_and_nothing_named():
    spec = {"expected": ["grpo", "vllm", "reward", "agent_loop"]}
    assert run("set", {"vllm", "grpo", "agent_loop", "reward"}, spec).fraction == 1
    out = run("set", ["grpo", "vllm", "fsdp"], spec)
    assert out.fraction == pytest.approx((2 - 1) / 4)
    assert "fsdp" not in out.feedback and "reward" not in out.feedback
    assert "2 expected element(s) missing, 1 unexpected" in out.feedback
    assert run("set", decode({"__set__": ["grpo", "vllm", "reward", "agent_loop"]}), spec).fraction == 1


def test_zh_feedback():
    out = run("mapping", {"a": 2}, {"expected": {"a": 1}}, CheckContext(lang="zh"))
    assert "取值错误" in out.feedback and "a" not in out.feedback.replace("取值错误", "")


def test_set_members_may_be_lists_or_dicts():
    spec = {"expected": [[1, 2], [3]]}
    assert run("set", [[3], [1, 2]], spec).fraction == 1
    out = run("set", [{"a": 1}, [3]], spec)
    assert out.fraction == 0 and "1 unexpected" in out.feedback
