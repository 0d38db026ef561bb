"""Identity verbs: get_or_create identities, memberships, tokens (create, list, revoke); only hashes stored."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from service.auth.models import LOCAL_ISSUER, Identity, Membership, Token
from service.auth.principal import COURSE_ROLES, ROLES, Principal
from service.db import utcnow

TOKEN_PREFIX = "tg_"
DEFAULT_TOKEN_TTL_DAYS = 90


def hash_token(token: str) -> str:
    # Tokens are 256 random bits, so a plain SHA-256 suffices (no salt or slow hash needed).
    return hashlib.sha256(token.encode()).hexdigest()


def get_or_create_identity(session: Session, *, issuer: str, subject: str, name: str | None = None) -> Identity:
    row = session.scalar(select(Identity).where(Identity.issuer == issuer, Identity.subject == subject))
    if row is None:
        row = Identity(issuer=issuer, subject=subject, name=name or subject)
        session.add(row)
        session.flush()
    return row


def set_membership(session: Session, *, identity: Identity, course: str, role: str) -> Membership:
    """Enrol `identity` in `course` as `role` (replacing an earlier role there)."""
    if role not in COURSE_ROLES:
        raise ValueError(f"a course role is one of {', '.join(COURSE_ROLES)}, not {role!r}")
    row = session.scalar(select(Membership).where(Membership.identity_id == identity.id, Membership.course == course))
    if row is None:
        row = Membership(identity_id=identity.id, course=course, role=role)
        session.add(row)
    else:
        row.role, row.inactive_at = role, None  # enrolled again (a launch): active again after a roster drop
    session.flush()
    return row


def memberships(session: Session, *, identity_id: int) -> dict[str, str]:
    rows = session.execute(
        select(Membership.course, Membership.role).where(
            Membership.identity_id == identity_id, Membership.inactive_at.is_(None)
        )
    )
    return {course: role for course, role in rows.all()}  # noqa: C416 (Row pairs, not tuples, for mypy)


def create_token(
    session: Session,
    *,
    user: str,
    role: str,
    course: str | None = None,
    issuer: str = LOCAL_ISSUER,
    expires_in_days: float | None = DEFAULT_TOKEN_TTL_DAYS,
    label: str = "",
) -> str:
    """Make sure the identity (issuer, user) holds `role` (admin: global; else in `course`), store the hash
    of a fresh token limited to `course`, and return the token itself (shown once)."""
    return issue_token(
        session, user=user, role=role, course=course, issuer=issuer, expires_in_days=expires_in_days, label=label
    )[0]


def issue_token(
    session: Session,
    *,
    user: str,
    role: str,
    course: str | None,
    issuer: str,
    expires_in_days: float | None,
    label: str,
) -> tuple[str, Token, Identity]:
    """create_token, returning the token, its stored row and its identity."""
    if role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    if not user.strip():
        raise ValueError("a token needs a user (the subject)")
    if role == "admin" and course:
        raise ValueError("admin is a global role and takes no course; for one course use role instructor")
    if role != "admin" and not course:
        raise ValueError(f"a {role}'s token needs a course; the only global role is admin")
    if expires_in_days is not None and expires_in_days <= 0:
        raise ValueError("the expiry must be positive (days)")
    identity = get_or_create_identity(session, issuer=issuer, subject=user)
    if role == "admin":
        identity.global_role = "admin"
    elif course:
        set_membership(session, identity=identity, course=course, role=role)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires = None if expires_in_days is None else utcnow() + dt.timedelta(days=expires_in_days)
    row = Token(
        token_hash=hash_token(token),
        identity_id=identity.id,
        course=course or None,
        label=label or f"{role} token",
        expires_at=expires,
    )
    session.add(row)
    session.flush()
    return token, row, identity


_TOKEN_LOOKUP = (  # built once: the statement is the same for every request, only the hash changes
    select(
        Token.id,
        Token.course,
        Token.revoked_at,
        Token.expires_at,
        Identity.id,
        Identity.issuer,
        Identity.subject,
        Identity.name,
        Identity.global_role,
        Membership.course,
        Membership.role,
    )
    .join(Identity, Identity.id == Token.identity_id)
    .outerjoin(Membership, (Membership.identity_id == Identity.id) & Membership.inactive_at.is_(None))
    .where(Token.token_hash == bindparam("token_hash"))
)


def principal_for_token(session: Session, *, token: str) -> Principal | None:
    """The caller a bearer token stands for, or None if it is unknown, revoked or expired.

    One round trip (token, identity and memberships joined), selecting columns rather than loading
    objects, run as plain Core on the session's connection (no ORM statement processing): every API
    request pays for this lookup."""
    rows = session.connection().execute(_TOKEN_LOOKUP, {"token_hash": hash_token(token)}).all()
    if not rows:
        return None
    tok_id, tok_course, revoked_at, expires_at, identity_id, issuer, subject, name, global_role = rows[0][:9]
    if revoked_at is not None or (expires_at is not None and expires_at <= utcnow()):
        return None
    member = {course: role for *_, course, role in rows if course is not None}
    if tok_course is not None:
        member = {c: r for c, r in member.items() if c == tok_course}
    return Principal(
        identity_id=identity_id,
        issuer=issuer,
        subject=subject,
        name=name,
        global_role=global_role if tok_course is None else None,
        memberships=member,
        scope=tok_course,
        via="token",
        credential_id=tok_id,
        expires_at=expires_at,
    )


def list_tokens(
    session: Session, *, identity_id: int | None = None, include_inactive: bool = False
) -> list[tuple[Token, Identity]]:
    """Tokens (newest first), optionally of one identity; revoked and expired ones only when asked."""
    stmt = select(Token, Identity).join(Identity, Identity.id == Token.identity_id).order_by(Token.id.desc())
    if identity_id is not None:
        stmt = stmt.where(Token.identity_id == identity_id)
    if not include_inactive:
        now = utcnow()
        stmt = stmt.where(Token.revoked_at.is_(None), (Token.expires_at.is_(None)) | (Token.expires_at > now))
    return [(t, i) for t, i in session.execute(stmt).all()]


def token_state(token: Token) -> str:
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= utcnow():
        return "expired"
    return "active"


def revoke_token(session: Session, *, token_id: int) -> Token | None:
    """Mark a token revoked (idempotent); None if there is no such token."""
    row = session.get(Token, token_id)
    if row is not None and row.revoked_at is None:
        row.revoked_at = utcnow()
    return row


def has_admin(session: Session) -> bool:
    now = utcnow()
    stmt = (
        select(Token.id)
        .join(Identity, Identity.id == Token.identity_id)
        .where(
            Identity.global_role == "admin",
            Token.revoked_at.is_(None),
            (Token.expires_at.is_(None)) | (Token.expires_at > now),
        )
        .limit(1)
    )
    return session.scalar(stmt) is not None
