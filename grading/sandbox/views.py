"""Per-exercise views of the course runtime: forbidden modules do not exist inside the kernel.

An exercise's policy (`[policy] forbid` in exercise.toml) names modules whose code would answer the
exercise (e.g. `exercises.lab.wordle` for ch07.wordle_reward, `verl` for ch07.grpo_math). The bwrap
sandbox masks each one over its read-only bind: a package directory gets an empty read-only tmpfs, a
single-file module (and its cached `__pycache__/<name>.*.pyc`, which could be loaded directly) gets
`/dev/null`. The import then fails inside the kernel, and the source cannot be read either.
Module paths are found without importing anything (importing verl in the grader costs seconds).
unsafe-local mode cannot hide anything; there the provenance check (grading/provenance.py) is the
only layer.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Mask:
    path: str
    is_dir: bool


def module_paths(name: str, roots: list[str] | None = None) -> list[Mask]:
    """Every file or package directory that would provide module `name` under `roots` (default
    sys.path). A name that resolves nowhere gives [] (nothing to hide)."""
    parts = name.split(".")
    found: list[Mask] = []
    for root in roots if roots is not None else [p for p in sys.path if p]:
        base = Path(root, *parts)
        if base.is_dir():
            found.append(Mask(str(base), True))
            continue
        source = base.with_suffix(".py")
        if source.is_file():
            found.append(Mask(str(source), False))
            cache = base.parent / "__pycache__"
            if cache.is_dir():
                found += [Mask(str(p), False) for p in sorted(cache.glob(f"{parts[-1]}.*.pyc"))]
        for ext in sorted(base.parent.glob(f"{parts[-1]}.*.so")) if base.parent.is_dir() else []:
            found.append(Mask(str(ext), False))
    return found


def masks(forbidden: tuple[str, ...], roots: list[str] | None = None) -> list[Mask]:
    seen: dict[str, Mask] = {}
    for name in forbidden:
        for m in module_paths(name, roots):
            seen.setdefault(m.path, m)
    return list(seen.values())


def bwrap_args(forbidden: tuple[str, ...], visible: tuple[str, ...], roots: list[str] | None = None) -> list[str]:
    """bwrap arguments that hide `forbidden` modules; only paths under a `visible` bind are masked
    (a mount over a path that does not exist inside would fail the start)."""
    args: list[str] = []
    for m in masks(forbidden, roots):
        if not any(m.path == v or m.path.startswith(v.rstrip("/") + "/") for v in visible):
            continue
        if m.is_dir:
            args += ["--perms", "0555", "--tmpfs", m.path, "--remount-ro", m.path]
        else:
            args += ["--ro-bind", "/dev/null", m.path]
    return args
