"""The import graph of grading/, service/ and exercises/lab/ has no cycles (STYLE.md habit 11).

A cycle is a set of modules that import each other in a loop, found as a strongly connected component of
grimp's graph (every import counts, function-local ones too). One kind of edge is left out, and said so:
a package's __init__ importing its own submodules (to re-export or register them, as grading.sandbox and
grading.checks do) while they import names from it. That is a package and its parts, not two modules that
depend on each other; service/ and exercises/lab/ have none of those either. The contracts between the
layers are pyproject.toml's [tool.importlinter] (scripts/lint.sh).
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


def edges_of(graph: grimp.ImportGraph, *, package_to_own_parts: bool) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module in graph.modules:
        imported = graph.find_modules_directly_imported_by(module)
        if not package_to_own_parts:
            imported = {m for m in imported if not m.startswith(module + ".")}
        out[module] = set(imported)
    return out


def test_cycles_finds_a_loop_and_ignores_a_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycles_in_grading_service_and_exercises(graph):
    found = cycles(edges_of(graph, package_to_own_parts=False))
    assert found == [], "import cycles (break each: move the shared names down, or choose in service/wiring.py):\n" + (
        "\n".join(" <-> ".join(c) for c in found)
    )


@pytest.mark.parametrize("package", ["service", "exercises"])
def test_no_cycles_at_all_in_the_service_and_the_course_runtime(graph, package):
    found = [c for c in cycles(edges_of(graph, package_to_own_parts=True)) if c[0].split(".")[0] == package]
    assert found == [], "\n".join(" <-> ".join(c) for c in found)
