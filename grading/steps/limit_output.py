"""Step 4: cap what a learner cell may print, both while it runs (memory) and in what is kept."""
from __future__ import annotations

import json
from typing import Any


def output_size(output: dict[str, Any]) -> int:
    """Bytes an output occupies once serialised (what the limit counts)."""
    return len(json.dumps(output, default=str).encode("utf-8"))


def truncate_outputs(outputs: list[dict[str, Any]], *, max_bytes: int, marker: str) -> tuple[list[dict[str, Any]], bool]:
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
