"""Stale outputs are cleared; output limits cut streams and add one marker."""
import nbformat

from grading.steps.limit_output import OutputBudget, output_size, truncate_outputs
from grading.steps.sanitize import clear_outputs, code_cells


def test_clear_outputs_copies_and_clears():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("hi"),
        nbformat.v4.new_code_cell("x = 1", execution_count=7,
                                  outputs=[nbformat.v4.new_output("stream", name="stdout", text="stale 42")]),
    ])
    nb.cells[1].metadata["execution"] = {"iopub.status.busy": "then"}
    clean = clear_outputs(nb)
    assert clean.cells[1].outputs == [] and clean.cells[1].execution_count is None
    assert "execution" not in clean.cells[1].metadata
    assert nb.cells[1].outputs and nb.cells[1].execution_count == 7  # the input is untouched
    assert [c.source for c in code_cells(clean)] == ["x = 1"]


def test_truncate_outputs_cuts_a_stream_and_marks_once():
    outs = [{"output_type": "stream", "name": "stdout", "text": "a" * 100},
            {"output_type": "stream", "name": "stdout", "text": "b" * 1000},
            {"output_type": "display_data", "data": {"text/plain": "c"}, "metadata": {}}]
    kept, cut = truncate_outputs(outs, max_bytes=400, marker="[cut]")
    assert cut and kept[0] == outs[0] and kept[-1]["text"] == "[cut]" and len(kept) == 3
    assert set(kept[1]["text"]) == {"b"} and len(kept[1]["text"]) < 400
    same, cut = truncate_outputs(outs[:1], max_bytes=400, marker="[cut]")
    assert same == outs[:1] and not cut
    assert output_size(outs[0]) > 100


def test_streaming_budget_admits_then_cuts_then_drops():
    budget = OutputBudget(60)
    assert budget.admit("stream", {"name": "stdout", "text": "hi"}) is not None
    cut = budget.admit("stream", {"name": "stdout", "text": "x" * 500})
    assert budget.truncated and 0 < len(cut["text"]) < 60
    assert budget.admit("stream", {"name": "stdout", "text": "more"}) is None
    other = OutputBudget(10)
    assert other.admit("display_data", {"data": {"text/plain": "y" * 50}}) is None and other.truncated
