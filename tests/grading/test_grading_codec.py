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


# --- kernel data: strict decoding (AnswerDecoder) --------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from grading.codec import AnswerDecoder, TooLarge, Undecodable  # noqa: E402


def strict(value, **kw):
    return AnswerDecoder(**kw).decode(value)


def test_escaped_mappings_round_trip_even_with_marker_like_keys():
    wire = {"__dict__": [["__float__", "x"], ["__tensor__", {"__dict__": [["dtype", "U9"]]}], [1, [2]]]}
    assert strict(wire) == {"__float__": "x", "__tensor__": {"dtype": "U9"}, 1: [2]}


@pytest.mark.parametrize("wire", [
    {"plain": 1},  # a bare object is never a codec value from the kernel
    {"__float__": "bogus"},
    {"__dict__": 5},
    {"__dict__": [[1]]},
    {"__dict__": [[1, 2, 3]]},
    {"__raised__": "x"},
    {"__raised__": {"type": 3}},
    {"__missing__": False},
    {"__repr__": 5, "__type__": "t"},
    {"__set__": 3},
    {"__unknown__": 1},
    {"__tensor__": {"dtype": "float64", "shape": [2], "data": [1.0]}},  # shape disagrees with data
    {"__tensor__": {"dtype": "float64", "shape": [1], "data": [[1.0]]}},
    {"__tensor__": {"dtype": "U100000000", "shape": [10], "data": [""] * 10}},  # string dtype refused
    {"__tensor__": {"dtype": "object", "shape": [1], "data": [1]}},
    {"__tensor__": {"dtype": "uint8", "shape": [1], "data": [300]}},
    {"__tensor__": {"dtype": "int64", "shape": [1], "data": ["1"]}},
    {"__tensor__": {"dtype": "float32", "shape": [-1], "data": []}},
    {"__tensor__": {"dtype": "float32", "shape": [1], "data": [1], "extra": 1}},
])
def test_malformed_kernel_data_is_undecodable_never_an_exception(wire):
    assert isinstance(strict(wire), Undecodable)


def test_tensor_shape_and_dtype_are_checked_and_bytes_capped_before_allocation():
    ok = strict({"__tensor__": {"dtype": "int16", "shape": [2, 2], "data": [[1, 2], [3, 4]]}})
    assert ok.dtype == np.int16 and ok.shape == (2, 2)
    # 10^12 elements claimed with no data: the shape is checked against the data before anything is built
    claimed = strict({"__tensor__": {"dtype": "float64", "shape": [10**6, 10**6], "data": []}})
    assert isinstance(claimed, Undecodable)
    # real data over the byte cap: refused before the array is allocated
    over = strict({"__tensor__": {"dtype": "float64", "shape": [200], "data": [1.0] * 200}}, max_bytes=1000)
    assert isinstance(over, TooLarge)
    nan = strict({"__tensor__": {"dtype": "float32", "shape": [1], "data": [{"__float__": "nan"}]}})
    assert math.isnan(nan[0])


def test_run_budget_is_shared_and_a_rejected_value_costs_nothing():
    decoder = AnswerDecoder(max_bytes=10_000)
    assert isinstance(decoder.decode(["x" * 20_000]), TooLarge)
    assert decoder.remaining == 10_000
    assert decoder.decode(["x" * 4_000]) == ["x" * 4_000]
    assert decoder.decode(["y" * 4_000]) == ["y" * 4_000]
    assert isinstance(decoder.decode(["z" * 4_000]), TooLarge)  # the run's total is over
    assert isinstance(strict({"__too_large__": {"type": "list"}}), TooLarge)


def test_deep_nesting_is_undecodable():
    deep = []
    for _ in range(5000):
        deep = [deep]
    assert isinstance(strict(deep), Undecodable)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(
        st.sampled_from(["__dict__", "__float__", "__tensor__", "__set__", "__tuple__", "__raised__", "__repr__",
                         "__type__", "__missing__", "__too_large__", "dtype", "shape", "data", "type", "message",
                         "bases", "x"]) | st.text(max_size=5), children, max_size=4),
    max_leaves=40)
_tensor = st.fixed_dictionaries({"__tensor__": st.fixed_dictionaries({
    "dtype": st.sampled_from(["float64", "int8", "uint64", "bool", "bfloat16", "U1000", "S9", "object", "V64"]),
    "shape": st.lists(st.integers(min_value=-2, max_value=10**9), max_size=6),
    "data": _json})})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_json, _tensor, st.lists(_tensor, max_size=3)))
def test_fuzz_arbitrary_kernel_json_never_raises_and_stays_under_the_cap(wire):
    cap = 64 * 1024
    decoder = AnswerDecoder(max_bytes=cap)
    value = decoder.decode(wire)  # must not raise
    assert 0 <= cap - decoder.remaining <= cap
    arrays, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, np.ndarray):
            arrays.append(v)
        elif isinstance(v, (list, tuple, frozenset)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    assert sum(a.nbytes for a in arrays) <= cap
    assert all(a.dtype.kind in "biuf" for a in arrays)
