"""A stand-in for the grading engine, for benchmarks only (`TITANGRADE_GRADING_ENGINE=standin-hold`).

It has `grading.pipeline.grade_notebook`'s interface and runs where the engine would (a pool process, or a
Ray task on its node), but grades nothing: it holds the job's slot and everything the executor reserved
for it (a Ray task's CPUs, memory and NPUs) for the exercise's declared time, then returns a result that
says so. Everything around it is the production path: intake, the queue, fair share, claims, leases,
the executor, fenced storing. Settings refuse it in prod mode (service/config.py).

What it held is in the result's trace (one record), so a benchmark or test can check it: the seconds, the
resources Ray assigned to the task (`get_assigned_resources`), the node, and wall-clock start and end.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping

from grading.exercise import Catalogue
from grading.progress import Event, Started
from grading.result import GradeResult, Status
from grading.sandbox import CPU_ONLY, DeviceGrant

ENGINE_NAME = "standin-hold"
MESSAGE = "stand-in engine (benchmarks only): nothing was graded; the job's resources were held"


def hold_s(holds: Mapping[str, float], exercise_id: str) -> float:
    """Seconds `exercise_id` is held: its own entry, else the "*" entry, else 0."""
    return float(holds.get(exercise_id, holds.get("*", 0.0)))


def _ray_placement() -> tuple[dict[str, float], str]:
    """The resources Ray assigned to the running task and its node; empty outside a Ray worker."""
    ray = sys.modules.get("ray")  # imported by the Ray worker process already; never imported here
    if ray is None or not ray.is_initialized():
        return {}, ""
    ctx = ray.get_runtime_context()
    try:
        return dict(ctx.get_assigned_resources()), ctx.get_node_id()
    except Exception:  # the driver side (no task): nothing assigned
        return {}, ""


def hold(
    source: bytes | str | dict,
    *,
    holds: Mapping[str, float],
    exercise_id: str | None = None,
    catalogue: Catalogue | None = None,
    lang: str = "en",
    sandbox: object = None,
    devices: DeviceGrant = CPU_ONLY,
    progress: Callable[[Event], None] | None = None,
    observer: object = None,
) -> GradeResult:
    """Hold this job's resources for the exercise's declared time; the result says nothing was graded."""
    if exercise_id is None or catalogue is None or exercise_id not in catalogue:
        raise ValueError(f"stand-in engine: unknown exercise {exercise_id!r}")
    exercise = catalogue.get(exercise_id)
    if progress is not None:
        progress(Started(exercise_id=exercise_id))
    seconds = hold_s(holds, exercise_id)
    started_unix, t0 = time.time(), time.monotonic()
    assigned, node = _ray_placement()
    time.sleep(seconds)
    held_s = time.monotonic() - t0
    device = devices.kind if not devices.ids else f"{devices.kind}:{','.join(str(i) for i in devices.ids)}"
    return GradeResult(
        exercise_id=exercise_id,
        status=Status.GRADED,
        score=0.0,
        max_score=exercise.manifest.max_score,
        message=MESSAGE,
        sandbox=ENGINE_NAME,
        device=device,
        duration_s=held_s,
        engine_version=ENGINE_NAME,
        trace=[
            {
                "standin_hold_s": seconds,
                "held_s": held_s,
                "assigned": assigned,
                "node": node,
                "start_unix": started_unix,
                "end_unix": started_unix + held_s,
            }
        ],
    )
