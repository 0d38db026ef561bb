"""The import graph of grading/, service/ and exercises/lab/ has no cycles (STYLE.md habit 11).

A cycle is a set of modules that import each other in a loop, found as a strongly connected component of
grimp's graph. Every import counts: function-local ones, and a package's __init__ importing its own parts
(grading.sandbox and grading.checks re-export their interface from interface.py and base.py, which their
parts import, so a part never imports its package). The contracts between the layers are pyproject.toml's
[tool.importlinter] (scripts/lint.sh).
"""

from __future__ import annotations

import grimp
import pytest

PACKAGES = ("grading", "service", "exercises")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            nxt = next(successors, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def edges_of(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    return {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}


def test_cycles_finds_a_loop_and_ignores_a_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycles_in_grading_service_and_exercises(graph):
    found = cycles(edges_of(graph))
    assert found == [], "import cycles (break each: move the shared names down, or choose in service/wiring.py):\n" + (
        "\n".join(" <-> ".join(c) for c in found)
    )
