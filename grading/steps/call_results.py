"""Which result of a cell of calls belongs to which check: the kernel publishes one result per call, in the
cell's order (kernel_side.extract with each=True), so counting splits them into the cell's parts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grading.steps.grader_cells import CALL_SLACK_S, GraderCell, payload_of
from grading.steps.kernel_io import CellRun


@dataclass(kw_only=True)
class CallResults:
    """What one cell of calls produced: per part label its payload (None: no usable result, `too_big` if
    for size), and how many published results that accounts for (where a re-run picks up)."""

    payloads: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    too_big: set[str] = field(default_factory=set)
    covered: int = 0
    ended_early: bool = False  # the cell stopped before its last part (the parts after it never ran)


def call_results(cell: GraderCell, done: CellRun, *, nonce: str) -> CallResults:
    """Split a cell of calls' results in time into its parts, by counting (kernel_side.extract, each=True).
    A call without a result in time (interrupted, or the cell ended early) scores as a timeout and the
    calls after it are re-run; with the kernel dead, or a result lost or unreadable, that part has no
    payload (one call without a result fails the whole check) and the parts after it are re-run."""
    got = [payload_of(out, nonce=nonce) for out in done.steps]
    lost = done.status == "dead" or done.truncated or done.flooded or bool(done.malformed)
    sized = done.over_size
    out = CallResults()
    for part in cell.parts:
        mine = got[out.covered : out.covered + part.steps]
        wires = [p["calls"].get(part.check) if p and isinstance(p.get("calls"), dict) else None for p in mine]
        if len(wires) == part.steps and all(w == {"__missing__": True} for w in wires):
            out.payloads[part.label] = {"nonce": nonce, "answers": {}, "calls": {part.check: {"__missing__": True}}}
            out.covered += part.steps
            continue
        results = [w[0] for w in wires if isinstance(w, list) and len(w) == 1]
        empty = not part.indices and wires == [[]]
        if empty or (len(results) == len(part.indices) == len(wires)):
            out.payloads[part.label] = {"nonce": nonce, "answers": {}, "calls": {part.check: results}}
            out.covered += part.steps
            continue
        out.ended_early = True
        if len(results) != len(wires) or lost:
            out.payloads[part.label] = None
            if sized:
                out.too_big.add(part.label)
            out.covered += part.steps  # this part failed as a whole: go on with the next one
            return out
        late = f"exceeded {part.timeout_s + CALL_SLACK_S:g} s"
        results.append({"__raised__": {"type": "__timeout__", "message": late}})
        out.payloads[part.label] = {"nonce": nonce, "answers": {}, "calls": {part.check: results}}
        out.covered += len(results)
        return out
    return out
