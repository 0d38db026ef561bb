"""What the grader's kernel printed for each learner cell, in the small plain-text form the result keeps.

The run keeps each learner cell's outputs (validated and capped while they arrive: limit_output.py); this
step turns them into what a learner may read next to the checks: stream text, the text/plain form of
results and displays, errors with their traceback, and for rich outputs (HTML, images, JavaScript, ...)
only the names of their mime types, so nothing the learner's code produced is ever rendered as markup.
Every string is normalised (grading/text.py) and cut to a byte budget per cell and per run, counted on the
entries as they would be serialised, with the cut marked. The input is already bounded (max_output_kb per
cell), and each text is sliced before it is cleaned, so no step here copies more than the budget allows.
Only the learner's own cells come here: the grader's cells keep their outputs in their own collectors.
"""

from __future__ import annotations

import json
from typing import Any

from grading.result import CellReport
from grading.text import clean_text

CELL_BYTES = 4 * 1024  # one cell's stored outputs, serialised
RUN_BYTES = 64 * 1024  # every cell's together
CELL_OUTPUTS = 32  # entries per cell; later ones are dropped and the cell marked cut
MIME_TYPES = 5  # mime type names listed for one rich output
MIME_CHARS = 80  # one mime type's name
_EXPANSION = 4  # clean_text writes a control character as up to 6 characters: slice generously, then cut


def _utf8_prefix(text: str, room: int) -> str:
    """The longest prefix of `text` whose UTF-8 form fits in `room` bytes (text is clean: no surrogates)."""
    if room <= 0:
        return ""
    head = text[:room]  # a character takes at least one byte
    raw = head.encode("utf-8")
    return head if len(raw) <= room else raw[:room].decode("utf-8", "ignore")


def _joined(value: Any, limit: int, *, sep: str = "") -> str:
    """nbformat's multiline text (a str or a list of str; a traceback's lines with `sep`), at most `limit`
    characters, before cleaning: only what is kept is copied."""
    if isinstance(value, str):
        return value[:limit]
    parts: list[str] = []
    size = 0
    for part in value if isinstance(value, list) else []:
        if size >= limit:
            break
        if isinstance(part, str):
            piece = part[: limit - size]
            parts.append(piece + sep if len(piece) == len(part) else piece)
            size += len(parts[-1])
    return "".join(parts)


def _entry(out: dict[str, Any], limit: int) -> dict[str, Any] | None:
    """One output as the result keeps it (texts sliced to `limit` characters, not yet cleaned), or None."""
    kind = out.get("output_type")
    if kind == "stream":
        return {"kind": "stderr" if out.get("name") == "stderr" else "stdout", "text": _joined(out.get("text"), limit)}
    if kind == "error":
        text = _joined(out.get("traceback"), limit, sep="\n")
        if not text.strip():
            text = f"{_joined(out.get('ename'), 200)}: {_joined(out.get('evalue'), limit)}"
        return {"kind": "error", "text": text}
    if kind in ("execute_result", "display_data"):
        bundle = out.get("data")
        data: dict[str, Any] = bundle if isinstance(bundle, dict) else {}
        entry: dict[str, Any] = {"kind": "result" if kind == "execute_result" else "display"}
        entry["text"] = _joined(data.get("text/plain"), limit)
        rich = sorted(str(k)[:MIME_CHARS] for k in data if k != "text/plain")
        if rich:
            entry["mimes"] = [clean_text(m) for m in rich[:MIME_TYPES]]
        return entry
    return None


def _size(entry: dict[str, Any]) -> int:
    """Bytes `entry` takes in the stored JSON (with its separator)."""
    return len(json.dumps(entry, ensure_ascii=False).encode("utf-8")) + 2


def _fit(entry: dict[str, Any], text: str, room: int) -> str | None:
    """The longest prefix of `text` (near enough) with which `entry` fits in `room` bytes; None if none does."""
    base = _size({**entry, "text": ""})
    if base > room:
        return None
    fits = _utf8_prefix(text, room - base)
    # JSON escapes quotes, backslashes, newlines and tabs: trim until the serialised entry fits
    while fits and _size({**entry, "text": fits}) > room:
        fits = fits[: len(fits) - max(len(fits) // 8, 1)]
    return fits if fits or not text else None


def summarise(outputs: list[dict[str, Any]], *, room: int, marker: str = "") -> tuple[list[dict[str, Any]], bool]:
    """One cell's outputs as stored, at most `room` bytes serialised and CELL_OUTPUTS entries; True when
    something was cut (by this budget, or by the run's own output limit, whose `marker` stream is dropped)."""
    cut = bool(outputs) and bool(marker) and outputs[-1].get("output_type") == "stream"
    cut = cut and outputs[-1].get("text") == marker
    kept: list[dict[str, Any]] = []
    for out in outputs[:-1] if cut else outputs:
        entry = _entry(out, room * _EXPANSION) if isinstance(out, dict) else None
        if entry is None:
            continue
        if len(kept) >= CELL_OUTPUTS:
            return kept, True
        text = clean_text(entry.pop("text"))
        fits = _fit(entry, text, room)
        if fits is None:
            return kept, True
        entry["text"] = fits
        room -= _size(entry)
        kept.append(entry)
        if len(fits) < len(text):
            return kept, True
    return kept, cut


def attach(
    reports: list[CellReport],
    outputs: list[list[dict[str, Any]]],
    *,
    marker: str = "",
    cell_bytes: int = CELL_BYTES,
    run_bytes: int = RUN_BYTES,
) -> None:
    """Give each learner cell's report the outputs the grader saw (reports[i] <-> outputs[i], both over the
    submitted notebook's code cells), within `cell_bytes` a cell and `run_bytes` for the whole run."""
    left = run_bytes
    for i, report in enumerate(reports):
        raw = outputs[i] if i < len(outputs) else []
        kept, cut = summarise(raw, room=min(cell_bytes, left), marker=marker) if left > 0 else ([], bool(raw))
        left -= sum(_size(e) for e in kept)
        report.outputs, report.outputs_cut = kept, cut
