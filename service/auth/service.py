"""Bearer tokens: created once (printed, never stored in clear), looked up by SHA-256 hash."""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.auth.models import Token
from service.errors import NotAuthenticated

Role = Literal["learner", "instructor", "admin"]
ROLES: tuple[str, ...] = ("learner", "instructor", "admin")
TOKEN_PREFIX = "tg_"


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """Who is calling: a user name, a role, and the course the token is scoped to (None = any)."""

    user: str
    role: str
    course: str | None

    @property
    def is_staff(self) -> bool:
        return self.role in ("instructor", "admin")

    def can_see_course(self, course: str) -> bool:
        return self.role == "admin" or (self.role == "instructor" and self.course in (None, course))


def hash_token(token: str) -> str:
    # Tokens are 256 random bits, so a plain SHA-256 suffices (no salt or slow hash needed).
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(session: Session, *, user: str, role: str, course: str | None = None) -> str:
    """Store the hash of a fresh token and return the token itself (shown once)."""
    if role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    if not user.strip():
        raise ValueError("a token needs a user name (--user NAME)")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(Token(token_hash=hash_token(token), user=user, role=role, course=course))
    return token


def authenticate(session: Session, *, token: str) -> Principal:
    row = session.scalar(select(Token).where(Token.token_hash == hash_token(token), Token.revoked.is_(False)))
    if row is None:
        raise NotAuthenticated("the bearer token is unknown or revoked; create one with "
                               "`titangrade tokens create --role learner --user NAME`")
    return Principal(user=row.user, role=row.role, course=row.course)


def has_admin(session: Session) -> bool:
    return session.scalar(select(Token.id).where(Token.role == "admin", Token.revoked.is_(False)).limit(1)) is not None
