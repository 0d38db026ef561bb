"""One-off: turn today's generated files (template, solution, answer file, mistake fixtures) into masters.

Run once per exercise (issue 11); afterwards the master is the source and `titangrade exercises build`
regenerates the files. Kept in history only for the record of how the conversion was done.
"""
from __future__ import annotations

import ast
import difflib
import json
import pprint
import sys
from pathlib import Path

import nbformat
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from grading.exercise import Catalogue  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "notebooks"
INLINE_LIMIT = 16000  # answer data larger than this goes to cases.json next to the master


def _esc(line: str) -> str:
    return "# " + line if line.startswith(("%", "!")) else line


def _comment(line: str) -> str:
    if not line:
        return "#"
    body = line.lstrip(" \t")
    return line[: len(line) - len(body)] + "# " + body


def _indent(lines: list[str]) -> str:
    for ln in lines:
        if ln.strip():
            return ln[: len(ln) - len(ln.lstrip())]
    return ""


def code_cell(template: str, solution: str) -> list[str]:
    a, b = template.split("\n"), solution.split("\n")
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out += [_esc(x) for x in a[i1:i2]]
            continue
        ind = _indent(b[j1:j2] + a[i1:i2])
        out.append(f"{ind}### BEGIN SOLUTION")
        out += [_esc(x) for x in b[j1:j2]]
        out.append(f"{ind}### STUB")
        out += [_comment(x) for x in a[i1:i2]]
        out.append(f"{ind}### END SOLUTION")
    return out


def patches(sol_cells: list[str], mistake_cells: list[str]) -> list[dict[str, str]]:
    out = []
    whole = "\n\x00\n".join(sol_cells)
    for s, m in zip(sol_cells, mistake_cells):
        if s == m:
            continue
        a, b = s.split("\n"), m.split("\n")
        ops = [o for o in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if o[0] != "equal"]
        i1, i2, j1, j2 = ops[0][1], ops[-1][2], ops[0][3], ops[-1][4]
        for k in range(1 if j1 == j2 else 0, len(a) + 1):
            lo, hi = max(i1 - k, 0), min(i2 + k, len(a))
            find = "\n".join(a[lo:hi])
            if find and whole.count(find) == 1:
                break
        else:
            raise AssertionError("no unique patch")
        replace = "\n".join(a[lo:i1] + b[j1:j2] + a[i2:hi])
        out.append({"find": find, "replace": replace})
    return out


def literal(name: str, value) -> str:
    text = f"{name} = " + pprint.pformat(value, width=110, sort_dicts=False)
    assert ast.literal_eval(text.split(" = ", 1)[1]) == value
    return text


def convert(ex) -> None:
    tmpl = nbformat.read(ex.notebook_path, as_version=4)
    sol = nbformat.read(ex.solution_path, as_version=4)
    ref = json.loads(ex.answer_path.read_text(encoding="utf-8"))
    assert len(tmpl.cells) == len(sol.cells)
    meta = json.loads(json.dumps({k: v for k, v in sol.metadata.items() if k != "titangrade"}))
    lines = ["# ---"] + [("# " + ln).rstrip() for ln in yaml.safe_dump({"jupyter": meta}, sort_keys=False,
                                                                       allow_unicode=True).strip().split("\n")]
    lines += ["# ---"]
    for t, s in zip(tmpl.cells, sol.cells):
        lines.append("")
        if s.cell_type == "markdown":
            assert t.source == s.source
            lines.append("# %% [markdown]")
            lines += [("# " + x) if x else "#" for x in s.source.split("\n")]
        elif t.source == s.source:
            lines.append('# %% tags=["self-check"]' if "_show(" in s.source else "# %%")
            lines += [_esc(x) for x in s.source.split("\n")]
        else:
            lines.append("# %%")
            lines += code_cell(t.source, s.source)
    sol_code = [c.source for c in sol.cells if c.cell_type == "code"]
    mistakes = []
    for path in sorted((FIXTURES / ex.id).glob("mistake_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        exp = nb.metadata["titangrade"]["expect"]
        assert [c.source for c in nb.cells if c.cell_type == "markdown"] == \
            [c.source for c in sol.cells if c.cell_type == "markdown"]
        entry = {"name": path.stem[len("mistake_"):]}
        if exp["status"] != "graded":
            entry["status"] = exp["status"]
        entry.update(score=exp["score"], fails=exp["feedback_contains"],
                     patch=patches(sol_code, [c.source for c in nb.cells if c.cell_type == "code"]))
        mistakes.append(entry)
    lines += ["", '# %% tags=["grader"]',
              "# Grader only: never in the template or the solution. Hidden cases with their expected values"]
    sidecar = ex.reference_dir / "cases.json"
    if len(json.dumps(ref["checks"], ensure_ascii=False)) > INLINE_LIMIT:
        lines += ["# (the bulky per-check data is in cases.json next to this file), and typical mistakes as",
                  "# patches of the solution with the score and the check each must fail."]
        sidecar.write_text(json.dumps({"checks": ref["checks"]}, indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
    else:
        lines += ["# (CHECKS: the answer file), and typical mistakes as patches of the solution with the score",
                  "# and the check each must fail."]
        lines += literal("CHECKS", ref["checks"]).split("\n")
        lines.append("")
    lines += literal("MISTAKES", mistakes).split("\n")
    (ex.reference_dir / f"{ex.short_name}.py").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    cat = Catalogue()
    for ex_id in sys.argv[1:] or [e.id for e in cat]:
        convert(cat.get(ex_id))
        print("converted", ex_id)
