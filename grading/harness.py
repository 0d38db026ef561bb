"""Grader-owned launchers (issue 12): the values that are graded come from the grader's code.

Some exercises need a launcher around the learner's function: spawn 2 gloo ranks, run the learner's
`seq_to_head` in each, collect what they return. The launcher is shown to the learner (a master cell
tagged `harness`, kept in template and solution, so they can run it), but a learner can edit or replace
it, e.g. with a single-process fake that only chunks tensors. So the build copies each harness cell's
source from the master into the answer file (`"harness": [...]`), and the engine runs those sources
again after the learner's cells, as grader cells, before any answer is read: the names they bind
(`run_ulysses`, `RESULT`, `NAMES`, `CU_SEQ_DTYPES`, ...) are first removed from the kernel, then bound
again by the master's code, and the graded values come from that run. Each cell ends by publishing an
empty nonce payload (through the seed-time extractor), so a harness that raises is still accounted
for (its answers are then missing or raise, and score 0) and never masks another cell.
"""

from __future__ import annotations

import ast


def bound_names(source: str) -> list[str]:
    """Top-level names a harness source binds (def, class, assignment, import, for/with targets)."""
    src = "\n".join(ln for ln in source.split("\n") if not ln.lstrip().startswith(("%", "!")))
    names: list[str] = []
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return names
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names]
        else:
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)):
                targets = [node.target]
            elif isinstance(node, ast.With):
                targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
            names += [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(n for n in names if not n.startswith("__")))


def cell_source(source: str, *, handle: str, nonce: str) -> str:
    """The grader cell for one harness source: forget the learner's bindings of its names, run the
    master's code in the kernel's globals, then publish an empty payload carrying the nonce."""
    return (
        f"for _tg_name in {bound_names(source)!r}:\n"
        "    globals().pop(_tg_name, None)\n"
        "try:\n"
        f"    exec(compile({source!r}, '<titangrade-harness>', 'exec'), globals())\n"
        "finally:\n"
        f"    {handle}({nonce!r}, {{}}, {{}}, 1.0)\n"
    )
