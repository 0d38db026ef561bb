"""The outputs a result keeps per learner cell (grading/steps/graded_outputs.py): plain text, normalised, within
4 KiB a cell and 64 KiB a run however much a kernel sent, rich outputs only named, and cuts marked."""
from __future__ import annotations

import json
import tracemalloc

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.result import CellReport, GradeResult, Status
from grading.steps import graded_outputs as go
from grading.text import is_clean

MARKER = "\n... [output truncated by the grader at 64 KB]\n"
SCRIPT = "<script>window.__xss=1</script>"


def _stream(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


def _stored_bytes(entries) -> int:
    return len(json.dumps(entries, ensure_ascii=False).encode("utf-8"))


def test_ten_megabytes_of_print_keep_four_kib_and_say_cut():
    kept, cut = go.summarise([_stream("x" * 10_000_000)], room=go.CELL_BYTES)
    assert cut and len(kept) == 1 and kept[0]["kind"] == "stdout"
    assert go.CELL_BYTES - 64 < _stored_bytes(kept) <= go.CELL_BYTES


def test_a_huge_stream_is_never_copied_whole():
    huge = [_stream("y" * 10_000_000), {"output_type": "error", "ename": "E", "evalue": "v" * 5_000_000,
                                       "traceback": ["t" * 5_000_000] * 3}]
    tracemalloc.start()
    try:
        go.summarise(huge, room=go.CELL_BYTES)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024, peak  # the slices it keeps, not the 10 MB


def test_nul_lone_surrogates_and_controls_come_out_clean_and_encodable():
    kept, cut = go.summarise([_stream("a\x00b\ud800c\udfff\u202e\x07"), _stream("err\x00", "stderr")], room=4096)
    assert not cut and [e["kind"] for e in kept] == ["stdout", "stderr"]
    assert kept[0]["text"] == "a\\x00b\ufffdc\ufffd\\u202e\\x07" and kept[1]["text"] == "err\\x00"
    orjson.dumps(kept)  # no lone surrogate left: it encodes


def test_ansi_escapes_in_tracebacks_are_dropped():
    error = {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
             "traceback": ["\x1b[0;31m---------\x1b[0m", "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"]}
    kept, _ = go.summarise([error], room=4096)
    assert kept == [{"kind": "error", "text": "---------\nZeroDivisionError: division by zero\n"}]
    bare, _ = go.summarise([{**error, "traceback": []}], room=4096)
    assert bare[0]["text"] == "ZeroDivisionError: division by zero"


def test_html_and_javascript_are_only_named_and_text_plain_is_kept_as_text():
    rich = {"output_type": "display_data", "metadata": {},
            "data": {"text/html": SCRIPT, "application/javascript": "alert(1)", "image/png": "iVBOR",
                     "text/plain": "<Obj>"}}
    only_html = {"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"text/html": SCRIPT}}
    kept, _ = go.summarise([rich, only_html], room=4096)
    assert kept == [{"kind": "display", "mimes": ["application/javascript", "image/png", "text/html"], "text": "<Obj>"},
                    {"kind": "result", "mimes": ["text/html"], "text": ""}]
    assert "<script" not in json.dumps(kept) and "alert" not in json.dumps(kept) and "iVBOR" not in json.dumps(kept)


def test_the_runs_own_truncation_marker_becomes_the_cut_flag():
    kept, cut = go.summarise([_stream("partial"), _stream(MARKER, "stderr")], room=4096, marker=MARKER)
    assert cut and kept == [{"kind": "stdout", "text": "partial"}]
    kept, cut = go.summarise([_stream("partial")], room=4096, marker=MARKER)
    assert not cut


def test_outputs_past_the_count_are_dropped_and_marked():
    many = [{"output_type": "display_data", "metadata": {}, "data": {"text/plain": str(i)}} for i in range(500)]
    kept, cut = go.summarise(many, room=go.CELL_BYTES)
    assert cut and len(kept) == go.CELL_OUTPUTS


def test_quotes_and_backslashes_that_double_in_json_still_fit():
    kept, cut = go.summarise([_stream('"\\' * 50_000)], room=1000)
    assert cut and 900 < _stored_bytes(kept) <= 1000


def test_a_run_keeps_64_kib_over_all_cells_and_marks_the_rest():
    reports = [CellReport(index=i, status="ok") for i in range(40)]
    go.attach(reports, [[_stream("z" * 100_000)] for _ in reports])
    stored = sum(_stored_bytes(e) + 2 for r in reports for e in r.outputs)  # each entry and its separator
    assert go.RUN_BYTES - 40 * 64 < stored <= go.RUN_BYTES
    assert all(r.outputs_cut for r in reports)
    assert [r.outputs for r in reports[16:]] == [[]] * 24  # past the run's budget: nothing, marked cut
    quiet = [CellReport(index=0, status="ok")]
    go.attach(quiet, [[]])
    assert quiet[0].outputs == [] and not quiet[0].outputs_cut  # ran, printed nothing: not "not recorded"


_text = st.text(alphabet=st.characters(codec=None, categories=None), max_size=3000)
_output = st.one_of(
    st.builds(_stream, _text, st.sampled_from(["stdout", "stderr"])),
    st.builds(lambda t, n: {"output_type": "error", "ename": n, "evalue": t, "traceback": [t, n]}, _text, _text),
    st.builds(lambda d: {"output_type": "display_data", "metadata": {}, "data": d},
              st.dictionaries(_text, _text, max_size=4)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_output, max_size=40), st.integers(min_value=0, max_value=5000))
def test_any_outputs_stay_within_the_room_and_clean(outputs, room):
    kept, _ = go.summarise(outputs, room=room)
    assert sum(len(json.dumps(e, ensure_ascii=False).encode()) + 2 for e in kept) <= room
    for entry in kept:
        assert is_clean(entry["text"]) and all(is_clean(m) for m in entry.get("mimes", []))
    orjson.dumps(kept)


def test_the_result_scrubs_and_serialises_recorded_outputs():
    result = GradeResult(exercise_id="x", status=Status.GRADED, score=0, max_score=1, cells=[
        CellReport(index=0, status="ok", outputs=[{"kind": "stdout", "text": "handle _tg_1a2b3c4d and SECRETVALUE"},
                                                 {"kind": "display", "text": "", "mimes": ["x/SECRETVALUE"]}])])
    result.normalise()
    result.scrub(("SECRETVALUE",), "[hidden]")
    out = result.to_dict()["cells"][0]
    assert out["outputs"] == [{"kind": "stdout", "text": "handle [hidden] and [hidden]"},
                              {"kind": "display", "text": "", "mimes": ["x/[hidden]"]}]
    again = GradeResult.from_dict(result.to_dict())
    assert again.cells[0].outputs == out["outputs"] and again.cells[0].outputs_cut is False
    older = GradeResult.from_dict({**result.to_dict(), "cells": [{"index": 0, "status": "ok"}]})
    assert older.cells[0].outputs is None  # a result stored before outputs were recorded
