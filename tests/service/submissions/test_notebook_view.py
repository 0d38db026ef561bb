"""The submitted notebook as the page shows it (service/submissions/notebook_view.py): hostile sources and
outputs come back as plain text, capped; images only as real, small PNGs; two attempts compared cell by cell."""

from __future__ import annotations

import base64
import json

from service.submissions import notebook_view as nv

SCRIPT = "<script>window.__xss=1</script>"


def _nb(*cells: dict) -> bytes:
    return json.dumps({"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def _code(source, outputs=(), cell_id=None) -> dict:
    cell = {"cell_type": "code", "source": source, "outputs": list(outputs), "metadata": {}, "execution_count": None}
    if cell_id:
        cell["id"] = cell_id
    return cell


def _md(source, cell_id=None) -> dict:
    cell = {"cell_type": "markdown", "source": source, "metadata": {}}
    if cell_id:
        cell["id"] = cell_id
    return cell


def _png(size: int) -> str:
    return base64.b64encode(nv.PNG_SIGNATURE + b"\0" * (size - len(nv.PNG_SIGNATURE))).decode()


def test_rich_outputs_show_their_text_never_their_html():
    html = {
        "output_type": "display_data",
        "metadata": {},
        "data": {"text/html": SCRIPT, "application/javascript": "alert(1)", "text/plain": "<Obj 1>"},
    }
    only_html = {"output_type": "execute_result", "metadata": {}, "execution_count": 1, "data": {"text/html": SCRIPT}}
    view = nv.render_notebook(raw=_nb(_md(SCRIPT), _code(["x = '", SCRIPT, "'"], [html, only_html])), result=None)
    md, code = view.cells
    assert md.source == SCRIPT and md.cell_type == "markdown"  # text: Jinja escapes it
    assert code.source == f"x = '{SCRIPT}'" and code.code_index == 0
    assert [(o.kind, o.text) for o in code.outputs] == [("text", "<Obj 1>"), ("omitted", "text/html")]
    assert all(SCRIPT not in o.text for o in code.outputs)


def test_a_huge_output_and_source_are_capped():
    huge = {"output_type": "stream", "name": "stdout", "text": "y" * 1_000_000}
    view = nv.render_notebook(raw=_nb(_code("z" * 100_000, [huge, huge])), result=None)
    cell = view.cells[0]
    assert len(cell.source) == nv.SOURCE_MAX_CHARS and cell.source_cut
    assert sum(len(o.text) for o in cell.outputs) == nv.OUTPUT_MAX_CHARS and cell.outputs_cut
    assert len(cell.outputs) == 1  # the second output is past the cap


def test_images_only_as_small_real_pngs():
    def shown(data: str) -> list[str]:
        out = {"output_type": "display_data", "metadata": {}, "data": {"image/png": data, "text/plain": "<Figure>"}}
        return [o.kind for o in nv.render_notebook(raw=_nb(_code("plot()", [out])), result=None).cells[0].outputs]

    assert shown(_png(1000)) == ["image"]
    assert shown(_png(nv.IMAGE_MAX_BYTES + 1)) == ["text"]  # too large: its text/plain instead
    assert shown(base64.b64encode(b"GIF89a" + b"\0" * 100).decode()) == ["text"]  # not a PNG
    assert shown('"><script>x</script>') == ["text"]  # not base64


def test_terminal_escapes_and_controls_in_tracebacks_are_cleaned():
    err = {
        "output_type": "error",
        "ename": "ValueError",
        "evalue": "bad",
        "traceback": ["\x1b[0;31mValueError\x1b[0m: bad\u202e"],
    }
    out = nv.render_notebook(raw=_nb(_code("raise ValueError", [err])), result=None).cells[0].outputs[0]
    assert out.kind == "error" and out.text == "ValueError: bad\\u202e"


def test_each_code_cell_gets_its_grading_report():
    result = {"cells": [{"index": 1, "status": "error", "message": "NameError: y", "duration_s": 0.25}]}
    view = nv.render_notebook(raw=_nb(_code("x = 1"), _md("note"), _code("y")), result=result)
    assert [c.report for c in view.cells] == [
        None,
        None,
        {"status": "error", "message": "NameError: y", "duration_s": 0.25},
    ]
    assert [c.code_index for c in view.cells] == [0, None, 1]


def test_a_stored_duration_that_is_not_a_number_reads_as_zero():
    """The stored result is untrusted: a duration as text, NaN or a bool never breaks the page."""
    for odd in ("slow", float("nan"), True, None, [1]):
        result = {"cells": [{"index": 0, "status": "ok", "duration_s": odd}]}
        (cell,) = nv.render_notebook(raw=_nb(_code("x = 1")), result=result).cells
        assert cell.report["duration_s"] == 0.0


def test_the_outputs_the_grader_saw_are_shown_as_text_next_to_the_report():
    outputs = [
        {"kind": "stdout", "text": f"printed {SCRIPT}\n"},
        {"kind": "stderr", "text": "warned\x1b[2J\n"},
        {"kind": "display", "text": "", "mimes": ["text/html", "application/javascript"]},
        {"kind": "result", "text": "<Obj>", "mimes": ["image/png"]},
        {"kind": "error", "text": "ZeroDivisionError: division by zero"},
    ]
    result = {"cells": [{"index": 0, "status": "error", "message": "m", "outputs": outputs, "outputs_cut": True},
                        {"index": 1, "status": "ok"}]}
    saved = {"output_type": "stream", "name": "stdout", "text": "from the learner's own run"}
    view = nv.render_notebook(raw=_nb(_code("x", [saved]), _code("y"), _code("z")), result=result)
    graded, older, unrun = view.cells
    assert [(o.kind, o.text) for o in graded.graded] == [
        ("text", f"printed {SCRIPT}\n"), ("stderr", "warned\n"), ("omitted", "text/html, application/javascript"),
        ("text", "<Obj>"), ("omitted", "image/png"), ("error", "ZeroDivisionError: division by zero")]
    assert graded.graded_cut and [o.text for o in graded.outputs] == ["from the learner's own run"]  # kept apart
    assert older.report is not None and older.graded is None  # a result from before outputs were recorded
    assert unrun.report is None and unrun.graded is None


def test_a_hostile_stored_result_is_read_as_untrusted_as_the_upload():
    outputs = [{"kind": "stdout", "text": "q" * 100_000}, {"kind": "stdout", "text": "never"}]
    bad = [7, "text", {"kind": "<b>", "text": ["a", 1]}, {"kind": "display", "mimes": "text/html"}]
    result = {"cells": [{"index": 0, "status": "ok", "outputs": outputs}, {"index": 1, "status": "ok", "outputs": bad},
                        {"index": 2, "status": "ok", "outputs": "not a list"},
                        {"index": 3, "status": "ok", "outputs": [{"kind": "stdout", "text": "n"}] * 100}]}
    view = nv.render_notebook(raw=_nb(*[_code(str(i)) for i in range(4)]), result=result)
    huge, odd, not_list, many = view.cells
    assert [len(o.text) for o in huge.graded] == [nv.OUTPUT_MAX_CHARS] and huge.graded_cut
    assert [(o.kind, o.text) for o in odd.graded] == [("text", "a")] and not odd.graded_cut
    assert not_list.graded is None
    assert len(many.graded) == nv.GRADED_OUTPUTS_MAX and many.graded_cut


def test_bytes_that_are_not_a_notebook_are_not_shown():
    assert not nv.render_notebook(raw=b"\x89PNG", result=None).readable
    assert not nv.render_notebook(raw=b'{"hello": 1}', result=None).readable
    assert nv.compare_notebooks(old_raw=b"[]", new_raw=_nb()) is None


def test_compare_by_cell_id_finds_changed_added_and_removed_cells():
    old = _nb(_md("# Task", "a"), _code("total = 2 + 2\nprint(total)", cell_id="b"), _code("tmp = 1", cell_id="c"))
    new = _nb(
        _md("# Task", "a"), _code("total = 2 + 3\nprint(total)", cell_id="b"), _code("word = 'crane'", cell_id="d")
    )
    changes = nv.compare_notebooks(old_raw=old, new_raw=new)
    assert [(c.change, c.old_position, c.new_position) for c in changes] == [
        ("same", 1, 1),
        ("changed", 2, 2),
        ("removed", 3, None),
        ("added", None, 3),
    ]
    assert ("-", "total = 2 + 2") in changes[1].lines and ("+", "total = 2 + 3") in changes[1].lines
    assert (" ", "print(total)") in changes[1].lines
    assert changes[3].lines[-1] == ("+", "word = 'crane'")
    assert nv.changed_count(changes) == {"same": 1, "changed": 1, "added": 1, "removed": 1}


def test_compare_without_ids_matches_by_content():
    old = _nb(_md("intro"), _code("a = 1"), _code("b = 2"))
    new = _nb(_md("intro"), _code("a = 10"), _code("b = 2"), _code("c = 3"))
    changes = nv.compare_notebooks(old_raw=old, new_raw=new)
    assert [c.change for c in changes] == ["same", "changed", "same", "added"]


def test_a_long_diff_is_capped():
    old = _nb(_code("\n".join(f"a{i}" for i in range(2000)), cell_id="x"))
    new = _nb(_code("\n".join(f"b{i}" for i in range(2000)), cell_id="x"))
    (change,) = nv.compare_notebooks(old_raw=old, new_raw=new)
    assert len(change.lines) == nv.DIFF_MAX_LINES and change.lines_cut


def test_the_download_name_is_header_safe():
    class Sub:
        exercise_id, attempt = 'ch05.x"; evil=1\r\n', 2

    assert nv.notebook_disposition(Sub) == 'attachment; filename="ch05.x___evil_1__-attempt2.ipynb"'
