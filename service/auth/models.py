"""Who may call the API: identities (issuer + subject), their course memberships, and bearer tokens.

An identity is named by the party that vouches for it: `issuer` "titangrade" for users made here
(`titangrade tokens create`), an LMS platform's issuer URL for users that arrive through LTI later. Roles
live on memberships (course, role); the only global role is an explicit `global_role = "admin"`.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, utcnow

LOCAL_ISSUER = "titangrade"


class Identity(Base):
    __tablename__ = "identities"
    __table_args__ = (UniqueConstraint("issuer", "subject", name="uq_identity_issuer_subject"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    issuer: Mapped[str] = mapped_column(String(200))
    subject: Mapped[str] = mapped_column(String(200))
    name: Mapped[str] = mapped_column(String(200))  # display name; never used for access checks
    global_role: Mapped[str | None] = mapped_column(String(20), nullable=True)  # "admin" or None
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Membership(Base):
    __tablename__ = "memberships"
    __table_args__ = (UniqueConstraint("identity_id", "course", name="uq_membership_identity_course"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    identity_id: Mapped[int] = mapped_column(ForeignKey("identities.id", ondelete="CASCADE"), index=True)
    course: Mapped[str] = mapped_column(String(200), index=True)
    role: Mapped[str] = mapped_column(String(20))  # learner | instructor
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    # set when an LMS roster sync (service/lti/nrps.py) no longer lists the member: kept, not deleted, but
    # left out of the gradebook's learners and of token access; a launch or a later listing clears it
    inactive_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class Token(Base):
    """A bearer token: only its SHA-256 is stored; `course` narrows it to one course (None = all of the
    identity's memberships); `expires_at` None means it never expires (tokens migrated from 0001)."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, index=True)
    identity_id: Mapped[int] = mapped_column(ForeignKey("identities.id", ondelete="CASCADE"), index=True)
    course: Mapped[str | None] = mapped_column(String(200), nullable=True)
    label: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
