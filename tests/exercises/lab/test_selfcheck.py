"""The notebooks' one self-check helper: ✓ on a match (within tol), ✗ with what came back, … for a stub."""

from __future__ import annotations

import pytest

from exercises.lab.selfcheck import close, show


@pytest.mark.parametrize(
    ("got", "want", "tol", "ok"),
    [
        (0.1 + 0.2, 0.3, 1e-9, True),
        (0.30001, 0.3, 1e-9, False),
        (0.30001, 0.3, 1e-4, True),
        ((1, 2), [1, 2], 0, True),
        ([1, 2], [1, 2, 3], 0, False),
        ({"a": [1.0]}, {"a": [1.0 + 1e-12]}, 1e-9, True),
        ({"a": 1}, {"a": 1, "b": 2}, 0, False),
        ("G G X", "G G X", 0, True),
        (True, 1, 0, True),
        (None, 0, 1, False),
    ],
)
def test_close(got, want, tol, ok):
    assert close(got, want, tol) is ok


def test_show_prints_one_line_per_outcome(capsys):
    def stub():
        raise NotImplementedError("implement f")

    def broken():
        raise KeyError("x")

    assert show("match", lambda: [1, 2], (1, 2)) is True
    assert show("stub", stub, 1) is False
    assert show("broken", broken, 1) is False
    assert show("wrong", lambda: 3, 4) is False
    assert show("none", lambda: None, 0) is False
    assert capsys.readouterr().out.split("\n")[:5] == [
        "✓ match ",
        "… stub - not implemented yet",
        "✗ broken - raised KeyError 'x'",
        "✗ wrong - got 3, want 4",
        "✗ none - got None, want 0",
    ]
