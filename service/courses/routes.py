"""Instructor views of a course."""
from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path
from fastapi.responses import PlainTextResponse

from service.courses import service
from service.deps import SessionDep, StaffUser
from service.errors import Forbidden, clip
from service.openapi import errors

router = APIRouter(prefix="/courses", tags=["courses"])


@router.get("/{course}/gradebook", responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}},
                                              **errors(403)})
def gradebook(course: Annotated[str, Path(max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")], user: StaffUser,
              session: SessionDep, policy: Literal["best", "latest"] = "best",
              format: Literal["json", "csv"] = "json"):
    """Scores per learner and exercise under the best- or latest-attempt policy; `?format=csv` for a sheet."""
    if not user.can_teach(course):
        raise Forbidden(f"you are not an instructor of course {clip(course)!r}",
                        zh=f"你不是课程 {clip(course)!r} 的教师")
    rows = service.gradebook(session, course=course, policy=policy)
    if format == "csv":
        return PlainTextResponse(service.to_csv(rows), media_type="text/csv",
                                 headers={"Content-Disposition": service.attachment(f"{course}-gradebook.csv")})
    return {"course": course, "policy": policy, "rows": rows}
