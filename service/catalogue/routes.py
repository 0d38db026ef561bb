"""HTTP routes for the exercise catalogue (under /exercises): views, the learner template, stats, bulk regrade."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import FileResponse
from sqlalchemy import select

from service.catalogue import service
from service.catalogue.schemas import ExercisePublic, ExerciseStats
from service.deps import CatalogueDep, CurrentUser, SessionDep, SettingsDep, StaffUser
from service.openapi import errors
from service.queue.service import BULK_REGRADE_PRIORITY
from service.submissions import service as submissions
from service.submissions.models import Submission
from service.submissions.schemas import RegradeAccepted

router = APIRouter(prefix="/exercises", tags=["exercises"])


@router.get("", response_model=list[ExercisePublic])
def list_exercises(_: CurrentUser, catalogue: CatalogueDep) -> list[ExercisePublic]:
    return service.list_all(catalogue)


@router.get("/{exercise_id}", response_model=ExercisePublic, responses=errors(404))
def get_exercise(exercise_id: str, _: CurrentUser, catalogue: CatalogueDep) -> ExercisePublic:
    return service.to_public(catalogue.get(exercise_id))


@router.get(
    "/{exercise_id}/notebook",
    response_class=FileResponse,
    responses={200: {"content": {"application/x-ipynb+json": {"schema": {"type": "object"}}}}, **errors(404)},
)
def get_template(exercise_id: str, _: CurrentUser, catalogue: CatalogueDep) -> FileResponse:
    """The learner template from exercises/ (never anything under reference/)."""
    exercise = catalogue.get(exercise_id)
    return FileResponse(
        exercise.notebook_path, media_type="application/x-ipynb+json", filename=exercise.notebook_path.name
    )


@router.get("/{exercise_id}/stats", response_model=ExerciseStats, responses=errors(403, 404))
def exercise_stats(exercise_id: str, user: StaffUser, session: SessionDep, catalogue: CatalogueDep) -> ExerciseStats:
    return service.stats(session, user=user, exercise=catalogue.get(exercise_id))


@router.post("/{exercise_id}/regrade", status_code=202, response_model=RegradeAccepted, responses=errors(403, 404))
def regrade_exercise(
    exercise_id: str, user: StaffUser, session: SessionDep, settings: SettingsDep, catalogue: CatalogueDep
) -> RegradeAccepted:
    """Regrade every submission of an exercise (in the caller's course) behind interactive work."""
    catalogue.get(exercise_id)
    stmt = select(Submission).where(Submission.exercise_id == exercise_id, service.taught_by(user))
    subs = list(session.scalars(stmt.order_by(Submission.created_at, Submission.id)))
    ids, skipped = submissions.regrade(
        session, subs=subs, priority=BULK_REGRADE_PRIORITY, max_attempts=settings.max_attempts, catalogue=catalogue
    )
    if not subs:
        message = f"no submissions of {exercise_id} in the courses you teach; nothing to regrade"
    else:
        message = f"{len(ids)} run(s) queued" + (f"; {len(skipped)} skipped (see `skipped`)" if skipped else "")
    return RegradeAccepted(queued=len(ids), submission_ids=ids, skipped=skipped, message=message)
