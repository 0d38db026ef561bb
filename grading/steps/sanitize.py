"""Step 2: drop what the learner's saved notebook carried over from their own runs."""

from __future__ import annotations

import copy

import nbformat


def clear_outputs(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy with no outputs, execution counts or execution metadata, so nothing stale is graded."""
    clean = copy.deepcopy(nb)
    for cell in clean.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    return clean


def code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """The cells a kernel will run, in order (markdown and raw cells never execute)."""
    return [c for c in nb.cells if c.cell_type == "code"]
