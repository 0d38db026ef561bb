"""Run a ch08 solution notebook's code cells in-process (grader side) so tests can call its functions."""
from __future__ import annotations

import nbformat


def solution_namespace(exercise) -> dict:
    ns: dict = {"__name__": "__solution__"}
    nb = nbformat.read(exercise.solution_path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            exec(compile(cell.source, str(exercise.solution_path), "exec"), ns)
    return ns
