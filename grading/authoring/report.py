"""Plain-text helpers the authoring commands share: a summary table, a path as the author typed it."""

from __future__ import annotations

from pathlib import Path


def table(header: tuple[str, ...], rows: list[tuple]) -> str:
    cells = [tuple(str(x) for x in r) for r in [header, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
