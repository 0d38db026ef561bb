"""Type shapes of a function check's call arguments: what a hidden call may pass, given the public calls.

A hidden call's argument goes beyond what the notebook states when its recursive type shape (bool, int,
float, str, None, list[...], tuple[...], dict keys and value shapes, tensor dtype and rank) is not the
shape of that argument in a public call (issue 29; grading/authoring/rules.py runs it).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from grading.codec import decode

TYPES_FIX = (
    "pass the types a public call passes (add a public call that shows this one), or state the type in the "
    'notebook and give the rule "types": "<that phrase>"'
)


def shape(value: Any) -> Any:
    """The recursive type shape of a decoded argument: what a hidden call may not go beyond."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return "None" if value is None else type(value).__name__
    if isinstance(value, np.ndarray):
        return ("tensor", str(value.dtype), value.ndim)
    if isinstance(value, tuple):
        return ("tuple", tuple(shape(v) for v in value))
    if isinstance(value, (list, frozenset, set)):
        return ("list" if isinstance(value, list) else "set", frozenset(shape(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((k, shape(v)) for k, v in value.items()), key=lambda kv: repr(kv[0]))))
    return ("other", type(value).__name__)


def covers(public: Any, hidden: Any) -> bool:
    """Does the public shape state the hidden one? Equal shapes, where a list's (or set's) elements must each
    have a shape some public element has (an empty list fits any list), and a dict needs the same keys."""
    if public == hidden:
        return True
    if not (isinstance(public, tuple) and isinstance(hidden, tuple)) or public[0] != hidden[0]:
        return False
    if public[0] in ("list", "set"):
        return all(any(covers(p, h) for p in public[1]) for h in hidden[1])
    if public[0] == "tuple":
        return len(public[1]) == len(hidden[1]) and all(covers(p, h) for p, h in zip(public[1], hidden[1], strict=True))
    if public[0] == "dict":
        p, h = dict(public[1]), dict(hidden[1])
        return p.keys() == h.keys() and all(covers(p[k], h[k]) for k in p)
    return False


def show(s: Any) -> str:
    """A shape as an author reads it: int, list[int], dict{'a': str}, tensor[float32, 4-d]."""
    if isinstance(s, str):
        return s
    if s[0] in ("list", "set"):
        return f"{s[0]}[{' | '.join(sorted(show(x) for x in s[1]))}]"
    if s[0] == "tuple":
        return f"tuple[{', '.join(show(x) for x in s[1])}]"
    if s[0] == "dict":
        return "dict{" + ", ".join(f"{k!r}: {show(v)}" for k, v in s[1]) + "}"
    if s[0] == "tensor":
        return f"tensor[{s[1]}, {s[2]}-d]"
    return s[1]


def _shown(shapes: list[Any]) -> str:
    return " or ".join(sorted({show(s) for s in shapes}))


def arg_shape(value: Any) -> Any:
    return shape(decode(json.loads(json.dumps(value))))  # as the kernel receives it (tuples travel as lists)


def beyond(
    call: dict, publics: list[dict], params: set[str] | None, *, waived: bool, answer: str
) -> list[tuple[str, str]]:
    """(problem, fix) for each way a hidden call's arguments go beyond what the public calls pass; `waived`: a
    rule of the call states other types (`types`). `params`: the parameters of the template's signature."""
    out: list[tuple[str, str]] = []
    for i, arg in enumerate(call.get("args", [])):
        if waived:
            continue
        seen = [arg_shape(p["args"][i]) for p in publics if len(p.get("args", [])) > i]
        got = arg_shape(arg)
        if not seen:
            out.append((f"passes argument {i + 1}, which no public call passes", TYPES_FIX))
        elif not any(covers(s, got) for s in seen):
            out.append((f"argument {i + 1} is {show(got)} where the public calls pass {_shown(seen)}", TYPES_FIX))
    for key, value in call.get("kwargs", {}).items():
        seen = [arg_shape(p["kwargs"][key]) for p in publics if key in p.get("kwargs", {})]
        if not seen:
            if params is None or key not in params:
                out.append(
                    (
                        f"passes keyword {key!r}, which no public call passes and the template's signature of "
                        f"{answer}() does not name",
                        f"add a public call that passes {key!r}, or name it in the signature of {answer}() the "
                        "template shows",
                    )
                )
            continue
        got = arg_shape(value)
        if not waived and not any(covers(s, got) for s in seen):
            out.append((f"keyword {key!r} is {show(got)} where the public calls pass {_shown(seen)}", TYPES_FIX))
    return out
