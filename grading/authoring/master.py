"""Read an exercise's master file: a jupytext percent-format `.py` under `reference/<id>/`.

One master holds every cell of the learner template and the solution, the solution regions (with the
template's stub beside them), the public self-check, and grader-only cells that declare the hidden
cases, expected values and typical mistakes as literal data. Format: docs/exercise-format.md.
Every error names the file, the line and the fix (`AuthoringError`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grading.authoring.equivalent import Equivalent, parse_equivalents

CELL_MARKER = re.compile(r"^# %%(?P<rest>(?:[ \t].*)?)$")
BEGIN, STUB, END = "### BEGIN SOLUTION", "### STUB", "### END SOLUTION"
REGION_MARKER = re.compile(r"^[ \t]*(### BEGIN SOLUTION|### STUB|### END SOLUTION)[ \t]*$")
COMMENTED = re.compile(r"^(?P<indent>[ \t]*)#(?: (?P<rest>.*))?$")
MAGIC = re.compile(r"^# (?=%%?[A-Za-z]|!)")  # jupytext comments out magics in .py files
GRADER_TAG, SELF_CHECK_TAG = "grader", "self-check"
HARNESS_TAG = "harness"  # a launcher the learner sees but the grader re-runs from the master (grader-owned)
KNOWN_TAGS = {GRADER_TAG, SELF_CHECK_TAG, HARNESS_TAG}
GRADER_NAMES = {"CHECKS", "MISTAKES", "EQUIVALENT", "RULES"}  # RULES: grading/authoring/rules.py


class AuthoringError(ValueError):
    """A mistake in an exercise's source, located at `path:line`, with the fix."""

    def __init__(self, path: Path | str, line: int, problem: str, fix: str) -> None:
        self.path, self.line, self.problem, self.fix = Path(path), line, problem, fix
        super().__init__(f"{path}:{line}: {problem}\n    fix: {fix}")


@dataclass
class Cell:
    kind: str  # "code" | "markdown"
    template: str
    solution: str
    line: int  # 1-based line of the cell's `# %%` marker
    tags: tuple[str, ...] = ()
    has_solution: bool = False
    region: frozenset[int] = frozenset()  # 0-based indexes of `solution` lines inside a solution region
    line_nos: tuple[int, ...] = ()  # the master file's line of each `solution` line


@dataclass
class Mistake:
    name: str
    status: str
    score: float
    fails: dict[str, str]  # check name -> substring its feedback must contain
    patch: list[dict[str, str]]  # [{"find": ..., "replace": ...}] applied to the solution's code cells
    line: int


@dataclass
class Master:
    path: Path
    metadata: dict[str, Any]
    cells: list[Cell]
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    check_lines: dict[str, int] = field(default_factory=dict)
    mistakes: list[Mistake] = field(default_factory=list)
    equivalent: list[Equivalent] = field(default_factory=list)
    grader_line: int = 0
    rules: Any = None  # RULES as written (None: not declared); checked by grading/authoring/rules.py
    rules_line: int = 0
    grader_sources: list[tuple[int, str]] = field(default_factory=list)  # (first line, source) per grader cell

    @property
    def learner_cells(self) -> list[Cell]:
        return [c for c in self.cells if GRADER_TAG not in c.tags]

    @property
    def harness(self) -> list[str]:
        """Sources of the grader-owned launcher cells, in order (docs/exercise-format.md)."""
        return [c.solution for c in self.cells if HARNESS_TAG in c.tags and c.kind == "code"]


def read_master(path: Path, sidecar: Path | None = None) -> Master:
    """Parse a master file; `sidecar` (cases.json) may hold bulky check data instead of the grader cell."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    metadata, start = _header(path, lines)
    chunks: list[tuple[int, str, list[str]]] = []  # (marker line, marker rest, body lines)
    for i in range(start, len(lines)):
        m = CELL_MARKER.match(lines[i])
        if m:
            chunks.append((i + 1, m.group("rest").strip(), []))
        elif chunks:
            chunks[-1][2].append(lines[i])
        elif lines[i].strip():
            raise AuthoringError(
                path,
                i + 1,
                "text before the first `# %%` cell marker",
                "start every cell with a `# %%` line (`# %% [markdown]` for text)",
            )
    master = Master(path=path, metadata=metadata, cells=[_cell(path, *c) for c in chunks])
    if not master.cells:
        raise AuthoringError(path, 1, "the master has no cells", "add `# %%` cells (see docs/exercise-format.md)")
    _grader_data(master, lines)
    if sidecar is not None and sidecar.exists():
        _merge_sidecar(master, sidecar)
    return master


def _header(path: Path, lines: list[str]) -> tuple[dict[str, Any], int]:
    """The jupytext YAML header (`# ---` ... `# ---`): notebook metadata under `jupyter:`."""
    if not lines or lines[0] != "# ---":
        return {}, 0
    for end in range(1, len(lines)):
        if lines[end] == "# ---":
            import yaml  # jupytext's own dependency; only authors need it (the dev extra)

            body = "\n".join(COMMENTED.sub(lambda m: m.group("rest") or "", ln) for ln in lines[1:end])
            try:
                meta = (yaml.safe_load(body) or {}).get("jupyter", {})
            except yaml.YAMLError as exc:
                raise AuthoringError(
                    path,
                    1,
                    f"the header is not valid YAML ({exc})",
                    "keep the header as jupytext writes it: `# ---`, `# jupyter:`, ..., `# ---`",
                ) from None
            meta.pop("jupytext", None)
            return meta, end + 1
    raise AuthoringError(path, 1, "the `# ---` header is never closed", "end the header with a `# ---` line")


def _marker_meta(path: Path, line: int, rest: str) -> tuple[str, tuple[str, ...]]:
    kind = "code"
    if rest.startswith("[markdown]"):
        kind, rest = "markdown", rest[len("[markdown]") :].strip()
    tags: tuple[str, ...] = ()
    for m in re.finditer(r"(\w+)=(\[[^\]]*\]|\"[^\"]*\"|\S+)", rest):
        if m.group(1) == "tags":
            try:
                tags = tuple(json.loads(m.group(2)))
            except json.JSONDecodeError:
                raise AuthoringError(
                    path, line, f"cell tags {m.group(2)} are not a JSON list", 'write tags as `# %% tags=["grader"]`'
                ) from None
    unknown = set(tags) - KNOWN_TAGS
    if unknown:
        raise AuthoringError(
            path, line, f"unknown cell tag {sorted(unknown)[0]!r}", f"use one of {sorted(KNOWN_TAGS)} (or no tag)"
        )
    return kind, tags


def _strip_blank(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def _cell(path: Path, line: int, rest: str, body: list[str]) -> Cell:
    kind, tags = _marker_meta(path, line, rest)
    lead = len(body) - len(_strip_blank([*body, "x"])) + 1  # blank lines right after the marker
    body = _strip_blank(body)
    if kind == "markdown":
        out = []
        for j, ln in enumerate(body):
            m = COMMENTED.match(ln)
            if not m or m.group("indent"):
                raise AuthoringError(
                    path,
                    line + 1 + lead + j,
                    "a markdown line is not a `# ` comment",
                    "prefix every line of a markdown cell with `# ` (an empty line with `#`)",
                )
            out.append(m.group("rest") or "")
        text = "\n".join(out)
        return Cell("markdown", text, text, line, tags)
    template: list[str] = []
    solution: list[str] = []
    in_region: list[bool] = []  # per `solution` line
    line_nos: list[int] = []
    state, begin_line, stub_given, indent = "common", 0, False, ""
    for j, raw in enumerate(body, start=line + 1 + lead):
        m = REGION_MARKER.match(raw)
        marker = m.group(1) if m else None
        if marker == BEGIN:
            if state != "common":
                raise AuthoringError(
                    path,
                    j,
                    f"`{BEGIN}` inside the solution region opened on line {begin_line}",
                    f"close that region with `{END}` first",
                )
            state, begin_line, stub_given = "solution", j, False
            indent = raw[: len(raw) - len(raw.lstrip())]
        elif marker == STUB:
            if state != "solution":
                raise AuthoringError(
                    path, j, f"`{STUB}` outside a solution region", f"put `{STUB}` between `{BEGIN}` and `{END}`"
                )
            state, stub_given = "stub", True
        elif marker == END:
            if state == "common":
                raise AuthoringError(
                    path,
                    j,
                    f"`{END}` without a matching `{BEGIN}`",
                    f"add `{BEGIN}` before the solution lines, or delete this line",
                )
            if not stub_given:  # nbgrader's default stub
                template.append(f"{indent}raise NotImplementedError()")
            state = "common"
        elif state == "common":
            line_text = MAGIC.sub("", raw)
            template.append(line_text)
            solution.append(line_text)
            in_region.append(False)
            line_nos.append(j)
        elif state == "solution":
            solution.append(MAGIC.sub("", raw))
            in_region.append(True)
            line_nos.append(j)
        else:
            c = COMMENTED.match(raw)
            if not c:
                raise AuthoringError(
                    path,
                    j,
                    "a stub line is not commented out",
                    f"prefix each line between `{STUB}` and `{END}` with `# ` so the master still runs as the solution",
                )
            template.append("" if c.group("rest") is None else c.group("indent") + c.group("rest"))
    if state != "common":
        raise AuthoringError(
            path,
            begin_line,
            "the solution region opened here is never closed",
            f"add `{END}` after the solution's last line (before the next `# %%`)",
        )
    has_solution = any(REGION_MARKER.match(r) for r in body)
    kept = _strip_blank(solution)
    lead_sol = next((k for k, ln in enumerate(solution) if ln.strip()), 0)
    region = frozenset(k - lead_sol for k, inside in enumerate(in_region) if inside and 0 <= k - lead_sol < len(kept))
    return Cell(
        "code",
        "\n".join(_strip_blank(template)),
        "\n".join(kept),
        line,
        tags,
        has_solution,
        region,
        tuple(line_nos[lead_sol : lead_sol + len(kept)]),
    )


def _grader_data(master: Master, lines: list[str]) -> None:
    """CHECKS and MISTAKES from the grader cells: literal assignments only (data, never code)."""
    for cell in master.cells:
        if GRADER_TAG not in cell.tags:
            continue
        if cell.kind != "code":
            raise AuthoringError(
                master.path,
                cell.line,
                "a grader cell must be a code cell",
                'write it as `# %% tags=["grader"]` holding `CHECKS = {...}`',
            )
        master.grader_line = master.grader_line or cell.line
        offset = cell.line + 1 + _first_nonblank(lines, cell.line)
        master.grader_sources.append((offset, cell.solution))
        try:
            tree = ast.parse(cell.solution)
        except SyntaxError as exc:
            raise AuthoringError(
                master.path,
                offset + (exc.lineno or 1) - 1,
                f"grader cell: {exc.msg}",
                "the grader cell holds Python literals: `CHECKS = {...}` and `MISTAKES = [...]`",
            ) from None
        for node in tree.body:
            at = offset + node.lineno - 1
            if not (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in GRADER_NAMES
            ):
                raise AuthoringError(
                    master.path,
                    at,
                    "a grader cell may only assign CHECKS, MISTAKES, RULES and EQUIVALENT",
                    "move code to a normal cell; the grader cell is data (literals), not code",
                )
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise AuthoringError(
                    master.path,
                    at,
                    f"{node.targets[0].id} is not a literal",
                    "write the values out (dicts, lists, strings, numbers, True/False/None)",
                ) from None
            if node.targets[0].id == "CHECKS":
                _add_checks(master, value, at, cell.solution, offset)
            elif node.targets[0].id == "EQUIVALENT":
                master.equivalent += parse_equivalents(master.path, value, at, _finder(cell.solution, offset, at))
            elif node.targets[0].id == "RULES":
                master.rules, master.rules_line = value, at
            elif node.targets[0].id == "MISTAKES":
                master.mistakes += [
                    _mistake(master.path, m, _line_of(cell.solution, offset, repr(m.get("name")), at))
                    for m in _list_of_dicts(master.path, value, at)
                ]


def _finder(source: str, offset: int, default: int) -> Callable[[str], int]:
    """The line of a quoted name in a grader cell (for EQUIVALENT entries)."""
    return lambda name: _line_of(source, offset, repr(name), default)


def _first_nonblank(lines: list[str], marker_line: int) -> int:
    n = 0
    while marker_line + n < len(lines) and not lines[marker_line + n].strip():
        n += 1
    return n


def _line_of(source: str, offset: int, needle: str, default: int) -> int:
    """The line holding a quoted name (either quote style), else `default`."""
    other = needle.replace("'", '"') if needle.startswith("'") else needle.replace('"', "'")
    for k, ln in enumerate(source.split("\n")):
        if needle in ln or other in ln:
            return offset + k
    return default


def _add_checks(master: Master, value: Any, at: int, source: str, offset: int) -> None:
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise AuthoringError(
            master.path,
            at,
            "CHECKS must be a dict of check name -> dict",
            'write CHECKS = {"check_name": {"feedback": {...}, ...}}',
        )
    for name, data in value.items():
        if name in master.checks:
            raise AuthoringError(master.path, at, f"check {name!r} is declared twice", "keep one entry")
        master.checks[name] = data
        master.check_lines[name] = _line_of(source, offset, repr(name), at)


def _list_of_dicts(path: Path, value: Any, at: int) -> list[dict]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise AuthoringError(
            path,
            at,
            "MISTAKES must be a list of dicts",
            'write MISTAKES = [{"name": ..., "score": ..., "fails": {...}, "patch": [...]}]',
        )
    return value


def _mistake(path: Path, m: dict, line: int) -> Mistake:
    required = {"name", "score", "fails", "patch"}
    missing = required - m.keys()
    extra = m.keys() - required - {"status"}
    if missing or extra:
        raise AuthoringError(
            path,
            line,
            f"mistake {m.get('name')!r}: "
            + (f"missing {sorted(missing)}" if missing else f"unknown keys {sorted(extra)}"),
            "a mistake has name, score, fails {check: feedback substring}, patch "
            "[{find, replace}] and optionally status",
        )
    if not re.fullmatch(r"[a-z][a-z0-9_]*", str(m["name"])):
        raise AuthoringError(path, line, f"mistake name {m['name']!r} is not snake case", "use e.g. 'first_guess'")
    patch = m["patch"]
    if (
        not isinstance(patch, list)
        or not patch
        or not all(isinstance(p, dict) and set(p) == {"find", "replace"} for p in patch)
    ):
        raise AuthoringError(
            path,
            line,
            f"mistake {m['name']!r}: patch must be a non-empty list of {{'find': ..., 'replace': ...}}",
            "give the solution text to find and its replacement",
        )
    if not isinstance(m["fails"], dict) or not m["fails"]:
        raise AuthoringError(
            path,
            line,
            f"mistake {m['name']!r} names no check it must fail",
            "set fails = {check_name: 'a phrase its feedback must contain'}",
        )
    return Mistake(m["name"], m.get("status", "graded"), m["score"], m["fails"], patch, line)


def _merge_sidecar(master: Master, sidecar: Path) -> None:
    try:
        data = json.loads(sidecar.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise AuthoringError(sidecar, exc.lineno, f"not valid JSON ({exc.msg})", "fix the JSON syntax") from None
    for name, entry in data.get("checks", {}).items():
        if name in master.checks:
            raise AuthoringError(
                sidecar, 1, f"check {name!r} is declared both here and in the master", "keep it in one place"
            )
        master.checks[name] = entry
        master.check_lines[name] = 1
