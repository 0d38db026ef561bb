"""The result-boundary normaliser (grading/text.py): every string from a kernel comes out valid Unicode with no
control, escape or bidi character but newline and tab, readable, and unchanged when it was already clean."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.cli import render
from grading.result import CellReport, CheckResult, GradeResult, Status
from grading.text import clean_text, clean_value

# What must never leave the boundary: C0 but tab/newline, DEL, C1, the bidi controls, separators, surrogates.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
# Any code point at all: surrogates and controls included (hypothesis leaves surrogates out unless asked).
# The second half strings together the pieces of escape sequences, pairs and CRLFs, which random code points
# rarely form.
PIECES = ["\x00", "\ud800", "\udfff", "\x1b", "[", "31m", "\r", "\n", "\t", "\u202e", "\u2066", "\x9b", "\x07",
          "]", "\\", "a", "\u200f", "\u061c", "\ud83d", "\ude00", "é", "0;t"]
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=60) | st.lists(
    st.sampled_from(PIECES), max_size=30).map("".join)


def assert_safe(text: str) -> None:
    assert FORBIDDEN.search(text) is None, ascii(text)
    text.encode("utf-8")  # valid Unicode: a UTF-8 encoder takes it


@pytest.mark.parametrize(("raw", "clean"), [
    ("bad byte \x00 in input", "bad byte \\x00 in input"),
    ("lone \ud800 high, lone \udfff low", "lone \ufffd high, lone \ufffd low"),
    ("a pair left split \ud83d\ude00 is joined", "a pair left split \U0001f600 is joined"),
    ("\x1b[31mred\x1b[0m and \x1b[2J\x1b[H cleared", "red and  cleared"),
    ("title \x1b]0;pwned\x07 set", "title  set"),
    ("a stray escape \x1b", "a stray escape \\x1b"),
    ("c1 csi \x9b31m", "c1 csi \\x9b31m"),
    ("PASS\rFAIL", "PASS\nFAIL"),
    ("windows\r\nline", "windows\nline"),
    ("evil\u202egnp.exe and \u2066isolate\u2069 \u200e\u200f\u061c", "evil\\u202egnp.exe and \\u2066isolate\\u2069 "
     "\\u200e\\u200f\\u061c"),
    ("bell \x07 del \x7f", "bell \\x07 del \\x7f"),
])
def test_each_kind_of_hostile_character_is_replaced_readably(raw, clean):
    assert clean_text(raw) == clean
    assert_safe(clean_text(raw))


@pytest.mark.parametrize("ok", ["", "plain ascii", "tab\tand\nnewline", "中文反馈 — ünïcødé 😀", "a\\x00 escaped"])
def test_clean_text_is_left_as_it_is(ok):
    assert clean_text(ok) is ok  # the fast path: no copy


@settings(max_examples=400, deadline=None)
@given(ANY_TEXT)
def test_any_string_comes_out_safe_and_cleaning_is_idempotent(raw):
    once = clean_text(raw)
    assert_safe(once)
    assert clean_text(once) == once  # storage's last-defence pass changes nothing the engine cleaned


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp")), max_size=60))
def test_printable_text_is_never_changed(text):
    assert clean_text(text) == text


def test_clean_value_cleans_keys_and_nested_strings_and_keeps_numbers():
    value = {"k\x00": [{"\u202e": "v\ud800"}, 1.5, None, True, ("t\x1b[1m",)]}
    assert clean_value(value) == {"k\\x00": [{"\\u202e": "v\ufffd"}, 1.5, None, True, ["t"]]}


def _hostile_result(s: str) -> GradeResult:
    return GradeResult(
        exercise_id="ch05.toy", status=Status.ERROR, score=1.0, max_score=2.0, message=f"cell 1 raised ValueError: {s}",
        checks=[CheckResult(name=f"n{s}", score=1.0, max_score=2.0, passed=False, feedback=f"got {s}", title=s)],
        cells=[CellReport(index=0, status="error", message=s)], limits_hit=[s], sandbox="unsafe-local",
        trace=[{"step": 1, f"loss{s}": 0.5}], profile=s,
    )


@settings(max_examples=150, deadline=None)
@given(ANY_TEXT)
def test_the_result_boundary_cleans_every_string_of_a_result(s):
    result = _hostile_result(s)
    result.normalise()
    strings: list[str] = []

    def walk(v):
        if isinstance(v, str):
            strings.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(result.to_dict())
    for text in strings:
        assert_safe(text)
    assert result.checks[0].feedback == f"got {clean_text(s)}"  # still says what the learner's code produced


def test_the_terminal_report_of_a_raw_result_is_safe_even_unnormalised():
    """`titangrade grade` prints `render`: a surrogate made print raise UnicodeEncodeError (exit 1), and ESC,
    CR and bidi characters reached the terminal."""
    report = render(_hostile_result("bad \x00 \ud800 \x1b[2J\r\u202e"))
    assert_safe(report)
    assert "bad \\x00 \ufffd \n\\u202e" in report
