"""`titangrade exercises build`: a master -> learner template, solution, answer file, mistake fixtures.

Generated files are outputs: `--check` rebuilds in memory and lists every file that differs from what
is on disk (stale, missing or no longer declared), so CI catches a hand edit or a forgotten build.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbformat import v4

from grading.authoring.master import AuthoringError, Master, Mistake, read_master
from grading.authoring.policy_note import policy_markdown
from grading.authoring.rules import HINTS_FIELD, check_rules, rule_hints
from grading.exercise import REPO_ROOT, Exercise

DEFAULT_FIXTURES_ROOT = REPO_ROOT / "tests" / "fixtures" / "notebooks"
MIN_MISTAKES = 2  # typical mistakes per exercise (tests/exercises/test_catalogue.py checks it too)
SIDECAR = "cases.json"


def master_path(ex: Exercise) -> Path:
    return ex.reference_dir / f"{ex.short_name}.py"


def has_master(ex: Exercise) -> bool:
    return master_path(ex).exists()


@dataclass
class Outputs:
    """Every file one master generates, as bytes, keyed by path."""

    exercise: Exercise
    master: Master
    files: dict[Path, bytes] = field(default_factory=dict)
    fixtures_dir: Path = Path()

    def stale(self) -> list[tuple[Path, str]]:
        """(path, why) for each generated file that differs from disk, and undeclared mistake fixtures."""
        out = []
        for path, data in self.files.items():
            if not path.exists():
                out.append((path, "missing"))
            elif path.read_bytes() != data:
                out.append((path, "stale"))
        for path in sorted(self.fixtures_dir.glob("mistake_*.ipynb")):
            if path not in self.files:
                out.append((path, "not declared in the master"))
        return out

    def write(self) -> list[Path]:
        """Write what changed; delete mistake fixtures the master no longer declares."""
        changed = []
        for path, why in self.stale():
            if why == "not declared in the master":
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(self.files[path])
            changed.append(path)
        return changed


def render(ex: Exercise, *, fixtures_root: Path = DEFAULT_FIXTURES_ROOT) -> Outputs:
    """Build every output of one exercise in memory, after checking the master against the manifest."""
    master = read_master(master_path(ex), ex.reference_dir / SIDECAR)
    check_consistency(ex, master)
    out = Outputs(ex, master, fixtures_dir=fixtures_root / ex.id)
    out.files[ex.notebook_path] = _notebook_bytes(ex, master, "template")
    out.files[ex.solution_path] = _notebook_bytes(ex, master, "solution")
    out.files[ex.answer_path] = answer_file_bytes(ex, master)
    for m in master.mistakes:
        out.files[out.fixtures_dir / f"mistake_{m.name}.ipynb"] = _notebook_bytes(ex, master, "solution", m)
    return out


def answer_file_bytes(ex: Exercise, master: Master) -> bytes:
    checks = {c.name: master.checks[c.name] for c in ex.manifest.checks}
    for name in checks:  # a failing hidden case's feedback is the hint of the rule(s) it names
        hints = rule_hints(ex, master, name)
        if hints:
            checks[name] = {**checks[name], HINTS_FIELD: hints}
    ref: dict[str, Any] = {"exercise_id": ex.id, "checks": checks}
    if master.harness:  # grader-owned launchers: re-run after the learner's cells (grading/harness.py)
        ref["harness"] = master.harness
    return (json.dumps(ref, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def _sources(master: Master, variant: str, mistake: Mistake | None) -> list[tuple[str, str]]:
    cells = [(c.kind, c.template if variant == "template" else c.solution) for c in master.learner_cells]
    if mistake is None:
        return cells
    for p in mistake.patch:
        hits = [i for i, (kind, src) in enumerate(cells) if kind == "code" and p["find"] in src]
        count = sum(cells[i][1].count(p["find"]) for i in hits)
        if count != 1:
            where = "nowhere in" if count == 0 else f"{count} times in"
            raise AuthoringError(
                master.path,
                mistake.line,
                f"mistake {mistake.name!r}: its patch text {_short(p['find'])} occurs {where} the "
                "solution's code cells",
                "quote solution text that occurs exactly once (add a neighbouring line to make it unique)",
            )
        kind, src = cells[hits[0]]
        cells[hits[0]] = (kind, src.replace(p["find"], p["replace"]))
    return cells


def _short(text: str) -> str:
    first = text.strip().split("\n")[0]
    return repr(first[:60] + ("..." if len(first) > 60 or "\n" in text.strip() else ""))


def mutant_notebook_bytes(ex: Exercise, master: Master, cell: int, source: str, mutant_id: str) -> bytes:
    """The solution with learner cell `cell` replaced by `source` (grading/authoring/mutants.py)."""
    cells = _sources(master, "solution", None)
    cells[cell] = (cells[cell][0], source)
    return _notebook_bytes(ex, master, "solution", cells=cells, meta={"mutant": mutant_id})


def _notebook_bytes(
    ex: Exercise,
    master: Master,
    variant: str,
    mistake: Mistake | None = None,
    *,
    cells: list[tuple[str, str]] | None = None,
    meta: dict[str, Any] | None = None,
) -> bytes:
    nb = v4.new_notebook()
    cells = list(cells) if cells is not None else _sources(master, variant, mistake)
    at = 1 if cells and cells[0][0] == "markdown" else 0  # right after the title cell
    cells.insert(at, ("markdown", policy_markdown(ex.manifest)))  # what the learner writes and may use
    for i, (kind, src) in enumerate(cells):
        cell = v4.new_code_cell(src) if kind == "code" else v4.new_markdown_cell(src)
        cell["id"] = f"{ex.short_name[:20]}-{i:02d}"  # stable ids: a rebuild is byte-identical
        nb.cells.append(cell)
    nb.metadata.update(master.metadata)
    meta = {"exercise_id": ex.id, **(meta or {})}
    if mistake is not None:
        meta["expect"] = {"status": mistake.status, "score": mistake.score, "feedback_contains": mistake.fails}
    nb.metadata["titangrade"] = meta
    nbformat.validate(nb)
    return (nbformat.writes(nb) + "\n").encode("utf-8")


def defined_names(master: Master) -> set[str]:
    """Top-level names the solution's code cells bind (def, class, assignment, import, for, with)."""
    names: set[str] = set()
    for cell in master.learner_cells:
        if cell.kind != "code":
            continue
        src = "\n".join(ln for ln in cell.solution.split("\n") if not ln.lstrip().startswith(("%", "!")))
        try:
            tree = ast.parse(src)
        except SyntaxError as exc:
            raise AuthoringError(
                master.path,
                cell.line + (exc.lineno or 1),
                f"the solution cell does not parse: {exc.msg}",
                "fix the Python syntax",
            ) from None
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
    return names


def check_consistency(ex: Exercise, master: Master) -> None:
    """The master and the manifest agree: every answer defined, every check declared with its data."""
    toml = ex.directory / "exercise.toml"
    names = defined_names(master)
    for answer in ex.manifest.answers:
        if answer.name not in names:
            raise AuthoringError(
                toml,
                _toml_line(toml, f'name = "{answer.name}"', f'"{answer.name}"'),
                f"answer {answer.name!r} is never defined by the master's solution",
                f"define `{answer.name}` in a solution cell of {master.path.name}, or fix the answer's name here",
            )
    declared = {c.name for c in ex.manifest.checks}
    for check in ex.manifest.checks:
        if check.name not in master.checks:
            raise AuthoringError(
                master.path,
                master.grader_line or 1,
                f"check {check.name!r} (exercise.toml) has no entry in CHECKS",
                f'add "{check.name}": {{"feedback": {{"en": ..., "zh": ...}}, ...}} to CHECKS '
                'in the `# %% tags=["grader"]` cell',
            )
        data = master.checks[check.name]
        if check.kind == "function" and not data.get("calls"):
            raise AuthoringError(
                master.path,
                master.check_lines[check.name],
                f"function check {check.name!r} has no calls",
                'give it "calls": [{"args": [...], "expect": ..., "public": True}]',
            )
        if check.kind not in ("function", "metric_trace") and "expected" not in data:
            raise AuthoringError(
                master.path,
                master.check_lines[check.name],
                f"{check.kind} check {check.name!r} has no expected value",
                'add "expected": <the value the solution produces>',
            )
    for name in master.checks:
        if name not in declared:
            raise AuthoringError(
                master.path,
                master.check_lines[name],
                f"CHECKS declares {name!r}, which exercise.toml does not list",
                "add a [[checks]] entry for it to exercise.toml, or delete it here",
            )
    if len(master.mistakes) < MIN_MISTAKES:
        raise AuthoringError(
            master.path,
            master.mistakes[0].line if master.mistakes else master.grader_line or 1,
            f"MISTAKES declares {len(master.mistakes)} typical mistake(s); an exercise needs at least "
            f"{MIN_MISTAKES}, each proven by `validate` to lose points",
            'add one: {"name": ..., "score": ..., "fails": {check: feedback phrase}, "patch": [{"find": ..., '
            '"replace": ...}]}',
        )
    for m in master.mistakes:
        for failing in m.fails:
            if failing not in declared:
                raise AuthoringError(
                    master.path,
                    m.line,
                    f"mistake {m.name!r} must fail {failing!r}, which is not a check of this exercise",
                    f"use one of {sorted(declared)}",
                )
    if master.equivalent:  # a stale declaration is an authoring error (docs/exercise-format.md#mutants)
        from grading.authoring.mutants import generate, stale_equivalents

        stale = stale_equivalents(master, generate(master, {c.name: c.answer for c in ex.manifest.checks}))
        if stale:
            raise stale[0]
    seen: set[str] = set()
    for m in master.mistakes:
        if all(p["find"] == p["replace"] for p in m.patch):
            raise AuthoringError(
                master.path,
                m.line,
                f"mistake {m.name!r}: its patch replaces the text with itself",
                "write the typical mistake into `replace`",
            )
        if m.name in seen:
            raise AuthoringError(master.path, m.line, f"mistake {m.name!r} is declared twice", "rename one")
        seen.add(m.name)
    check_rules(ex, master)  # every stated rule has a case (grading/authoring/rules.py)


def _toml_line(path: Path, *needles: str) -> int:
    """The first line holding the first needle found (the declaration before other mentions), else 1."""
    lines = path.read_text(encoding="utf-8").split("\n")
    for needle in needles:
        for i, line in enumerate(lines, start=1):
            if needle in line:
                return i
    return 1
