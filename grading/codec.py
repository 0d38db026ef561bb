"""Grader-side half of the value codec (docs/exercise-format.md): JSON <-> Python values.

Two directions with two levels of trust. `decode` reads reference files (ours, lenient: plain JSON
objects are dicts). `AnswerDecoder` reads what a learner's kernel sent: every JSON object must be one
of the tagged forms the kernel-side encoder (`grading.kernel_side`) writes, nesting and size are
capped before anything is allocated, and it never raises: a value it cannot read becomes
`Undecodable` or `TooLarge`, which fail the check that reads them (the learner's fault, not ours).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class Missing:
    """The learner's notebook never defined the answer."""


@dataclass(frozen=True, slots=True)
class Raised:
    """A call (or reading an answer) raised; `type` is the exception class name."""

    type: str
    message: str
    bases: tuple[str, ...] = ()  # the exception's base classes, so `raises: ValueError` accepts subclasses

    def is_a(self, name: str) -> bool:
        return name == self.type or name in self.bases


@dataclass(frozen=True, slots=True)
class Opaque:
    """A value the codec cannot carry (a module, an open file...); only its repr is known."""

    repr: str
    type: str


@dataclass(frozen=True, slots=True)
class Undecodable:
    """Kernel data that is not a well-formed codec value (forged markers, bad tensors, too deep)."""

    reason: str


@dataclass(frozen=True, slots=True)
class TooLarge:
    """The run's answers passed the answer-size cap; `limit_bytes` is that cap."""

    limit_bytes: int


MISSING = Missing()
_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
# numpy has no bfloat16; such tensors travel as floats and decode as float32.
_NUMPY_DTYPES = {"bfloat16": "float32", "bool": "bool_"}

# Limits on what a kernel may make the grader build (docs/grading-engine.md, "Answer payloads").
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # decoded size of all answers and call results of one run
MAX_DEPTH = 100  # JSON nesting of one value (the kernel-side encoder stops at 64)
MAX_TENSOR_DIMS = 32
MAX_TEXT = 2000  # characters kept of a repr or an exception message
# Tensors decode only to numeric and bool dtypes: a learner-chosen string or object dtype could make
# numpy allocate far more than the data it came with.
TENSOR_DTYPES: dict[str, np.dtype] = {
    name: np.dtype(target)
    for name, target in {
        "bool": "bool",
        "int8": "int8",
        "int16": "int16",
        "int32": "int32",
        "int64": "int64",
        "uint8": "uint8",
        "uint16": "uint16",
        "uint32": "uint32",
        "uint64": "uint64",
        "float16": "float16",
        "float32": "float32",
        "float64": "float64",
        "bfloat16": "float32",
    }.items()
}
_NODE_BYTES = 16  # what the decoder charges per JSON node, besides a string's characters


def decode(value: Any) -> Any:
    """Reference-file JSON (trusted) -> Python values: tensors -> np.ndarray, sets -> frozenset, sentinels."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__float__" in value:
        return _SPECIAL_FLOATS[value["__float__"]]
    if "__missing__" in value:
        return MISSING
    if "__raised__" in value:
        r = value["__raised__"]
        return Raised(
            type=str(r.get("type", "Exception")),
            message=str(r.get("message", "")),
            bases=tuple(str(b) for b in r.get("bases", ())),
        )
    if "__repr__" in value:
        return Opaque(repr=str(value["__repr__"]), type=str(value.get("__type__", "")))
    if "__set__" in value:
        return frozenset(_hashable(decode(v)) for v in value["__set__"])
    if "__dict__" in value:
        return {_hashable(decode(k)): decode(v) for k, v in value["__dict__"]}
    if "__tuple__" in value:
        return tuple(decode(v) for v in value["__tuple__"])
    if "__tensor__" in value:
        spec = value["__tensor__"]
        dtype = _NUMPY_DTYPES.get(spec["dtype"], spec["dtype"])
        try:
            np_dtype = np.dtype(getattr(np, dtype, dtype))
        except TypeError:
            np_dtype = np.dtype("float64")
        return np.array(decode(spec["data"]), dtype=np_dtype).reshape(spec["shape"])
    return {k: decode(v) for k, v in value.items()}


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted(((k, _hashable(v)) for k, v in value.items()), key=repr))
    if isinstance(value, np.ndarray):
        return tuple(_hashable(v) for v in value.tolist())
    return value


class _Reject(Exception):
    def __init__(self, sentinel: Undecodable | TooLarge) -> None:
        self.sentinel = sentinel


class AnswerDecoder:
    """Strict decoder for one run's kernel data; the size budget is shared by every value it decodes."""

    def __init__(self, *, max_bytes: int = MAX_ANSWER_BYTES, max_depth: int = MAX_DEPTH) -> None:
        self.max_bytes = max_bytes
        self.remaining = max_bytes
        self.max_depth = max_depth

    def decode(self, wire: Any) -> Any:
        """A codec value, or Undecodable / TooLarge. Never raises; a rejected value costs nothing."""
        before = self.remaining
        try:
            return self._value(wire, 0)
        except _Reject as reject:
            self.remaining = before
            return reject.sentinel
        except (RecursionError, MemoryError):
            self.remaining = before
            return Undecodable("too deeply nested or too large")
        except Exception as exc:  # a shape the checks below missed is still the learner's data, never a crash
            self.remaining = before
            return Undecodable(f"malformed value ({type(exc).__name__})")

    def _charge(self, nbytes: int) -> None:
        self.remaining -= nbytes
        if self.remaining < 0:
            raise _Reject(TooLarge(self.max_bytes))

    @staticmethod
    def _bad(reason: str) -> _Reject:
        return _Reject(Undecodable(reason))

    def _value(self, v: Any, depth: int) -> Any:
        if depth > self.max_depth:
            raise self._bad(f"nested deeper than {self.max_depth} levels")
        if v is None or isinstance(v, bool):
            self._charge(_NODE_BYTES)
            return v
        if isinstance(v, int):
            self._charge(_NODE_BYTES + v.bit_length() // 8)
            return int(v)
        if isinstance(v, float):
            self._charge(_NODE_BYTES)
            return float(v)
        if isinstance(v, str):
            self._charge(_NODE_BYTES + len(v))
            return str(v)
        if isinstance(v, list):
            self._charge(_NODE_BYTES + 8 * len(v))
            return [self._value(x, depth + 1) for x in v]
        if isinstance(v, dict):
            return self._tagged(v, depth)
        raise self._bad(f"unexpected JSON type {type(v).__name__}")

    def _tagged(self, v: dict, depth: int) -> Any:
        keys = set(v)
        if keys == {"__repr__", "__type__"}:
            return Opaque(repr=self._text(v["__repr__"]), type=self._text(v["__type__"]))
        if len(keys) != 1:
            raise self._bad("an object that is not a codec marker")
        ((tag, body),) = v.items()
        self._charge(_NODE_BYTES)
        if tag == "__dict__":
            if not isinstance(body, list):
                raise self._bad("__dict__ without a list of pairs")
            self._charge(8 * len(body))
            out = {}
            for pair in body:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise self._bad("__dict__ entry that is not a [key, value] pair")
                key = _hashable(self._value(pair[0], depth + 1))
                hash(key)  # an unhashable key is malformed data; decode() turns the TypeError into Undecodable
                out[key] = self._value(pair[1], depth + 1)
            return out
        if tag == "__float__":
            if body not in _SPECIAL_FLOATS:
                raise self._bad("__float__ that is not nan, inf or -inf")
            return _SPECIAL_FLOATS[body]
        if tag == "__missing__":
            if body is not True:
                raise self._bad("malformed __missing__")
            return MISSING
        if tag in ("__set__", "__tuple__"):
            if not isinstance(body, list):
                raise self._bad(f"{tag} without a list")
            self._charge(8 * len(body))
            items = [self._value(x, depth + 1) for x in body]
            return frozenset(_hashable(x) for x in items) if tag == "__set__" else tuple(items)
        if tag == "__raised__":
            return self._raised(body)
        if tag == "__tensor__":
            return self._tensor(body)
        if tag == "__too_large__":
            raise _Reject(TooLarge(self.max_bytes))
        raise self._bad("an unknown codec marker")

    def _text(self, v: Any) -> str:
        if not isinstance(v, str):
            raise self._bad("a repr or message that is not a string")
        text = v[:MAX_TEXT]
        self._charge(_NODE_BYTES + len(text))
        return text

    def _raised(self, body: Any) -> Raised:
        if not isinstance(body, dict) or not set(body) <= {"type", "message", "bases"} or "type" not in body:
            raise self._bad("malformed __raised__")
        bases = body.get("bases", [])
        if not isinstance(bases, list) or len(bases) > 64:
            raise self._bad("malformed __raised__ bases")
        return Raised(
            type=self._text(body["type"])[:200],
            message=self._text(body.get("message", "")),
            bases=tuple(self._text(b)[:200] for b in bases),
        )

    def _tensor(self, spec: Any) -> np.ndarray:
        if not isinstance(spec, dict) or set(spec) != {"dtype", "shape", "data"}:
            raise self._bad("malformed __tensor__")
        dtype = TENSOR_DTYPES.get(spec["dtype"]) if isinstance(spec["dtype"], str) else None
        if dtype is None:
            raise self._bad("a tensor dtype that is not numeric or bool")
        shape = spec["shape"]
        if (
            not isinstance(shape, list)
            or len(shape) > MAX_TENSOR_DIMS
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
        ):
            raise self._bad("a tensor shape that is not a short list of non-negative ints")
        flat = _flatten(spec["data"], shape)  # walks only the data already received, never the claimed shape
        if flat is None:
            raise self._bad("tensor data that does not match its shape")
        self._charge(len(flat) * dtype.itemsize + _NODE_BYTES)  # before any allocation
        leaves = []
        for x in flat:
            if isinstance(x, dict):
                if dtype.kind != "f" or set(x) != {"__float__"} or x["__float__"] not in _SPECIAL_FLOATS:
                    raise self._bad("a tensor element that is not a number")
                x = _SPECIAL_FLOATS[x["__float__"]]
            elif not isinstance(x, (bool, int, float)):
                raise self._bad("a tensor element that is not a number")
            leaves.append(x)
        return np.array(leaves, dtype=dtype).reshape(shape)  # out-of-range ints raise -> Undecodable


def _flatten(data: Any, shape: list[int]) -> list[Any] | None:
    """The leaves of `data` if it is a nested list of exactly `shape`, else None (iterative, no recursion)."""
    if not shape:
        return None if isinstance(data, list) else [data]
    level = [data]
    for n in shape:
        nxt = []
        for node in level:
            if not isinstance(node, list) or len(node) != n:
                return None
            nxt.extend(node)
        level = nxt
    return None if any(isinstance(x, list) for x in level) else level


def encode(value: Any) -> Any:
    """Encode a grader-side Python value (reference inputs) for the kernel; mirrors kernel_side.encode."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"__float__": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__dict__": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        return {"__set__": [encode(v) for v in sorted(value, key=repr)]}
    if isinstance(value, np.ndarray):
        return {"__tensor__": {"dtype": str(value.dtype), "shape": list(value.shape), "data": encode(value.tolist())}}
    if isinstance(value, np.generic):
        return encode(value.item())
    raise TypeError(f"cannot encode {type(value).__name__} for the kernel; use lists, dicts, numbers, str")
