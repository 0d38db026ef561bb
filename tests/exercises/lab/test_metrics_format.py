"""The metrics record format: verl console lines both ways, and the hand-written recorded logs."""

import math
import pprint
from pathlib import Path

import numpy as np
import pytest

from exercises.lab.metrics_format import (
    format_console_line,
    is_finite_record,
    parse_console_lines,
    parse_log,
    parse_step_line,
    parse_value,
    read_metrics_jsonl,
    write_metrics_jsonl,
)

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "logs"


def test_format_matches_verl_concat_dict_to_str():
    from verl.utils.logger.aggregate_logger import concat_dict_to_str

    metrics = {"actor/pg_loss": np.float64(-0.25), "training/global_step": 3, "name": "skipped",
               "timing_s/step": 12.5, "flag": True, "big": np.int64(7), "tiny": 1e-07}
    assert format_console_line(3, metrics) == concat_dict_to_str(metrics, step=3)


def test_round_trip_through_console_line():
    metrics = {"actor/pg_loss": np.float64(-0.25), "critic/score/mean": 0.1 + 0.2, "n": np.int32(4)}
    [record] = parse_console_lines(format_console_line(9, metrics))
    assert record == {"step": 9, "actor/pg_loss": -0.25, "critic/score/mean": 0.1 + 0.2, "n": 4.0}


@pytest.mark.parametrize(("text", "value"), [("np.float64(1e-06)", 1e-6), ("3", 3.0), ("True", 1.0),
                                              ("np.float32(0.5)", 0.5), ("tensor(2.5)", 2.5), ("-inf", -math.inf)])
def test_parse_value(text, value):
    assert parse_value(text) == value


def test_parse_value_rejects_non_numbers():
    with pytest.raises(ValueError, match="not written by verl"):
        parse_value("hello")


def test_non_step_lines_are_ignored():
    assert parse_step_line("Training Progress:  33%|###  | 1/3") is None
    assert parse_step_line("(TaskRunner pid=1) step:2 - a:1")["a"] == 1.0
    assert parse_step_line("\x1b[36m(WorkerDict pid=7, ip=10.0.0.2)\x1b[0m step:4 - b:np.float64(2.5)") == {
        "step": 4, "b": 2.5}
    assert parse_step_line("[output] I guess step:2 - of the plan:think") is None  # model text, not verl


def test_three_step_fixture():
    parsed = parse_log((LOGS / "npu_qwen3_1.7b_tt_3steps.log").read_text())
    assert parsed.total_training_steps == 3
    assert [r["step"] for r in parsed.records] == [0, 1, 2, 3]
    assert [r["training/global_step"] for r in parsed.records[1:]] == [1.0, 2.0, 3.0]
    step1 = parsed.records[1]
    assert step1["actor/pg_loss"] == pytest.approx(-0.004183926, abs=1e-12)
    assert step1["timing_per_token_ms/update_actor"] == pytest.approx(0.0429327)
    assert step1["perf/total_num_tokens"] == 1512242.0
    assert parsed.initial_validation["val-core/wordle/reward/mean@5"] == pytest.approx(0.8274)
    assert parsed.initial_validation["val-aux/num_turns/max"] == 12.0
    assert parsed.records[0]["val-aux/wordle/reward/std@5"] == pytest.approx(0.5112030271)
    assert all(is_finite_record(r) for r in parsed.records)


def test_speedup_between_recorded_runs():
    tt = parse_console_lines((LOGS / "npu_qwen3_1.7b_tt_3steps.log").read_text())
    cp2 = parse_console_lines((LOGS / "npu_qwen3_1.7b_tt_cp2_2steps.log").read_text())
    mean = lambda rs, k: sum(r[k] for r in rs if r["step"] > 0) / sum(1 for r in rs if r["step"] > 0)
    speedup = mean(tt, "timing_s/step") / mean(cp2, "timing_s/step")
    assert speedup == pytest.approx(((295.61002 + 282.58341 + 277.80029) / 3) / ((268.0412 + 259.7730) / 2))
    assert math.isnan(cp2[0]["actor/grad_norm"]) and not is_finite_record(cp2[0])


def test_short_initial_validation_and_wrapped_pprint():
    d = {f"val-aux/k{i}": np.float64(i / 7) for i in range(12)}
    text = pprint.pformat(f"Initial validation metrics: {d}") + "\n"
    assert text.count("\n") > 2  # pprint wrapped it
    parsed = parse_log(text)
    assert parsed.initial_validation == {k: float(v) for k, v in d.items()}
    assert parse_log("'Initial validation metrics: {}'\n").initial_validation == {}


def test_jsonl_round_trip(tmp_path):
    records = parse_console_lines((LOGS / "npu_qwen3_1.7b_tt_cp2_2steps.log").read_text())
    write_metrics_jsonl(records, tmp_path / "m.jsonl")
    back = read_metrics_jsonl(tmp_path / "m.jsonl")
    assert [r["step"] for r in back] == [1, 2] and back[1] == records[1]
    (tmp_path / "bad.jsonl").write_text('{"loss": 1}\n')
    with pytest.raises(ValueError, match="no integer 'step'"):
        read_metrics_jsonl(tmp_path / "bad.jsonl")
