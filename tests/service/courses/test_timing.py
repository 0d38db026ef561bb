"""Time-to-grade percentiles (service/courses/timing.py): nearest rank, and no data is null, never 0."""

from __future__ import annotations

from service.courses import timing


def test_nearest_rank_percentiles():
    hundred = [float(v) for v in range(100, 0, -1)]  # any order
    assert [timing.percentile(hundred, p) for p in (50, 90, 95, 100)] == [50.0, 90.0, 95.0, 100.0]
    assert timing.percentile([7.0], 95) == 7.0
    assert timing.percentile([1.0, 2.0, 3.0], 50) == 2.0 and timing.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0


def test_no_runs_are_null_not_zero():
    empty = timing.summarise([])
    assert (empty.runs, empty.p50_s, empty.p90_s, empty.p95_s) == (0, None, None, None)
    assert timing.summarise([0.0]).p50_s == 0.0  # a measured 0 stays a number: only missing data is null
