"""The metrics record format shared by the CPU trainer and the NPU recipe's log parser.

A record is one flat JSON object per line of ``metrics.jsonl``: ``{"step": int, "<verl metric name>":
float, ...}``. The console format is verl's ``concat_dict_to_str`` (``aggregate_logger.py``):
``step:N - key:value - ...`` with numeric values only, each written by ``pprint.pformat``. Also parsed:
``Total training steps: N`` and ``Initial validation metrics: {...}`` (recorded under step 0, where
verl's own ``logger.log(..., step=0)`` puts it too). Ray's ``(Actor pid=N)`` line prefixes are ignored.
"""

from __future__ import annotations

import ast
import json
import math
import numbers
import pprint
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_RAY_PREFIX = re.compile(r"^\s*\([^()]*pid=\d+[^()]*\)\s?")
_STEP_LINE = re.compile(r"^step:(\d+)((?: - [^\n]*)?)$")
_TOTAL_STEPS = re.compile(r"Total training steps: (\d+)")
_INITIAL = "Initial validation metrics:"
_INITIAL_LINE = re.compile(r"""^\s*(?:\(\s*)?["']?Initial validation metrics:""")
_NUMPY_SCALAR = re.compile(r"\b(?:np|numpy)\.(?:float|int|uint|bool_?)\w*\(([^()]*)\)")
_TORCH_SCALAR = re.compile(r"\btensor\(([^(),]*)(?:,[^()]*)?\)")


def format_console_line(step: int, metrics: Mapping[str, object]) -> str:
    """verl's console line for one step; non-numeric values are dropped, as verl drops them."""
    parts = [f"step:{int(step)}"]
    for key, value in metrics.items():
        if isinstance(value, numbers.Number):
            parts.append(f"{key}:{pprint.pformat(value)}")
    return " - ".join(parts)


def parse_value(text: str) -> float:
    """A console value as float: plain numbers, nan/inf, True/False, ``np.float64(x)``, ``tensor(x)``."""
    raw = text.strip()
    inner = _NUMPY_SCALAR.fullmatch(raw) or _TORCH_SCALAR.fullmatch(raw)
    if inner:
        raw = inner.group(1).strip()
    if raw in ("True", "False"):
        return 1.0 if raw == "True" else 0.0
    try:
        return float(raw)
    except ValueError:
        raise ValueError(
            f"cannot read metric value {text!r} as a number; verl logs numbers via pprint.pformat, "
            "so this line was not written by verl's console logger"
        ) from None


def _clean(line: str) -> str:
    """A console line without ANSI colours and Ray's ``(Actor pid=N, ip=...)`` prefix."""
    return _RAY_PREFIX.sub("", _ANSI.sub("", line.rstrip("\r\n")))


def parse_step_line(line: str) -> dict | None:
    """One ``step:N - k:v - ...`` line (verl prints it at line start) as a flat record, else None."""
    match = _STEP_LINE.match(_clean(line).strip())
    if not match:
        return None
    record: dict = {"step": int(match.group(1))}
    for item in match.group(2).split(" - ")[1:]:
        key, sep, value = item.rpartition(":")
        if not sep or not key:
            raise ValueError(f"malformed metric item {item!r} in line {line!r}; expected key:value")
        record[key] = parse_value(value)
    return record


def _parse_metrics_dict(text: str) -> dict[str, float]:
    """The ``{...}`` repr printed after "Initial validation metrics:" as {key: float}."""
    cleaned = _NUMPY_SCALAR.sub(r"\1", text)
    cleaned = _TORCH_SCALAR.sub(r"\1", cleaned)
    cleaned = re.sub(r"(?<![\w'\"])(-?)(nan|inf)\b", r"'\1\2'", cleaned)
    data = ast.literal_eval(cleaned)
    return {
        str(k): parse_value(str(v))
        for k, v in data.items()
        if (isinstance(v, numbers.Number) and not isinstance(v, complex)) or (isinstance(v, str) and _is_num(v))
    }


def _is_num(text: str) -> bool:
    try:
        parse_value(text)
    except ValueError:
        return False
    return True


def _initial_block(lines: list[str], start: int) -> tuple[str, int]:
    """The initial-validation text starting at ``lines[start]`` (pprint may wrap it) and the next index."""
    first = lines[start]
    if not first.lstrip().startswith("("):
        return first, start + 1
    chunk = [first]
    i = start + 1
    while i < len(lines) and not chunk[-1].rstrip().endswith(")"):
        chunk.append(lines[i])
        i += 1
    return "\n".join(chunk), i


def _initial_metrics(block: str) -> dict[str, float]:
    text = block.strip()
    if text[:1] in "('\"":
        text = ast.literal_eval(text)  # pprint printed the f-string's repr, possibly wrapped in (...)
    body = text.split(_INITIAL, 1)[1].strip()
    return _parse_metrics_dict(body)


@dataclass
class ParsedLog:
    """What a verl console log says: the planned step count, initial validation, per-step records."""

    total_training_steps: int | None = None
    initial_validation: dict[str, float] = field(default_factory=dict)
    records: list[dict] = field(default_factory=list)


def parse_log(text: str) -> ParsedLog:
    """Parse a whole console log; records with the same step are merged, in order of first appearance."""
    lines = [_clean(line) for line in text.splitlines()]
    parsed = ParsedLog()
    by_step: dict[int, dict] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if _INITIAL_LINE.match(line):
            block, i = _initial_block(lines, i)
            parsed.initial_validation = _initial_metrics(block)
            if parsed.initial_validation:
                by_step.setdefault(0, {"step": 0}).update(parsed.initial_validation)
            continue
        total = _TOTAL_STEPS.search(line)
        if total:
            parsed.total_training_steps = int(total.group(1))
        record = parse_step_line(line)
        if record is not None:
            by_step.setdefault(record["step"], {"step": record["step"]}).update(record)
        i += 1
    parsed.records = list(by_step.values())
    return parsed


def parse_console_lines(text: str) -> list[dict]:
    """The per-step records of a console log, flat: ``[{"step": N, key: float, ...}, ...]``."""
    return parse_log(text).records


def write_metrics_jsonl(records: Iterable[Mapping[str, object]], path: str | Path) -> None:
    """Write records one JSON object per line (non-finite floats as JSON's NaN/Infinity tokens)."""
    with open(path, "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(dict(record)) + "\n")


def read_metrics_jsonl(path: str | Path) -> list[dict]:
    """Read ``metrics.jsonl`` back; every record must carry an int ``step``."""
    records = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        if not isinstance(record.get("step"), int):
            raise ValueError(f"{path}:{n} has no integer 'step'; each record is {{\"step\": int, ...}}")
        records.append(record)
    return records


def is_finite_record(record: Mapping[str, Any]) -> bool:
    """True when every metric in the record is a finite number."""
    return all(math.isfinite(float(v)) for k, v in record.items() if k != "step")
