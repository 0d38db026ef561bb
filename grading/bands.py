"""Recorded reference bands: reference/traces/<profile>/band.json, one per profile, each stating the device
kind and dtype it was recorded on (scripts/record_reference_traces.py writes them; docs/lab-training.md).

A metric_trace check's `recorded_band` part asks for the band of the device the learner's run used: the
band whose device kind and dtype equal run.json's `device` and `dtype`. None found means the part cannot
be graded on this run (never a CPU band standing in for a GPU run).
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
    for path in sorted(traces.glob("*/band.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        device = doc.get("device") if isinstance(doc, dict) else None
        if doc.get("format") != BAND_FORMAT or not isinstance(device, dict):
            raise GraderFault(f"{path} is not a {BAND_FORMAT} band stating its device", retryable=False)
        kind, dtype = device.get("kind"), device.get("dtype")
        if not isinstance(kind, str) or not isinstance(dtype, str):
            raise GraderFault(f"{path} does not state the device kind and dtype it was recorded on", retryable=False)
        profile = str(doc.get("profile", path.parent.name))
        bands.append(Band(profile=profile, kind=kind, dtype=dtype, path=path, doc=doc))
    return bands


def pick_band(
    bands: list[Band], *, kind: str | None, dtype: str | None, profile: Any, profiles: list[str] | None
) -> Band | None:
    """The band recorded on this device kind and dtype (among `profiles` if given); the run's own profile
    wins a tie. None: no band for this device. Two candidates left: an ambiguous reference (GraderFault)."""
    if kind is None or dtype is None:
        return None
    found = [b for b in bands if b.kind == kind and b.dtype == dtype and (profiles is None or b.profile in profiles)]
    if len(found) > 1:
        found = [b for b in found if b.profile == profile] or found
    if len(found) > 1:
        names = ", ".join(b.profile for b in found)
        raise GraderFault(f"several reference bands for {kind}/{dtype} ({names}); name profiles", retryable=False)
    return found[0] if found else None


def band_spec(band: Band, metrics: list[str]) -> dict[str, dict[str, list[float]]]:
    """The chosen band in metric_trace's `band` shape ({metric: {lower, upper}})."""
    out = {}
    for m in metrics:
        lower, upper = band.limits(m)
        if any(not math.isfinite(x) for x in lower + upper):
            raise GraderFault(f"{band.path}: the band for {m} is not finite", retryable=False)
        out[m] = {"lower": lower, "upper": upper}
    return out
