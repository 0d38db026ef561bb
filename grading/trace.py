"""The learner's training metrics, copied into the result so a page can plot the run against the band.

Only a training_run answer's metrics.jsonl records are read, and only their step and finite numbers are
kept (learner data: bounded in steps, keys and key length). Nothing from the reference is added.
"""

from __future__ import annotations

import math
from typing import Any

from grading.codec import decode
from grading.exercise import Exercise

MAX_STEPS = 1000
MAX_KEYS = 40
MAX_KEY_CHARS = 80
SHORT_NAME = 40  # a profile or dtype name


def training_trace(
    exercise: Exercise, payloads: dict[str, dict[str, Any]]
) -> tuple[list[dict], str | None, str | None]:
    """(records, profile, dtype) of the exercise's first training_run answer; ([], None, None) when there is
    none. profile and dtype are what the run's run.json says (short names only: learner data)."""
    names = [a.name for a in exercise.manifest.answers if a.kind == "training_run"]
    answers = (payloads.get("answers") or {}).get("answers", {})
    if not names or not isinstance(answers, dict):
        return [], None, None
    value = decode(answers.get(names[0], {"__missing__": True}))
    if not isinstance(value, dict):
        return [], None, None
    records = []
    for raw in value.get("metrics", [])[:MAX_STEPS] if isinstance(value.get("metrics"), list) else []:
        if not isinstance(raw, dict) or not isinstance(raw.get("step"), int) or isinstance(raw.get("step"), bool):
            continue
        kept: dict[str, float | int] = {"step": raw["step"]}
        for key, v in list(raw.items())[:MAX_KEYS]:
            if (
                isinstance(key, str)
                and len(key) <= MAX_KEY_CHARS
                and isinstance(v, (int, float))
                and not isinstance(v, bool)
                and math.isfinite(v)
            ):
                kept[key] = v
        records.append(kept)
    run = value.get("run")
    return records, _short(run, "profile"), _short(run, "dtype")


def _short(run: Any, key: str) -> str | None:
    value = run.get(key) if isinstance(run, dict) else None
    return value if isinstance(value, str) and 0 < len(value) <= SHORT_NAME else None
