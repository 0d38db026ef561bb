"""exercises/lab is import-cycle-free (module level and inside functions), and imports nothing of ours outside it."""

from __future__ import annotations

import ast
from pathlib import Path

LAB = Path(__file__).resolve().parents[3] / "exercises" / "lab"


def _module(path: Path) -> str:
    rel = path.relative_to(LAB.parents[1]).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in LAB.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                assert not name.startswith(("grading", "service", "reference")), f"{mod} imports {name}"
                if name in modules and name != mod and not mod.startswith(name + "."):
                    graph[mod].add(name)
    return graph


def test_no_import_cycles():
    graph, state, cycles = _graph(), {}, []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for dep in sorted(graph[node]):
            if state.get(dep) == "open":
                cycles.append(stack[stack.index(dep) :] + [dep])
            elif dep not in state:
                visit(dep, stack + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert graph["exercises.lab.train"], "the graph reads the lab's own imports"
    assert not cycles, f"import cycles: {cycles}"
