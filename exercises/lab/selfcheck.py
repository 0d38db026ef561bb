"""The notebooks' self-check helper: run one public example and print ✓, ✗ (with what came back) or ….

Learner-facing only: grading never reads what it prints. One copy here instead of one per notebook.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


def close(got: Any, want: Any, tol: float = 1e-9) -> bool:
    """Equal, with numbers within `tol` (absolute), recursing into lists, tuples and dicts."""
    if isinstance(want, bool) or isinstance(got, bool):
        return got == want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(got, want, rel_tol=0.0, abs_tol=tol) or got == want
    if isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)):
        return len(got) == len(want) and all(close(g, w, tol) for g, w in zip(got, want, strict=True))
    if isinstance(want, dict) and isinstance(got, dict):
        return got.keys() == want.keys() and all(close(got[k], want[k], tol) for k in want)
    if hasattr(got, "tolist") and not isinstance(got, (str, bytes)):  # numpy arrays and torch tensors
        return close(got.tolist(), want, tol)
    return got == want


def show(label: str, fn: Callable[[], Any], want: Any, tol: float = 1e-9) -> bool:
    """Print one public example's outcome; a stub's NotImplementedError prints "not implemented yet"."""
    try:
        got = fn()
    except NotImplementedError:
        print("…", label, "- not implemented yet")
        return False
    except Exception as exc:  # show the learner their own error
        print("✗", label, "- raised", type(exc).__name__, exc)
        return False
    ok = got is not None and close(got, want, tol)
    print("✓" if ok else "✗", label, "" if ok else f"- got {got!r}, want {want!r}")
    return ok
