"""What the requests API sends and receives (never ORM rows)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from service.patterns import CLEANED
from service.requests.models import RequestKind, SubmissionRequest
from service.timefmt import Timestamp

TEXT = "at most 2000 characters once cleaned (controls, NUL and lone surrogates are replaced, never refused)"


class RequestCreate(BaseModel):
    kind: RequestKind = Field(description="regrade: look at the score again; problem: report a grading problem")
    text: str = Field(min_length=1, max_length=2000, description=TEXT, json_schema_extra=CLEANED)

    model_config = ConfigDict(extra="forbid")


class RequestAnswer(BaseModel):
    text: str = Field(min_length=1, max_length=2000, description=TEXT, json_schema_extra=CLEANED)
    close: bool = Field(False, description="close the request with this answer (default: status answered)")

    model_config = ConfigDict(extra="forbid")


class RequestPublic(BaseModel):
    id: int
    submission_id: str
    course: str
    exercise_id: str
    author: str = Field(description="the learner's name when they asked")
    kind: str = Field(description="regrade | problem")
    text: str
    status: str = Field(description="open | answered | closed")
    answer: str | None
    answered_by: str | None
    answered_at: Timestamp | None
    closed_by: str | None
    closed_at: Timestamp | None
    created_at: Timestamp
    links: dict[str, str]


class RequestList(BaseModel):
    items: list[RequestPublic]


def to_public(row: SubmissionRequest) -> RequestPublic:
    return RequestPublic(
        id=row.id,
        submission_id=row.submission_id,
        course=row.course,
        exercise_id=row.exercise_id,
        author=row.author,
        kind=row.kind,
        text=row.text,
        status=row.status,
        answer=row.answer,
        answered_by=row.answered_by,
        answered_at=row.answered_at,
        closed_by=row.closed_by,
        closed_at=row.closed_at,
        created_at=row.created_at,
        links={
            "self": f"/api/v1/requests/{row.id}",
            "submission": f"/api/v1/submissions/{row.submission_id}",
            "answer": f"/api/v1/requests/{row.id}/answer",
        },
    )
