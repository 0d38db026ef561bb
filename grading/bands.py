"""Recorded reference bands, one per training profile, device kind and dtype, each stating the device it was
recorded on (scripts/record_reference_traces.py writes them; docs/lab-training.md):

    reference/traces/<profile>/band.json                 recorded on the CPU
    reference/traces/<profile>/<kind>-<dtype>/band.json  recorded on that accelerator (e.g. cuda-float32)

A metric_trace check's `recorded_band` part asks for the band of the run's own profile on the device the
run used (run.json's `profile`, `device` and `dtype`). None found means the part cannot be graded on this
run (never a CPU band standing in for a GPU run, nor another profile's band).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grading.errors import GraderFault

BAND_FORMAT = "titangrade.metric_band/1"


@dataclass(frozen=True, slots=True)
class Band:
    profile: str
    kind: str
    dtype: str
    path: Path
    doc: dict[str, Any]

    def limits(self, metric: str) -> tuple[list[float], list[float]]:
        """(lower, upper) per recorded step, in step order."""
        per_step = self.doc.get("metrics", {}).get(metric)
        if not isinstance(per_step, dict) or not per_step:
            raise GraderFault(f"{self.path} records no band for {metric}", retryable=False)
        steps = sorted(per_step, key=int)
        return [float(per_step[s]["lo"]) for s in steps], [float(per_step[s]["hi"]) for s in steps]


def run_device(run: Any) -> tuple[str | None, str | None]:
    """(device kind, dtype) a run.json says it used; None where it does not say (or says nonsense)."""
    if not isinstance(run, dict):
        return None, None
    kind, dtype = run.get("device"), run.get("dtype")
    return (kind if isinstance(kind, str) else None), (dtype if isinstance(dtype, str) else None)


def load_bands(traces: Path) -> list[Band]:
    """Every band.json under `traces` (one folder per profile). A band that does not state its device is a
    broken reference: the grader's fault, never the learner's."""
    bands = []
    for path in sorted([*traces.glob("*/band.json"), *traces.glob("*/*/band.json")]):
        doc = json.loads(path.read_text(encoding="utf-8"))
        device = doc.get("device") if isinstance(doc, dict) else None
        if not isinstance(device, dict) or doc.get("format") != BAND_FORMAT:
            raise GraderFault(f"{path} is not a {BAND_FORMAT} band stating its device", retryable=False)
        kind, dtype = device.get("kind"), device.get("dtype")
        if not isinstance(kind, str) or not isinstance(dtype, str):
            raise GraderFault(f"{path} does not state the device kind and dtype it was recorded on", retryable=False)
        profile = str(doc.get("profile", path.parent.name if kind == "cpu" else path.parent.parent.name))
        bands.append(Band(profile=profile, kind=kind, dtype=dtype, path=path, doc=doc))
    return bands


def band_folder(profile: str, kind: str, dtype: str) -> str:
    """Where the band of `profile` on `kind`/`dtype` lives, relative to reference/traces."""
    return profile if kind == "cpu" else f"{profile}/{kind}-{dtype}"


def pick_band(bands: list[Band], *, profile: str | None, kind: str | None, dtype: str | None) -> Band | None:
    """The band of `profile` recorded on this device kind and dtype; None: none recorded for it. Two
    found: an ambiguous reference (GraderFault)."""
    if profile is None or kind is None or dtype is None:
        return None
    found = [b for b in bands if (b.profile, b.kind, b.dtype) == (profile, kind, dtype)]
    if len(found) > 1:
        names = ", ".join(str(b.path) for b in found)
        raise GraderFault(f"several reference bands for {profile} on {kind}/{dtype} ({names})", retryable=False)
    return found[0] if found else None


def recorded_dtypes(bands: list[Band], *, profile: str | None, kind: str | None) -> list[str]:
    """The dtypes a band of `profile` on `kind` was recorded in."""
    return sorted({b.dtype for b in bands if b.profile == profile and b.kind == kind})


def band_spec(band: Band, metrics: list[str]) -> dict[str, dict[str, list[float]]]:
    """The chosen band in metric_trace's `band` shape ({metric: {lower, upper}})."""
    out = {}
    for m in metrics:
        lower, upper = band.limits(m)
        if any(not math.isfinite(x) for x in lower + upper):
            raise GraderFault(f"{band.path}: the band for {m} is not finite", retryable=False)
        out[m] = {"lower": lower, "upper": upper}
    return out
