"""metric_trace checks: a training run's metrics.jsonl, run.json and files against a reference.

Each sub-check present in the spec (present, steps, finite, equals, band, recorded_band, monotone,
bounded, run, absent_files, present_files) is worth an equal share unless `weights` says otherwise.
`recorded_band` takes the band recorded on the run's device kind and dtype (grading/bands.py); where none
was recorded that part is not counted and the feedback says so. Field reference: docs/grading-engine.md.
"""

from __future__ import annotations

import fnmatch
import json
import math
from typing import Any

from grading import bands
from grading.checks.base import CheckContext, CheckVerdict, register
from grading.checks.compare import count_close, equal
from grading.codec import Missing, Opaque, Raised, decode
from grading.errors import GraderFault
from grading.i18n import t

PARTS = (
    "present",
    "steps",
    "finite",
    "equals",
    "band",
    "recorded_band",
    "monotone",
    "bounded",
    "run",
    "absent_files",
    "present_files",
)
_DIRECTIONS = {
    "decreasing": lambda a, b, tol: b < a + tol,
    "increasing": lambda a, b, tol: b > a - tol,
    "nonincreasing": lambda a, b, tol: b <= a + tol,
    "nondecreasing": lambda a, b, tol: b >= a - tol,
}


def _steps(items: list[int]) -> str:
    return ", ".join(map(str, items[:8])) + (", ..." if len(items) > 8 else "")


def _series(records: list[dict], metric: str, step_key: str) -> list[Any]:
    rows = [r for r in records if isinstance(r, dict) and metric in r]
    rows.sort(key=lambda r: r.get(step_key, 0) if isinstance(r.get(step_key, 0), (int, float)) else 0)
    return [r[metric] for r in rows]


def _as_float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _reference_values(entry: Any, metric: str, ctx: CheckContext) -> list[float]:
    ref = entry.get("reference") if isinstance(entry, dict) else entry
    if isinstance(ref, str):  # a named trace file next to the answer file: {metric: [values]}
        if ctx.reference_dir is None:
            raise GraderFault(
                f"band for {metric} names trace {ref!r} but no reference directory is known", retryable=False
            )
        data = json.loads((ctx.reference_dir / f"{ref}.json").read_text(encoding="utf-8"))
        ref = data[metric]
    return [_as_float(x) for x in decode(ref)]


def _check_present(metrics, records, spec, ctx):
    problems = []
    for m in spec.get("metrics", []):
        missing = sum(1 for r in records if not isinstance(r, dict) or m not in r)
        if missing or not records:
            problems.append(t("trace_missing_metric", ctx.lang, metric=m, count=missing or 0, total=len(records)))
    return problems


def _check_steps(metrics, records, spec, ctx):
    want = spec["steps"]
    got = len(records)
    if isinstance(want, dict):
        ok = want.get("min", 0) <= got <= want.get("max", math.inf)
        shown = f"{want.get('min', 0)}..{want.get('max', '')}"
    else:
        ok, shown = got == int(want), str(want)
    return [] if ok else [t("trace_steps", ctx.lang, got=got, expected=shown)]


def _check_finite(metrics, records, spec, ctx):
    problems = []
    for m, values in metrics.items():
        bad = [i for i, v in enumerate(values) if not math.isfinite(_as_float(v))]
        if bad:
            problems.append(t("trace_not_finite", ctx.lang, metric=m, steps=_steps(bad)))
    return problems


def _check_equals(metrics, records, spec, ctx):
    problems = []
    rtol, atol = float(spec.get("rtol", 1e-5)), float(spec.get("atol", 1e-8))
    for m, entry in spec["equals"].items():
        values = entry.get("values") if isinstance(entry, dict) else entry
        r, a = (
            (float(entry.get("rtol", rtol)), float(entry.get("atol", atol)))
            if isinstance(entry, dict)
            else (rtol, atol)
        )
        expected = [_as_float(x) for x in decode(values)]
        got = [_as_float(x) for x in metrics.get(m, [])]
        if len(got) != len(expected):
            problems.append(t("trace_length", ctx.lang, metric=m, got=len(got), expected=len(expected)))
            continue
        bad = [
            i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if count_close(g, e, rtol=r, atol=a) != (0, 1)
        ]
        if bad:
            problems.append(t("trace_differs", ctx.lang, metric=m, steps=_steps(bad)))
    return problems


def _check_band(metrics, records, spec, ctx):
    problems = []
    for m, entry in spec["band"].items():
        got = [_as_float(x) for x in metrics.get(m, [])]
        if "lower" in entry or "upper" in entry:
            n = len(entry.get("lower", entry.get("upper", [])))
            lower = [_as_float(x) for x in decode(entry.get("lower", [-math.inf] * n))]
            upper = [_as_float(x) for x in decode(entry.get("upper", [math.inf] * n))]
            if len(lower) != len(upper):  # a broken reference would leave the tail unchecked: refuse it
                raise GraderFault(
                    f"band for {m}: lower has {len(lower)} steps but upper has {len(upper)}", retryable=False
                )
        else:
            ref = _reference_values(entry, m, ctx)
            rel, ab = float(entry.get("rel", 0.1)), float(entry.get("abs", 0.0))
            lower = [x - abs(x) * rel - ab for x in ref]
            upper = [x + abs(x) * rel + ab for x in ref]
        if len(got) != len(lower):
            problems.append(t("trace_length", ctx.lang, metric=m, got=len(got), expected=len(lower)))
            continue
        bad = [i for i, (g, lo, hi) in enumerate(zip(got, lower, upper, strict=True)) if not (lo <= g <= hi)]
        if bad:
            problems.append(t("trace_out_of_band", ctx.lang, metric=m, steps=_steps(bad)))
    return problems


def _recorded_band(spec: dict, run: Any, ctx: CheckContext) -> tuple[dict | None, str, list[str]]:
    """(the band spec of the run's profile and device, the note when none is recorded for that device, the
    problems when the run's claims are impossible). run.json is the learner's: a profile outside the
    exercise's, a device the job was not given, or a dtype no band of that device has fails the part, so
    claiming an unrecorded device never skips the comparison."""
    entry = spec["recorded_band"]
    if ctx.reference_dir is None:
        raise GraderFault("recorded_band needs the reference directory", retryable=False)
    traces = ctx.reference_dir.parent / str(entry.get("traces", "traces"))
    kind, dtype = bands.run_device(run)
    profile = run.get("profile") if isinstance(run, dict) else None
    profile = profile if isinstance(profile, str) else None
    shown = {"device": (kind or "?")[:32], "dtype": (dtype or "?")[:32], "profile": (profile or "?")[:32]}
    allowed = list(entry.get("profiles") or [])
    if allowed and profile not in allowed:
        return None, "", [t("band_wrong_profile", ctx.lang, expected=", ".join(allowed), **shown)]
    if kind is None or dtype is None:  # the lab's run.json always says both
        return None, "", [t("band_device_unstated", ctx.lang)]
    if kind not in (ctx.device, "cpu"):
        return None, "", [t("band_wrong_device", ctx.lang, granted=ctx.device, **shown)]
    found = bands.load_bands(traces)
    band = bands.pick_band(found, profile=profile, kind=kind, dtype=dtype)
    if band is None:
        if recorded := bands.recorded_dtypes(found, profile=profile, kind=kind):
            return None, "", [t("band_wrong_dtype", ctx.lang, recorded=", ".join(recorded), **shown)]
        # the learner's own run.json values, cut short: a hostile run.json must not flood the feedback
        return None, t("band_not_recorded", ctx.lang, **shown), []
    return {"band": bands.band_spec(band, list(entry["metrics"]))}, "", []


def _check_monotone(metrics, records, spec, ctx):
    problems = []
    for m, entry in spec["monotone"].items():
        direction = entry if isinstance(entry, str) else entry["direction"]
        tol = 0.0 if isinstance(entry, str) else float(entry.get("tolerance", 0.0))
        ok = _DIRECTIONS[direction]
        got = [_as_float(x) for x in metrics.get(m, [])]
        bad = [i + 1 for i in range(len(got) - 1) if not ok(got[i], got[i + 1], tol)]
        if bad or len(got) < 2:
            problems.append(t("trace_not_monotone", ctx.lang, metric=m, direction=direction, steps=_steps(bad) or "-"))
    return problems


def _check_bounded(metrics, records, spec, ctx):
    problems = []
    for m, entry in spec["bounded"].items():
        lo, hi = float(entry.get("min", -math.inf)), float(entry.get("max", math.inf))
        got = [_as_float(x) for x in metrics.get(m, [])]
        bad = [i for i, g in enumerate(got) if not (lo <= g <= hi)]
        if bad or not got:
            problems.append(t("trace_out_of_bounds", ctx.lang, metric=m, steps=_steps(bad) or "-"))
    return problems


def _lookup(run: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(run, dict) or part not in run:
            return Missing()
        run = run[part]
    return run


def _check_run(metrics, records, spec, ctx, run=None):
    problems = []
    for key, expected in spec["run"].items():
        got = _lookup(run, key)
        expected = decode(expected)
        if isinstance(got, Missing):
            problems.append(t("trace_run_missing", ctx.lang, key=key))
        elif isinstance(expected, float) and not isinstance(got, bool):
            if count_close(got, expected, rtol=float(spec.get("rtol", 1e-5)), atol=float(spec.get("atol", 1e-8))) != (
                0,
                1,
            ):
                problems.append(t("trace_run_wrong", ctx.lang, key=key))
        elif not equal(got, expected):
            problems.append(t("trace_run_wrong", ctx.lang, key=key))
    return problems


def _check_absent(files, spec, ctx):
    problems = []
    for pattern in spec["absent_files"]:
        hits = [f for f in files if fnmatch.fnmatch(f, pattern) or fnmatch.fnmatch(f.split("/")[0], pattern)]
        if hits:
            problems.append(t("trace_file_present", ctx.lang, path=hits[0]))
    return problems


def _check_present_files(files, spec, ctx):
    return [
        t("trace_file_absent", ctx.lang, pattern=p)
        for p in spec["present_files"]
        if not any(fnmatch.fnmatch(f, p) for f in files)
    ]


@register("metric_trace")
def metric_trace(answer: Any, spec: dict[str, Any], ctx: CheckContext) -> CheckVerdict:
    if isinstance(answer, (Missing, Raised, Opaque)) or not isinstance(answer, dict):
        why = answer.message if isinstance(answer, Raised) else t("answer_missing", ctx.lang, name=ctx.answer_name)
        return CheckVerdict(fraction=0.0, feedback=t("trace_no_run", ctx.lang, why=why))
    records = [r for r in answer.get("metrics", []) if isinstance(r, dict)]
    step_key = spec.get("step_key", "step")
    names = set(spec.get("metrics", []))
    for field in ("equals", "band", "monotone", "bounded"):
        names |= set(spec.get(field, {}))
    names |= set(spec.get("recorded_band", {}).get("metrics", []))
    metrics = {m: _series(records, m, step_key) for m in sorted(names)}
    run, files = answer.get("run", {}), [str(f).replace("\\", "/") for f in answer.get("files", [])]
    parts = [
        p
        for p in PARTS
        if p in spec
        or (p == "present" and "metrics" in spec)
        or (p == "finite" and spec.get("finite", True) and "metrics" in spec)
    ]
    if spec.get("finite") is False and "finite" in parts:
        parts.remove("finite")
    notes = []
    band_problems: list[str] = []
    if "recorded_band" in parts:
        recorded, note, band_problems = _recorded_band(spec, run, ctx)
        if recorded is None and not band_problems:  # no band for this device: not counted, and it says why
            parts.remove("recorded_band")
            notes.append(note)
    if not parts:
        return CheckVerdict(fraction=0.0, feedback=" ".join(notes), counted=False)
    weights = {p: float(spec.get("weights", {}).get(p, 1.0)) for p in parts}
    total = sum(weights.values()) or 1.0
    earned, failed = 0.0, []
    for part in parts:
        if part == "recorded_band":
            problems = band_problems or _check_band(metrics, records, recorded, ctx)
        elif part == "run":
            problems = _check_run(metrics, records, spec, ctx, run=run)
        elif part == "absent_files":
            problems = _check_absent(files, spec, ctx)
        elif part == "present_files":
            problems = _check_present_files(files, spec, ctx)
        else:
            problems = globals()[f"_check_{part}"](metrics, records, spec, ctx)
        if problems:
            failed.append(t("trace_part", ctx.lang, part=part, detail="; ".join(problems)))
        else:
            earned += weights[part]
    feedback = t("trace_failed_parts", ctx.lang, parts=" | ".join(failed)) if failed else ""
    return CheckVerdict(fraction=earned / total, feedback=" ".join([*notes, feedback]).strip())
