"""Server-side SVG geometry: score histograms and a training run against its reference band.

Every chart the templates draw is named (role="img" with a <title>), has its numbers in a table beside it
for screen readers, and marks out-of-band points by shape (a cross) as well as colour, with a legend.

Functions return numbers only (coordinates, labels the templates escape), so no learner text is ever
placed into SVG markup unescaped. Only the band's lo/hi reach the page, never the per-seed values.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

from grading import bands
from grading.errors import GraderFault

log = logging.getLogger(__name__)

PLOTTED = (
    ("actor/pg_loss", "loss"),
    ("critic/score/mean", "reward"),
    ("actor/kl_loss", "KL"),
    ("actor/grad_norm", "grad norm"),
)
W, H, PAD = 320, 160, 28


def histogram(buckets: dict[str, int]) -> dict:
    """Bars for the ten 10 % buckets of the max score (empty buckets included)."""
    labels = [f"{low}-{low + 10}%" for low in range(0, 100, 10)]
    counts = [int(buckets.get(label, 0)) for label in labels]
    top = max([*counts, 1])
    bar_w = (W - 2 * PAD) / len(labels)
    bars = [
        {
            "x": PAD + i * bar_w + 1,
            "w": bar_w - 2,
            "y": H - PAD - (c / top) * (H - 2 * PAD),
            "h": (c / top) * (H - 2 * PAD),
            "count": c,
            "label": label,
        }
        for i, (label, c) in enumerate(zip(labels, counts, strict=True))
    ]
    return {"w": W, "h": H, "pad": PAD, "bars": bars, "top": top}


def load_band(reference_root: Path, profile: str, *, kind: str = "cpu", dtype: str | None = "float32") -> dict | None:
    """lo/hi per metric and step of the band recorded for `profile` on this device kind and dtype (the one
    the grader compares the run with, grading/bands.py); None when none is recorded (per-seed values
    dropped). The names are the result's: matched against the recorded bands, never made into a path."""
    try:
        band = bands.pick_band(bands.load_bands(reference_root / "traces"), profile=profile, kind=kind, dtype=dtype)
    except (GraderFault, OSError, ValueError) as exc:  # a broken reference: the page shows the run alone
        log.error("no band to plot for %s on %s/%s: %s", profile, kind, dtype, exc)
        return None
    if band is None:
        return None
    return {
        metric: {int(step): (float(v["lo"]), float(v["hi"])) for step, v in steps.items()}
        for metric, steps in band.doc.get("metrics", {}).items()
    }


def _finite(v) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def trace_series(records: list, metric: str) -> list[tuple[int, float]]:
    """(step, value) pairs of one metric from metrics.jsonl records (learner data: validated here)."""
    out = []
    for r in records[:10_000] if isinstance(records, list) else []:
        if isinstance(r, dict) and isinstance(r.get("step"), int) and (v := _finite(r.get(metric))) is not None:
            out.append((r["step"], v))
    return sorted(out)[:1000]


def run_plots(records: list, band: dict | None) -> list[dict]:
    """One small panel per plotted metric: the band as a polygon, the run as a polyline with points."""
    panels = []
    for metric, label in PLOTTED:
        run = trace_series(records, metric)
        lohi = sorted((band or {}).get(metric, {}).items())
        if run or lohi:
            panels.append(_panel(metric, label, run, lohi))
    return panels


def _panel(metric: str, label: str, run: list[tuple[int, float]], lohi: list[tuple[int, tuple[float, float]]]) -> dict:
    steps = [s for s, _ in run] + [s for s, _ in lohi]
    values = [v for _, v in run] + [x for _, (lo, hi) in lohi for x in (lo, hi)]
    s0, s1 = min(steps), max(steps)
    v0, v1 = min(values), max(values)
    if v1 - v0 < 1e-12:
        v0, v1 = v0 - 1, v1 + 1

    def x(s: float) -> float:
        return PAD + (s - s0) / ((s1 - s0) or 1) * (W - 2 * PAD)

    def y(v: float) -> float:
        return H - PAD - (v - v0) / (v1 - v0) * (H - 2 * PAD)

    limits = dict(lohi)
    band_pts = [(x(s), y(hi)) for s, (lo, hi) in lohi] + [(x(s), y(lo)) for s, (lo, hi) in reversed(lohi)]
    outside = [s for s, v in run if s in limits and not limits[s][0] <= v <= limits[s][1]]
    return {
        "metric": metric,
        "label": label,
        "w": W,
        "h": H,
        "pad": PAD,
        "band": " ".join(f"{px:.1f},{py:.1f}" for px, py in band_pts),
        "line": " ".join(f"{x(s):.1f},{y(v):.1f}" for s, v in run),
        "points": [
            {"x": x(s), "y": y(v), "step": s, "value": v, "out": s in outside, "band": limits.get(s)} for s, v in run
        ],
        "ymin": v0,
        "ymax": v1,
        "smin": s0,
        "smax": s1,
        "outside": outside,
    }
