"""What the identity and token API sends and receives."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from service.auth.models import LOCAL_ISSUER
from service.patterns import PRINTABLE, PRINTABLE_NAME
from service.timefmt import Timestamp


class IdentityPublic(BaseModel):
    issuer: str
    subject: str
    name: str
    global_role: str | None = Field(description='"admin" or null; every other role is per course')


class Me(BaseModel):
    identity: IdentityPublic
    memberships: dict[str, str] = Field(description="course -> learner | instructor (narrowed to the token's course)")
    scope: str | None = Field(description="the one course this credential is limited to, or null")


class TokenCreate(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    subject: str = Field(
        min_length=1, max_length=200, pattern=PRINTABLE_NAME, description="the user's id at the issuer"
    )
    issuer: str = Field(LOCAL_ISSUER, min_length=1, max_length=200, pattern=PRINTABLE_NAME)
    name: str | None = Field(
        None, max_length=200, pattern=PRINTABLE_NAME, description="display name (default: subject)"
    )
    role: Literal["learner", "instructor", "admin"]
    course: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        pattern=PRINTABLE_NAME,
        description="required for learner and instructor; admin is global",
    )
    expires_in_days: float = Field(90, gt=0, le=3650)
    label: str = Field("", max_length=200, pattern=PRINTABLE)


class TokenPublic(BaseModel):
    id: int
    identity: IdentityPublic
    course: str | None
    label: str
    state: Literal["active", "expired", "revoked"]
    created_at: Timestamp
    expires_at: Timestamp | None
    revoked_at: Timestamp | None


class TokenCreated(TokenPublic):
    token: str = Field(description="the bearer token; shown only in this response (only its hash is stored)")


class TokenList(BaseModel):
    items: list[TokenPublic]
