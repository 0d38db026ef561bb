"""The training trace a result carries for plots: read from the training_run answer, bounded, numbers only."""
from __future__ import annotations

from pathlib import Path

import pytest

from grading.exercise import Catalogue
from grading.trace import MAX_STEPS, training_trace

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return Catalogue(REPO / "exercises", REPO / "reference")


def _payload(answer) -> dict:
    return {"answers": {"answers": {"result": answer, "config": {}}}}


def test_metrics_records_keep_step_and_finite_numbers(catalogue):
    ex = catalogue.get("ch07.three_step_training")
    answer = {"metrics": [{"step": 1, "actor/pg_loss": 0.5, "note": "<script>", "flag": True},
                          {"step": 2, "actor/pg_loss": {"__float__": "nan"}, "critic/score/mean": 0.25},
                          {"step": "3", "actor/pg_loss": 1.0}, {"__unparsable__": "{"}],
              "run": {"profile": "cpu-tiny", "dtype": "float32"}, "files": []}
    records, profile, dtype = training_trace(ex, _payload(answer))
    assert records == [{"step": 1, "actor/pg_loss": 0.5}, {"step": 2, "critic/score/mean": 0.25}]
    assert (profile, dtype) == ("cpu-tiny", "float32")


def test_bounded_and_absent(catalogue):
    ex = catalogue.get("ch07.three_step_training")
    many = {"metrics": [{"step": i, "x": 1.0} for i in range(MAX_STEPS + 50)],
            "run": {"profile": "p" * 99, "dtype": ["float32"]}}
    records, profile, dtype = training_trace(ex, _payload(many))
    assert len(records) == MAX_STEPS and profile is None and dtype is None
    assert training_trace(ex, {}) == ([], None, None)
    raised = {"__raised__": {"type": "FileNotFoundError", "message": "no run"}}
    assert training_trace(ex, _payload(raised)) == ([], None, None)
    assert training_trace(catalogue.get("ch07.wordle_reward"), _payload({"metrics": [{"step": 1}]})) == ([], None, None)
