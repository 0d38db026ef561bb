"""Grader-side half of the value codec (docs/exercise-format.md): JSON <-> Python values.

The kernel-side encoder lives in `grading.kernel_side`; here we decode what it sent (tensors become
numpy arrays, so the grader process never needs torch) and encode reference call inputs.
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


MISSING = Missing()
_SPECIAL_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
# numpy has no bfloat16; such tensors travel as floats and decode as float32.
_NUMPY_DTYPES = {"bfloat16": "float32", "bool": "bool_"}


def decode(value: Any) -> Any:
    """Turn codec JSON into Python values: tensors -> np.ndarray, sets -> frozenset, sentinels."""
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
        return Raised(type=str(r.get("type", "Exception")), message=str(r.get("message", "")),
                      bases=tuple(str(b) for b in r.get("bases", ())))
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
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return tuple(_hashable(v) for v in value.tolist())
    return value


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
        return {"__tensor__": {"dtype": str(value.dtype), "shape": list(value.shape),
                               "data": encode(value.tolist())}}
    if isinstance(value, np.generic):
        return encode(value.item())
    raise TypeError(f"cannot encode {type(value).__name__} for the kernel; use lists, dicts, numbers, str")
