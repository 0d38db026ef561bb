"""Principal: who is calling, as every authenticator (bearer token today; LTI launch or session cookie
later) describes them, and the access questions routes ask of it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

ROLES: tuple[str, ...] = ("learner", "instructor", "admin")
COURSE_ROLES: tuple[str, ...] = ("learner", "instructor")


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """An identity and what it may do in this request.

    `memberships` maps course -> role and is already narrowed to `scope` when the credential is limited
    to one course. `global_role` is "admin" or None; nothing else is global.
    """

    identity_id: int
    issuer: str
    subject: str
    name: str
    global_role: str | None = None
    memberships: Mapping[str, str] = field(default_factory=dict)
    scope: str | None = None  # the one course this credential is limited to, None = not limited
    via: str = "token"  # the authenticator that vouched for this request
    credential_id: int | None = None  # e.g. the token's id (so a token can revoke itself)
    expires_at: dt.datetime | None = None  # when the credential stops being good (naive UTC), None = never

    @property
    def user(self) -> str:
        return self.name

    @property
    def is_admin(self) -> bool:
        return self.global_role == "admin"

    @property
    def is_staff(self) -> bool:
        """Admin, or instructor of at least one course (the course itself is checked per request)."""
        return self.is_admin or "instructor" in self.memberships.values()

    def role_in(self, course: str) -> str | None:
        if self.is_admin:
            return "admin"
        return self.memberships.get(course)

    def can_teach(self, course: str) -> bool:
        return self.role_in(course) in ("instructor", "admin")

    def teaching(self) -> list[str]:
        return sorted(c for c, r in self.memberships.items() if r == "instructor")

    def in_scope(self, course: str) -> bool:
        return self.scope is None or self.scope == course
