"""The grader-side codec: every tagged form of docs/exercise-format.md decodes, and encode mirrors it."""
import math

import numpy as np
import pytest

from grading.codec import MISSING, Opaque, Raised, decode, encode


def test_plain_json_passes_through():
    assert decode({"a": [1, 2.5, "x", None, True]}) == {"a": [1, 2.5, "x", None, True]}


@pytest.mark.parametrize("tag,check", [("nan", math.isnan), ("inf", lambda v: v == math.inf),
                                       ("-inf", lambda v: v == -math.inf)])
def test_special_floats(tag, check):
    assert check(decode({"__float__": tag}))


def test_sentinels():
    assert decode({"__missing__": True}) is MISSING
    raised = decode({"__raised__": {"type": "KeyError", "message": "'x'", "bases": ["LookupError", "Exception"]}})
    assert isinstance(raised, Raised) and raised.is_a("KeyError") and raised.is_a("LookupError")
    assert not raised.is_a("ValueError")
    assert decode({"__repr__": "<module 'os'>", "__type__": "builtins.module"}) == Opaque("<module 'os'>", "builtins.module")


def test_sets_and_non_string_dicts():
    assert decode({"__set__": ["a", "b"]}) == frozenset({"a", "b"})
    assert decode({"__set__": [[1, 2]]}) == frozenset({(1, 2)})
    assert decode({"__dict__": [[1, "one"], [[2, 3], "pair"]]}) == {1: "one", (2, 3): "pair"}


def test_tensor_decodes_to_numpy_with_shape_and_dtype():
    arr = decode({"__tensor__": {"dtype": "int32", "shape": [2, 2], "data": [[1, 2], [3, 4]]}})
    assert arr.dtype == np.int32 and arr.shape == (2, 2) and arr[1, 0] == 3
    bf16 = decode({"__tensor__": {"dtype": "bfloat16", "shape": [2], "data": [0.5, {"__float__": "nan"}]}})
    assert bf16.dtype == np.float32 and bf16[0] == 0.5 and math.isnan(bf16[1])
    scalar = decode({"__tensor__": {"dtype": "float64", "shape": [], "data": 1.5}})
    assert scalar.shape == () and float(scalar) == 1.5


def test_encode_round_trips():
    value = {"xs": [1, 2.0, float("inf")], "s": {"b", "a"}, 3: (4, 5), "arr": np.arange(4).reshape(2, 2),
             "n": np.float32(0.25)}
    back = decode(encode(value))
    assert back["xs"][:2] == [1, 2.0] and back["xs"][2] == math.inf
    assert back["s"] == frozenset({"a", "b"})
    assert back[3] == [4, 5]
    assert np.array_equal(back["arr"], np.arange(4).reshape(2, 2))
    assert back["n"] == 0.25


def test_encode_refuses_unknown_objects():
    with pytest.raises(TypeError, match="cannot encode"):
        encode(object())
