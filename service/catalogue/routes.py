"""HTTP routes for the exercise catalogue (under /exercises): views, the learner template, stats, bulk regrade."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import FileResponse

from service.catalogue import service
from service.catalogue.schemas import ExercisePublic
from service.courses import stats
from service.courses import timing as timings
from service.courses.stats_schemas import CheckFailures, ExerciseStats
from service.deps import CatalogueDep, CurrentUser, SessionDep, SettingsDep, StaffUser
from service.openapi import errors
from service.params import COURSE_QUERY, EXERCISE
from service.patterns import PRINTABLE_NAME
from service.queue.service import BULK_REGRADE_PRIORITY
from service.submissions import service as submissions
from service.submissions.schemas import RegradeAccepted

router = APIRouter(prefix="/exercises", tags=["exercises"])
WindowQuery = Annotated[
    int, Query(ge=1, le=timings.MAX_WINDOW_DAYS, description="time-to-grade over the runs finished in these days")
]


@router.get("", response_model=list[ExercisePublic])
def list_exercises(_: CurrentUser, catalogue: CatalogueDep) -> list[ExercisePublic]:
    return service.list_all(catalogue)


@router.get("/{exercise_id}", response_model=ExercisePublic, responses=errors(404))
def get_exercise(exercise_id: EXERCISE, _: CurrentUser, catalogue: CatalogueDep) -> ExercisePublic:
    return service.to_public(catalogue.get(exercise_id))


@router.get(
    "/{exercise_id}/notebook",
    response_class=FileResponse,
    responses={200: {"content": {"application/x-ipynb+json": {"schema": {"type": "object"}}}}, **errors(404)},
)
def get_template(exercise_id: EXERCISE, _: CurrentUser, catalogue: CatalogueDep) -> FileResponse:
    """The learner template from exercises/ (never anything under reference/)."""
    exercise = catalogue.get(exercise_id)
    return FileResponse(
        exercise.notebook_path, media_type="application/x-ipynb+json", filename=exercise.notebook_path.name
    )


@router.get("/{exercise_id}/stats", response_model=ExerciseStats, responses=errors(403, 404))
def exercise_stats(
    exercise_id: EXERCISE,
    user: StaffUser,
    session: SessionDep,
    catalogue: CatalogueDep,
    course: COURSE_QUERY = None,
    window_days: WindowQuery = timings.DEFAULT_WINDOW_DAYS,
) -> ExerciseStats:
    """Each learner's best attempt (one value per learner): its distribution, who has not submitted, the pass
    rate of each check over those best attempts, and time-to-grade percentiles (null when no run finished)."""
    return stats.exercise_stats(
        session, user=user, exercise=catalogue.get(exercise_id), catalogue=catalogue, course=course,
        window_days=window_days,
    )  # fmt: skip


@router.get("/{exercise_id}/failures", response_model=CheckFailures, responses=errors(403, 404, 422))
def check_failures(
    exercise_id: EXERCISE,
    user: StaffUser,
    session: SessionDep,
    catalogue: CatalogueDep,
    check: Annotated[
        str, Query(max_length=200, pattern=PRINTABLE_NAME, description="a check name of the exercise's manifest")
    ],
    course: COURSE_QUERY = None,
) -> CheckFailures:
    """The best attempts (the ones a check's pass rate counts) that failed `check`, lowest score first."""
    return stats.check_failures(
        session, user=user, exercise=catalogue.get(exercise_id), catalogue=catalogue, check=check, course=course
    )


@router.post("/{exercise_id}/regrade", status_code=202, response_model=RegradeAccepted, responses=errors(403, 404))
def regrade_exercise(
    exercise_id: EXERCISE,
    user: StaffUser,
    session: SessionDep,
    settings: SettingsDep,
    catalogue: CatalogueDep,
    dry_run: Annotated[bool, Query(description="only say what would be queued and skipped")] = False,
) -> RegradeAccepted:
    """Regrade every submission of an exercise (in the caller's course) behind interactive work."""
    catalogue.get(exercise_id)
    subs = service.bulk_candidates(session, user=user, exercise_id=exercise_id)
    if dry_run:
        ready, skipped = submissions.regrade_plan(session, subs=subs, catalogue=catalogue)
        ids = [s.id for s in ready]
    else:
        ids, skipped = submissions.regrade(
            session, subs=subs, priority=BULK_REGRADE_PRIORITY, max_attempts=settings.max_attempts, catalogue=catalogue
        )
    by_reason = dict(sorted(Counter(s.reason for s in skipped).items()))
    if not subs:
        message = f"no submissions of {exercise_id} in the courses you teach; nothing to regrade"
    else:
        verb = "would be queued" if dry_run else "queued"
        message = f"{len(ids)} run(s) {verb}" + (
            f"; {len(skipped)} skipped ({', '.join(f'{n} {r}' for r, n in by_reason.items())}; see `skipped`)"
            if skipped
            else ""
        )
    return RegradeAccepted(
        queued=0 if dry_run else len(ids),
        submission_ids=ids,
        skipped=skipped,
        skipped_by_reason=by_reason,
        dry_run=dry_run,
        message=message,
    )
