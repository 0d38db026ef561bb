"""What both notebook-builder kits share: per-family default limits and the manifest TOML writer."""
from __future__ import annotations

import json
from typing import Any

LIMITS = {
    "light": {"cell_timeout_s": 30, "run_timeout_s": 120, "memory_mb": 2048},
    "torch": {"cell_timeout_s": 120, "run_timeout_s": 300, "memory_mb": 4096},
    "training": {"cell_timeout_s": 300, "run_timeout_s": 600, "memory_mb": 6144},
}


def toml_value(v: Any) -> str:
    """A TOML literal for the subset manifests use (bool, number, string, list, inline table)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))
