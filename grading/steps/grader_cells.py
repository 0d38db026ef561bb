"""The grader's own cells: a seed cell before the learner's code and extraction cells after it.

Their sources carry a random per-run name and nonce; their outputs are read here and never shown to
the learner. Expected values are never placed in them: function checks send only inputs.
"""
from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

import grading.kernel_side as kernel_side
from grading.exercise import Exercise

ANSWERS_MIME = "application/vnd.titangrade.answers+json"
_KERNEL_SOURCE = Path(kernel_side.__file__).read_text(encoding="utf-8")
DEFAULT_CALL_TIMEOUT_S = 10.0
CALL_SLACK_S = 1.5  # decoding the inputs and encoding the result, on top of a call's own time limit


@dataclass(frozen=True, kw_only=True)
class GraderCell:
    """A cell the learner never sees; `label` names it in messages, `budget_s` is its time limit."""

    label: str
    source: str
    budget_s: float
    check: str | None = None  # the function check whose one call this cell makes


@dataclass(kw_only=True)
class GraderPlan:
    nonce: str
    handle: str  # the kernel global holding the extractor closure
    seed: GraderCell
    extract: list[GraderCell] = field(default_factory=list)


def plan(exercise: Exercise, *, reference: dict[str, Any]) -> GraderPlan:
    """Seed + one extraction cell for plain answers + one per function check (a crash loses only it)."""
    m = exercise.manifest
    nonce = secrets.token_hex(16)
    handle = f"_tg_{secrets.token_hex(6)}"
    eager_torch = m.kernel_family != "light"
    seed_src = (
        "def _titangrade_boot():\n"
        "    ns = {'__name__': 'titangrade_kernel'}\n"
        f"    exec(compile({_KERNEL_SOURCE!r}, '<titangrade>', 'exec'), ns)\n"
        f"    return ns['install']({int(m.seed)}, {eager_torch!r})\n"
        f"{handle} = _titangrade_boot()\n"
        "del _titangrade_boot\n"
    )
    seed = GraderCell(label="seed", source=seed_src, budget_s=max(60.0, m.limits.cell_timeout_s))
    kinds = {a.name: a.kind for a in m.answers}
    read_s = min(DEFAULT_CALL_TIMEOUT_S, m.limits.cell_timeout_s)  # reading one answer may not outlast a cell
    cells = [GraderCell(
        label="answers",
        source=f"{handle}({nonce!r}, {kinds!r}, {{}}, {read_s!r})\n",
        budget_s=read_s * len(kinds) + 15.0)]
    checks = reference.get("checks", {})
    for check in m.checks:
        if check.kind != "function":
            continue
        spec = checks.get(check.name, {})
        timeout = float(spec.get("timeout_s", DEFAULT_CALL_TIMEOUT_S))
        calls = [{"args": c.get("args", []), "kwargs": c.get("kwargs", {})} for c in spec.get("calls", [])]
        # one cell per call: the grader's clock (budget_s) then bounds each call, whatever the kernel does
        # to its own alarm; the cells' payloads are merged under the check's label
        for call in calls or [None]:
            payload = {check.name: {"answer": check.answer, "calls": [call] if call else []}}
            cells.append(GraderCell(
                label=f"check {check.name}", check=check.name,
                source=(f"import json as _tg_json\n{handle}({nonce!r}, {{}}, _tg_json.loads({json.dumps(payload)!r}), "
                        f"{timeout!r})\ndel _tg_json\n"),
                budget_s=timeout + CALL_SLACK_S))
    return GraderPlan(nonce=nonce, handle=handle, seed=seed, extract=cells)


def as_cell(cell: GraderCell) -> nbformat.NotebookNode:
    return nbformat.v4.new_code_cell(cell.source)


def read_payload(outputs: list[dict[str, Any]], *, nonce: str) -> dict[str, Any] | None:
    """The answers payload from one extraction cell's outputs, or None if absent or forged."""
    for out in outputs:
        if out.get("output_type") not in ("display_data", "execute_result"):
            continue
        data = out.get("data", {}).get(ANSWERS_MIME)
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError:
                continue
        if isinstance(data, dict) and secrets.compare_digest(str(data.get("nonce", "")), nonce):
            return data
    return None
