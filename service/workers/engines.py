"""Which function grades a notebook on the executing side, chosen once by TITANGRADE_GRADING_ENGINE: the
grading engine (`grading.pipeline.grade_notebook`), or the benchmarks' stand-in (service/workers/standin.py,
refused in prod mode by the settings). Both take grade_notebook's arguments and return a GradeResult."""

from __future__ import annotations

import functools
from collections.abc import Callable

from grading.result import GradeResult
from service.config import Settings

ENGINES = ("notebook", "standin-hold")
EngineSpec = tuple[str, tuple[tuple[str, float], ...]]  # (name, stand-in holds): plain data, sent to nodes


def engine_spec(settings: Settings) -> EngineSpec:
    """What the executing side needs to build its grading function (pool processes, Ray nodes)."""
    return settings.grading_engine, tuple(sorted(settings.standin_holds().items()))


def grading_engine(name: str, holds: tuple[tuple[str, float], ...] = ()) -> Callable[..., GradeResult]:
    """The grading function for `name` (an EngineSpec unpacked)."""
    if name == "notebook":
        from grading.pipeline import grade_notebook

        return grade_notebook
    if name == "standin-hold":
        from service.workers.standin import hold

        return functools.partial(hold, holds=dict(holds))
    raise ValueError(f"unknown grading engine {name!r}; this version provides: {', '.join(ENGINES)}")
