"""A submitted notebook as the submission page shows it, and two attempts compared cell by cell.

Pure functions of the stored upload (`Submission.notebook`, the bytes as uploaded) and the stored result:
no database. The grader clears a notebook's outputs and runs it again, and keeps per code cell its report
(status, message, time) and, since engine results carry them, the outputs its kernel printed for that cell
as bounded plain text (grading/result.py CellReport, grading/steps/graded_outputs.py); so a cell shows its
report and "Output when graded", and the outputs saved in the upload are shown apart, labelled as the
learner's own run. An older result without recorded outputs says so. Everything returned
is plain text for Jinja to escape: no output is ever rendered as HTML or run as script (text/html,
JavaScript and other rich outputs show their text/plain form or a note), and an image is shown only as a
PNG that really is one, up to IMAGE_MAX_BYTES. The upload holds none of the grader's cells, names or hidden
inputs (those exist only inside a grading run); the reports come from the result, scrubbed at the engine's
result boundary.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from grading.text import clean_text

SOURCE_MAX_CHARS = 20_000  # one cell's source as shown; the rest is cut with a note
OUTPUT_MAX_CHARS = 4_000  # one cell's text outputs together, as shown
IMAGE_MAX_BYTES = 64 * 1024  # a decoded PNG output; larger ones are left out with a note
GRADED_OUTPUTS_MAX = 32  # entries of one cell's recorded outputs shown (the engine keeps no more)
MAX_CELLS = 400  # cells shown (an upload is already capped in size and code cells by validate_upload)
DIFF_MAX_LINES = 400  # diff lines shown per changed cell
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
NOTEBOOK_MEDIA_TYPE = "application/x-ipynb+json"
_UNSAFE_FILENAME = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(slots=True, kw_only=True, frozen=True)
class OutputView:
    """One saved output: `kind` is text, error, image (then `png` is its base64) or omitted."""

    kind: str
    text: str = ""
    png: str = ""


@dataclass(slots=True, kw_only=True)
class CellView:
    position: int  # 1-based, over all cells
    cell_type: str  # code, markdown or raw
    source: str
    source_cut: bool = False
    code_index: int | None = None  # counts code cells, as CellReport.index does
    report: dict[str, Any] | None = None  # status, message, duration_s of the grading run
    outputs: list[OutputView] = field(default_factory=list)
    outputs_cut: bool = False
    graded: list[OutputView] | None = None  # what the grader's run printed; None: not recorded (older results)
    graded_cut: bool = False


@dataclass(slots=True, kw_only=True)
class NotebookView:
    readable: bool  # False: the stored bytes are not a notebook this page can show (download still works)
    cells: list[CellView] = field(default_factory=list)
    cells_cut: int = 0  # cells past MAX_CELLS, not shown


@dataclass(slots=True, kw_only=True)
class CellChange:
    """One cell of a comparison: `change` is same, changed, added or removed; `lines` are (tag, text) with
    tag ' ', '+', '-' or '@' (a hunk header), for changed cells only."""

    change: str
    cell_type: str
    old_position: int | None
    new_position: int | None
    lines: list[tuple[str, str]] = field(default_factory=list)
    lines_cut: bool = False


def notebook_disposition(sub: Any) -> str:
    """A download's Content-Disposition: an attachment named after the exercise and attempt, in characters
    no header or shell mistakes."""
    stem = _UNSAFE_FILENAME.sub("_", f"{sub.exercise_id}-attempt{int(sub.attempt)}")[:120]
    return f'attachment; filename="{stem}.ipynb"'


def load_cells(raw: bytes) -> list[dict[str, Any]] | None:
    """The cells of an uploaded notebook (JSON objects), or None when the bytes are not a notebook."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        return None
    return [c for c in cells if isinstance(c, dict)]


def _text(value: Any) -> str:
    """nbformat's multiline string (a str or a list of str), cleaned (grading/text.py)."""
    if isinstance(value, list):
        value = "".join(v for v in value if isinstance(v, str))
    return clean_text(value) if isinstance(value, str) else ""


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


def _png(value: Any) -> str | None:
    """The base64 of a real PNG within IMAGE_MAX_BYTES, else None."""
    if not isinstance(value, str):
        return None
    compact = "".join(value.split())
    if len(compact) > (IMAGE_MAX_BYTES * 4) // 3 + 4:
        return None
    try:
        decoded = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not decoded.startswith(PNG_SIGNATURE) or len(decoded) > IMAGE_MAX_BYTES:
        return None
    return base64.b64encode(decoded).decode("ascii")  # re-encoded: only base64 characters reach the page


def _output(out: dict[str, Any]) -> OutputView:
    kind = out.get("output_type")
    if kind == "stream":
        return OutputView(kind="text", text=_text(out.get("text")))
    if kind == "error":
        lines = [_text(out.get("ename")) + ": " + _text(out.get("evalue"))]
        trace = out.get("traceback")
        if isinstance(trace, list):
            lines = [_text(t) for t in trace if isinstance(t, str)] or lines
        return OutputView(kind="error", text="\n".join(lines))
    bundle = out.get("data")
    data: dict[str, Any] = bundle if isinstance(bundle, dict) else {}
    png = _png(data.get("image/png"))
    if png is not None:
        return OutputView(kind="image", png=png)
    if "text/plain" in data:
        return OutputView(kind="text", text=_text(data["text/plain"]))
    kinds = ", ".join(sorted(clean_text(str(k))[:60] for k in data)[:5]) or clean_text(str(kind))[:40]
    return OutputView(kind="omitted", text=kinds)


def _outputs(cell: dict[str, Any]) -> tuple[list[OutputView], bool]:
    """A code cell's saved outputs, their text capped at OUTPUT_MAX_CHARS together."""
    shown: list[OutputView] = []
    left = OUTPUT_MAX_CHARS
    raw = cell.get("outputs")
    for out in raw if isinstance(raw, list) else []:
        if not isinstance(out, dict):
            continue
        view = _output(out)
        if view.kind in ("text", "error"):
            text, cut = _cut(view.text, left)
            left -= len(text)
            shown.append(OutputView(kind=view.kind, text=text))
            if cut or left <= 0:
                return shown, True
        else:
            shown.append(view)
    return shown, False


def _graded_outputs(report: dict[str, Any]) -> tuple[list[OutputView] | None, bool]:
    """A stored report's outputs of the grading run (text kinds, and a note naming rich types), capped at
    OUTPUT_MAX_CHARS together: the stored result is read as untrusted as the upload."""
    raw = report.get("outputs")
    if not isinstance(raw, list):
        return None, False
    shown: list[OutputView] = []
    left = OUTPUT_MAX_CHARS
    for out in raw[:GRADED_OUTPUTS_MAX]:
        if not isinstance(out, dict):
            continue
        kind = {"stderr": "stderr", "error": "error"}.get(str(out.get("kind")), "text")
        text, cut = _cut(_text(out.get("text")), left)
        left -= len(text)
        if text:
            shown.append(OutputView(kind=kind, text=text))
        mimes = out.get("mimes")
        if isinstance(mimes, list) and mimes:
            names = ", ".join(clean_text(str(m))[:60] for m in mimes[:5])
            shown.append(OutputView(kind="omitted", text=names))
        if cut or left <= 0:
            return shown, True
    return shown, bool(report.get("outputs_cut")) or len(raw) > GRADED_OUTPUTS_MAX


def _seconds(value: Any) -> float:
    """A stored cell's duration; the stored result came from a kernel's run, so anything else reads as 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    return float(value)


def render_notebook(*, raw: bytes, result: dict[str, Any] | None) -> NotebookView:
    """The page's view of one upload: its cells, each code cell with its grading report and saved outputs."""
    cells = load_cells(raw)
    if cells is None:
        return NotebookView(readable=False)
    reports: dict[int, dict[str, Any]] = {}
    graded: dict[int, tuple[list[OutputView] | None, bool]] = {}
    for r in (result or {}).get("cells") or []:
        if isinstance(r, dict) and isinstance(r.get("index"), int):
            reports[r["index"]] = {
                "status": clean_text(str(r.get("status", "")))[:20],
                "message": clean_text(str(r.get("message", "")))[:OUTPUT_MAX_CHARS],
                "duration_s": _seconds(r.get("duration_s")),
            }
            graded[r["index"]] = _graded_outputs(r)
    view = NotebookView(readable=True, cells_cut=max(0, len(cells) - MAX_CELLS))
    code_index = 0
    for position, cell in enumerate(cells, start=1):
        cell_type = cell.get("cell_type") if cell.get("cell_type") in ("code", "markdown", "raw") else "raw"
        if position > MAX_CELLS:
            break
        source, source_cut = _cut(_text(cell.get("source")), SOURCE_MAX_CHARS)
        shown = CellView(position=position, cell_type=str(cell_type), source=source, source_cut=source_cut)
        if cell_type == "code":
            shown.code_index, shown.report = code_index, reports.get(code_index)
            shown.graded, shown.graded_cut = graded.get(code_index, (None, False))
            shown.outputs, shown.outputs_cut = _outputs(cell)
            code_index += 1
        view.cells.append(shown)
    return view


def _key(cell: dict[str, Any]) -> tuple[str, str]:
    return str(cell.get("cell_type", "")), _text(cell.get("source"))


def _ids(cells: list[dict[str, Any]]) -> list[str] | None:
    """The cells' ids when every cell has a distinct one (nbformat 4.5): attempts from one template keep them."""
    ids = [c.get("id") for c in cells]
    if all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids):
        return [str(i) for i in ids]
    return None


def _line_diff(old: str, new: str) -> tuple[list[tuple[str, str]], bool]:
    lines: list[tuple[str, str]] = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), n=2, lineterm=""):
        if line.startswith(("---", "+++")):
            continue
        tag = "@" if line.startswith("@@") else line[:1]
        lines.append((tag, line if tag == "@" else line[1:]))
    return (lines[:DIFF_MAX_LINES], len(lines) > DIFF_MAX_LINES)


def compare_notebooks(*, old_raw: bytes, new_raw: bytes) -> list[CellChange] | None:
    """Cell by cell, which cells of `old_raw` were kept, changed, removed, and which are new in `new_raw`,
    with a line diff of each changed cell's source (outputs are not compared: the grader does not keep them).
    Cells are matched by id when both notebooks give every cell one, else by type and source. None when
    either is not a notebook."""
    old, new = load_cells(old_raw), load_cells(new_raw)
    if old is None or new is None:
        return None
    old_ids, new_ids = _ids(old), _ids(new)
    by_id = old_ids is not None and new_ids is not None
    a: list[Any] = old_ids if by_id and old_ids is not None else [_key(c) for c in old]
    b: list[Any] = new_ids if by_id and new_ids is not None else [_key(c) for c in new]
    changes: list[CellChange] = []

    def pair(i: int, j: int) -> None:
        (old_type, old_src), (new_type, new_src) = _key(old[i]), _key(new[j])
        if (old_type, old_src) == (new_type, new_src):
            changes.append(CellChange(change="same", cell_type=new_type, old_position=i + 1, new_position=j + 1))
            return
        lines, cut = _line_diff(old_src, new_src)
        changes.append(
            CellChange(
                change="changed", cell_type=new_type, old_position=i + 1, new_position=j + 1, lines=lines, lines_cut=cut
            )
        )

    def removed(i: int) -> None:
        changes.append(CellChange(change="removed", cell_type=_key(old[i])[0], old_position=i + 1, new_position=None))

    def added(j: int) -> None:
        lines, cut = _line_diff("", _key(new[j])[1])
        changes.append(
            CellChange(
                change="added",
                cell_type=_key(new[j])[0],
                old_position=None,
                new_position=j + 1,
                lines=lines,
                lines_cut=cut,
            )
        )

    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            for k in range(i2 - i1):
                pair(i1 + k, j1 + k)
            continue
        paired = min(i2 - i1, j2 - j1) if op == "replace" and not by_id else 0
        for k in range(paired):  # content-matched: a replaced run of cells is read as edits, in order
            pair(i1 + k, j1 + k)
        for i in range(i1 + paired, i2):
            removed(i)
        for j in range(j1 + paired, j2):
            added(j)
    return changes


def changed_count(changes: list[CellChange]) -> dict[str, int]:
    """How many cells of each kind of change (the comparison's summary line)."""
    counts = {"same": 0, "changed": 0, "added": 0, "removed": 0}
    for c in changes:
        counts[c.change] += 1
    return counts
