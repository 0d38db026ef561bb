"""Server-side SVG geometry: histograms, and a run against the band (only lo/hi ever leave the server)."""

from __future__ import annotations

import math
from pathlib import Path

from service.web import charts

REPO = Path(__file__).resolve().parents[3]


def test_histogram_has_ten_buckets_scaled_to_the_tallest():
    hist = charts.histogram({"90-100%": 4, "0-10%": 2})
    assert [b["count"] for b in hist["bars"]] == [2, 0, 0, 0, 0, 0, 0, 0, 0, 4]
    assert hist["bars"][9]["h"] == 2 * hist["bars"][0]["h"] > 0 and hist["bars"][1]["h"] == 0


def test_band_keeps_lo_hi_only_and_rejects_odd_profiles():
    band = charts.load_band(REPO / "reference", "cpu-tiny")
    assert set(band["actor/pg_loss"]) == {1, 2, 3}
    assert all(len(v) == 2 for v in band["actor/pg_loss"].values())
    assert charts.load_band(REPO / "reference", "../../etc") is None
    assert charts.load_band(REPO / "reference", "no-such-profile") is None
    # the band of the device the run used: a GPU run is never drawn against the CPU's band
    assert charts.load_band(REPO / "reference", "cpu-tiny", kind="cuda", dtype="float32") is None
    assert charts.load_band(REPO / "reference", "cpu-tiny", kind="cpu", dtype="bfloat16") is None


def test_a_broken_band_file_leaves_the_plot_without_a_band(tmp_path):
    (tmp_path / "traces" / "cpu-tiny").mkdir(parents=True)
    (tmp_path / "traces" / "cpu-tiny" / "band.json").write_text('{"format": "titangrade.metric_band/1"}')
    assert charts.load_band(tmp_path, "cpu-tiny") is None


def test_run_plots_mark_steps_outside_the_band_and_skip_bad_values():
    band = {"actor/pg_loss": {1: (0.0, 1.0), 2: (0.0, 1.0), 3: (0.0, 1.0)}}
    records = [
        {"step": 1, "actor/pg_loss": 0.5},
        {"step": 2, "actor/pg_loss": 2.0},
        {"step": 3, "actor/pg_loss": math.nan},
        {"step": "4", "actor/pg_loss": 0.1},
        "junk",
    ]
    (panel,) = charts.run_plots(records, band)
    assert [p["step"] for p in panel["points"]] == [1, 2] and panel["outside"] == [2]
    assert len(panel["band"].split()) == 6 and len(panel["line"].split()) == 2
    assert all(0 <= p["x"] <= panel["w"] and 0 <= p["y"] <= panel["h"] for p in panel["points"])
    assert charts.run_plots([], None) == []
