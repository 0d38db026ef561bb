"""Value comparison shared by the check kinds: exact equality and tolerance counting."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from grading.codec import Missing, Opaque, Raised

_SENTINELS = (Missing, Opaque, Raised)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))


def _as_array(v: Any) -> np.ndarray | None:
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, (list, tuple)):
        try:
            arr = np.asarray(v)
        except (ValueError, TypeError):
            return None
        return arr if arr.dtype.kind in "biuf" else None
    return None


def equal(got: Any, expected: Any) -> bool:
    """Exact equality; tuples equal lists, arrays compare by shape and values, NaN equals NaN."""
    if isinstance(got, _SENTINELS) or isinstance(expected, _SENTINELS):
        return False
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        a, b = _as_array(got), _as_array(expected)
        return (
            a is not None
            and b is not None
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f" and b.dtype.kind == "f"))
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(expected)
            and all(equal(g, e) for g, e in zip(got, expected, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(got, dict)
            and got.keys() == expected.keys()
            and all(equal(got[k], expected[k]) for k in expected)
        )
    if isinstance(expected, float) and isinstance(got, float) and math.isnan(expected) and math.isnan(got):
        return True
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(got) is type(expected) and got == expected
    try:
        return bool(got == expected)
    except Exception:
        return False


def count_close(got: Any, expected: Any, *, rtol: float, atol: float) -> tuple[int, int] | None:
    """(numbers outside tolerance, numbers compared), or None when the structures differ."""
    if isinstance(got, _SENTINELS):
        return None
    if isinstance(expected, np.ndarray) or (isinstance(got, np.ndarray) and isinstance(expected, (list, tuple))):
        a, b = _as_array(got), _as_array(expected)
        if a is None or b is None or a.shape != b.shape:
            return None
        a, b = a.astype(np.float64), b.astype(np.float64)
        ok = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        return int((~ok).sum()), int(b.size)
    if _is_number(expected):
        if not _is_number(got):
            return None
        g, e = float(got), float(expected)
        same = (math.isnan(g) and math.isnan(e)) or (g == e) or abs(g - e) <= atol + rtol * abs(e)
        return (0 if same else 1), 1
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(expected):
            return None
        bad = total = 0
        for g, e in zip(got, expected, strict=True):
            sub = count_close(g, e, rtol=rtol, atol=atol)
            if sub is None:
                return None
            bad, total = bad + sub[0], total + sub[1]
        return bad, total
    if isinstance(expected, dict):
        if not isinstance(got, dict) or got.keys() != expected.keys():
            return None
        bad = total = 0
        for k in expected:
            sub = count_close(got[k], expected[k], rtol=rtol, atol=atol)
            if sub is None:
                return None
            bad, total = bad + sub[0], total + sub[1]
        return bad, total
    return (0 if equal(got, expected) else 1), 1


def is_finite(value: Any) -> bool:
    """True if every number inside `value` is finite."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "fc" or bool(np.isfinite(value).all())
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(is_finite(v) for v in value)
    if isinstance(value, dict):
        return all(is_finite(v) for v in value.values())
    return True


def describe(value: Any) -> str:
    """A short, learner-safe rendering of a learner's own value (never of an expected one)."""
    if isinstance(value, Missing):
        return "<missing>"
    if isinstance(value, Raised):
        return f"a timeout ({value.message})" if value.type == "__timeout__" else f"{value.type}: {value.message}"
    if isinstance(value, Opaque):
        return value.repr[:200]
    if isinstance(value, np.ndarray):
        return f"array(shape={list(value.shape)}, dtype={value.dtype})" if value.size > 20 else repr(value.tolist())
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
