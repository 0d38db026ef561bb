"""Step 4: cap what a learner cell may print, both while it runs (memory) and in what is kept."""

from __future__ import annotations

import json
from typing import Any

# Messages, not only bytes: 360,000 tiny signed iopub messages cost the grader 42.6 CPU-s (an honest run of
# the same length: 3.6 s) under the byte caps, since reading and checking one costs CPU however small it is.
# ipykernel batches plain print() into a few messages a second; print(..., flush=True) in a loop is not.
CELL_FLOOD_MESSAGES = 20_000  # messages while one cell runs (any socket, any parent); past it, a flood
RUN_MESSAGES = 50_000  # messages of a whole kernel session; past it a learner cell is stopped as a flood


def output_size(output: dict[str, Any]) -> int:
    """Bytes an output occupies once serialised (what the limit counts)."""
    return len(json.dumps(output, default=str).encode("utf-8"))


def truncate_outputs(
    outputs: list[dict[str, Any]], *, max_bytes: int, marker: str
) -> tuple[list[dict[str, Any]], bool]:
    """Keep outputs up to `max_bytes` (a stream cut mid-text), then one marker stream; True if cut."""
    kept: list[dict[str, Any]] = []
    used = 0
    for out in outputs:
        size = output_size(out)
        if used + size <= max_bytes:
            kept.append(out)
            used += size
            continue
        room = max_bytes - used
        if out.get("output_type") == "stream" and room > 0:
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            kept.append({**out, "text": text[:room]})
        kept.append({"output_type": "stream", "name": "stderr", "text": marker})
        return kept, True
    return kept, False


class OutputBudget:
    """Streaming form of the same rule, fed one message content at a time while a cell runs."""

    def __init__(self, max_bytes: int) -> None:
        self.remaining = max_bytes
        self.truncated = False

    def admit(self, msg_type: str, content: dict[str, Any]) -> dict[str, Any] | None:
        """The content to keep (possibly a cut stream), or None to drop it."""
        if self.truncated:
            return None
        size = output_size(content)
        if size <= self.remaining:
            self.remaining -= size
            return content
        self.truncated = True
        if msg_type == "stream" and self.remaining > 0:
            cut = {**content, "text": content.get("text", "")[: self.remaining]}
            self.remaining = 0
            return cut
        return None


class Malformed(ValueError):
    """An iopub message whose shape is not what its type promises (the kernel's fault, never ours)."""


def _text(value: Any, what: str) -> str:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    if not isinstance(value, str):
        raise Malformed(f"{what} is not text")
    return value


def _mapping(value: Any, what: str, *, required: bool) -> dict[str, Any]:
    if value is None and not required:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise Malformed(f"{what} is not an object with text keys")
    return value


def to_output(kind: str, content: dict[str, Any]) -> dict[str, Any]:
    """The nbformat output for one iopub message's content; raises Malformed for any other shape."""
    if kind == "stream":
        name = content.get("name")
        if name not in ("stdout", "stderr"):
            raise Malformed("stream name is not stdout or stderr")
        return {"output_type": "stream", "name": name, "text": _text(content.get("text"), "stream text")}
    if kind == "error":
        trace = content.get("traceback", [])
        if not isinstance(trace, list):
            raise Malformed("traceback is not a list")
        return {
            "output_type": "error",
            "ename": _text(content.get("ename"), "ename"),
            "evalue": _text(content.get("evalue"), "evalue"),
            "traceback": [_text(line, "traceback line") for line in trace],
        }
    if kind in ("display_data", "execute_result", "update_display_data"):
        data = _mapping(content.get("data"), "data", required=True)
        out: dict[str, Any] = {
            "output_type": kind,
            "data": data,
            "metadata": _mapping(content.get("metadata"), "metadata", required=False),
        }
        if kind == "execute_result":
            count = content.get("execution_count")
            if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
                raise Malformed("execution_count is not a number")
            out["execution_count"] = count
        return out
    raise Malformed(f"{kind!r} is not an output message")


class OutputCollector:
    """One cell's kept outputs: validated, streams merged, clear_output and display updates applied,
    and everything kept counted against `max_bytes` (cut, then one marker stream)."""

    KINDS = ("stream", "display_data", "execute_result", "error", "update_display_data", "clear_output")

    def __init__(self, *, max_bytes: int, marker: str = "", keep: Any = None) -> None:
        self.budget = OutputBudget(max_bytes)
        self.marker = marker
        self.keep = keep  # optional filter: (output) -> bool, e.g. only the grader's payload
        self.outputs: list[dict[str, Any]] = []
        self._display: dict[str, list[dict[str, Any]]] = {}  # display_id -> outputs showing it
        self._clear_pending = False

    @property
    def truncated(self) -> bool:
        return self.budget.truncated

    def add(self, kind: str, content: dict[str, Any]) -> None:
        if kind == "clear_output":
            wait = content.get("wait", False)
            if not isinstance(wait, bool):
                raise Malformed("clear_output wait is not a boolean")
            self._clear_pending = True
            if not wait:
                self._clear()
            return
        out = to_output(kind, content)
        display_id = _mapping(content.get("transient"), "transient", required=False).get("display_id")
        if display_id is not None and not isinstance(display_id, str):
            raise Malformed("display_id is not text")
        if kind == "update_display_data":
            self._update(display_id, out)
            return
        if self._clear_pending:
            self._clear()
        if self.keep is not None and not self.keep(out):
            return
        self._append(out, display_id)

    def _clear(self) -> None:
        self.outputs.clear()
        self._display.clear()
        self._clear_pending = False

    def _append(self, out: dict[str, Any], display_id: str | None) -> None:
        last = self.outputs[-1] if self.outputs else None
        merge = (
            last is not None
            and out["output_type"] == "stream"
            and last.get("output_type") == "stream"
            and last.get("name") == out["name"]
            and not self.budget.truncated
        )
        kept = self.budget.admit(out["output_type"], {"text": out["text"]} if merge else out)
        if kept is not None:
            if merge and last is not None:
                last["text"] += kept["text"]
            else:
                self.outputs.append(kept)
                if display_id is not None:
                    self._display.setdefault(display_id, []).append(kept)
        if self.budget.truncated and self.marker and not any(o is self._mark for o in self.outputs):
            self.outputs.append(self._mark)

    @property
    def _mark(self) -> dict[str, Any]:
        if not hasattr(self, "_marker_output"):
            self._marker_output = {"output_type": "stream", "name": "stderr", "text": self.marker}
        return self._marker_output

    def _update(self, display_id: str | None, out: dict[str, Any]) -> None:
        if display_id is None:
            raise Malformed("update_display_data without a display_id")
        targets = self._display.get(display_id, [])
        if not targets or self.budget.admit("display_data", {"data": out["data"]}) is None:
            return
        for target in targets:
            target["data"], target["metadata"] = out["data"], out["metadata"]
