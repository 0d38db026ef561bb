"""LTI 1.3 rows: registered platforms, login states (state + nonce, single use), the course a platform's
context maps to, and the AGS line items grades are passed back to (the outbox's "lti" targets)."""

from __future__ import annotations

import datetime as dt
import enum
from dataclasses import dataclass

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from service.db import Base, utcnow


class LtiPlatform(Base):
    """A platform (LMS) registration: who signs launches (issuer, keyset) and where the tool asks for tokens."""

    __tablename__ = "lti_platforms"
    __table_args__ = (UniqueConstraint("issuer", "client_id", name="uq_lti_platform_issuer_client"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    issuer: Mapped[str] = mapped_column(String(500))
    client_id: Mapped[str] = mapped_column(String(200))
    auth_login_url: Mapped[str] = mapped_column(String(2000))  # the platform's OIDC authorization endpoint
    auth_token_url: Mapped[str] = mapped_column(String(2000))  # OAuth2 token endpoint (AGS)
    keyset_url: Mapped[str] = mapped_column(String(2000))  # the platform's JWKS
    deployment_ids: Mapped[list] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    removed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    # active, or pending: registered itself (LTI Dynamic Registration) and awaits an admin's approval
    status: Mapped[str] = mapped_column(String(20), default="active", server_default="active")


class PlatformStatus(enum.StrEnum):
    ACTIVE = "active"
    PENDING = "pending"


class LtiLoginState(Base):
    """One OIDC login initiation (or a sign-in ticket's or pick token's single-use key): the id_token that
    answers it must carry `nonce`; spent once (the row is deleted), by the browser that started it."""

    __tablename__ = "lti_login_states"

    state: Mapped[str] = mapped_column(String(64), primary_key=True)
    nonce: Mapped[str] = mapped_column(String(64), unique=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
    used_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    # sha256 of the browser-binding cookie set at /lti/login (service/lti/binding.py): only that browser can
    # spend the state, the sign-in ticket or the deep-linking pick this row stands for
    browser_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)


class LtiContext(Base):
    """A platform's course (LTI context) and the titangrade course it is: `lti-<platform id>-<context id>`."""

    __tablename__ = "lti_contexts"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", name="uq_lti_context"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"), index=True)
    context_id: Mapped[str] = mapped_column(String(255))
    course: Mapped[str] = mapped_column(String(200), index=True)
    title: Mapped[str] = mapped_column(String(500), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    # Names and Role Provisioning Services (service/lti/nrps.py): the roster URL the last launch carried,
    # when a sync was last asked for (the launch throttle), when one last succeeded, and its outcome
    memberships_url: Mapped[str | None] = mapped_column(String(2000), nullable=True)
    roster_requested_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    roster_synced_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    roster_members: Mapped[int | None] = mapped_column(Integer, nullable=True)
    roster_error: Mapped[str] = mapped_column(String(1000), default="", server_default="")


class LtiLineItem(Base):
    """An AGS line item (a gradebook column) for one exercise of one course; scores of that exercise's
    learners from that platform are POSTed to `{url}/scores`."""

    __tablename__ = "lti_line_items"
    __table_args__ = (UniqueConstraint("platform_id", "url", name="uq_lti_line_item"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2000))
    course: Mapped[str] = mapped_column(String(200), index=True)
    exercise_id: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    resource_link_id: Mapped[str | None] = mapped_column(String(255), nullable=True)
    # platform: its URL came in a launch's AGS claim; tool: titangrade found or made it (service/lti/lineitems.py)
    origin: Mapped[str] = mapped_column(String(20), default="platform", server_default="platform")
    # the deployment of the launch that made it: the AGS client assertion names it (None before revision 0013)
    deployment_id: Mapped[str | None] = mapped_column(String(255), nullable=True)


class LtiResourceLink(Base):
    """A platform's resource link (an LMS activity) bound to one exercise, so a launch without a custom
    `exercise_id` still finds it (service/lti/links.py). `bound_by`: launch (the pick's custom parameter),
    line_item (its `resourceId`) or instructor (chosen in the picker)."""

    __tablename__ = "lti_resource_links"
    __table_args__ = (
        UniqueConstraint("platform_id", "deployment_id", "context_id", "resource_link_id", name="uq_lti_resource_link"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"), index=True)
    deployment_id: Mapped[str] = mapped_column(String(255))
    context_id: Mapped[str] = mapped_column(String(255))
    resource_link_id: Mapped[str] = mapped_column(String(255))
    course: Mapped[str] = mapped_column(String(200), index=True)
    exercise_id: Mapped[str] = mapped_column(String(200))
    bound_by: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


@dataclass(frozen=True, slots=True)
class PlatformRef:
    """What a launch checks against, read in one transaction and used after it (the keyset is fetched
    between transactions, so no database connection is held while a platform answers)."""

    id: int
    issuer: str
    client_id: str
    keyset_url: str
    auth_login_url: str
    deployment_ids: tuple[str, ...]
    auth_token_url: str = ""  # OAuth2 token endpoint (reading a line item's resourceId at launch)

    @classmethod
    def of(cls, row: LtiPlatform) -> PlatformRef:
        return cls(
            row.id,
            row.issuer,
            row.client_id,
            row.keyset_url,
            row.auth_login_url,
            tuple(row.deployment_ids),
            row.auth_token_url,
        )
