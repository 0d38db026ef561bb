"""Names and Role Provisioning Services: a course's roster from the platform into memberships.

A launch carries the context's `context_memberships_url`; the tool remembers it on the context
(`note_launch`, in the launch's transaction, at most once per `lti_roster_sync_s`) and syncs after the
launch was answered. A sync reads the roster with no transaction open (every page, bounded), then applies
it in one transaction: every listed Active member becomes an identity (platform issuer, `user_id`) with a
membership (learner or instructor from the roles), so a learner who never launched shows in the
gradebook's missing work; members the roster lists as Inactive/Deleted or no longer lists are marked
inactive (`memberships.inactive_at`), never deleted. A roster that cannot be read whole (too large, a
paging loop, an invalid member) changes nothing.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from grading.text import clean_text
from service.auth.models import Identity, Membership
from service.db import transaction, utcnow
from service.errors import ServiceError, clip
from service.lti.calls import SCOPE_ROSTER, Grant, PlatformCalls, PlatformError
from service.lti.launch import TEACHING
from service.lti.models import LtiContext, LtiPlatform, PlatformStatus
from service.lti.tokens import LTI

log = logging.getLogger("titangrade.lti")
CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
MEMBERSHIP_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
SUBJECT_MAX = NAME_MAX = 200  # identities.subject, identities.name
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
SHORT_TEACHING = {"Instructor", "ContentDeveloper", "Administrator", "TeachingAssistant"}
INACTIVE = {"Inactive", "Deleted"}
CHUNK = 500


@dataclass(frozen=True, slots=True)
class Member:
    subject: str
    name: str
    role: str  # learner | instructor
    active: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    course: str
    members: int
    added: int
    deactivated: int

    def public(self) -> dict:
        return {"course": self.course, "members": self.members, "added": self.added, "deactivated": self.deactivated}


def role_of(roles: list[str]) -> str:
    """instructor for teaching roles, full URIs or the short context role names NRPS may send; else learner."""
    for role in roles:
        if role in TEACHING or role in SHORT_TEACHING or role.startswith(MEMBERSHIP + "/Instructor#"):
            return "instructor"
        if role.startswith(MEMBERSHIP + "#") and role.split("#", 1)[1] in SHORT_TEACHING:
            return "instructor"
    return "learner"


def parse_member(raw: object, *, index: int) -> Member:
    """One entry of a membership container, validated (an invalid one fails the whole roster: skipping it
    would mark a real member inactive)."""
    if not isinstance(raw, dict):
        raise PlatformError(f"roster member {index} is not a JSON object")
    subject = raw.get("user_id")
    if not isinstance(subject, str) or not subject.strip() or len(subject) > SUBJECT_MAX:
        raise PlatformError(f"roster member {index} has no user_id of 1 to {SUBJECT_MAX} characters")
    roles = raw.get("roles", [])
    if not isinstance(roles, list) or not all(isinstance(r, str) and len(r) <= 500 for r in roles) or len(roles) > 50:
        raise PlatformError(f"roster member {index} ({clip(subject)!r}) has no valid list of roles")
    status = raw.get("status", "Active")
    if status not in ("Active", *INACTIVE):
        raise PlatformError(f"roster member {index} ({clip(subject)!r}) has an unknown status {clip(status)!r}")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        parts = [raw.get(k) for k in ("given_name", "family_name")]
        name = " ".join(p for p in parts if isinstance(p, str) and p.strip()) or subject
    name = " ".join(clean_text(name).split())[:NAME_MAX] or subject
    return Member(subject=clean_text(subject), name=name, role=role_of(roles), active=status == "Active")


def fetch_roster(calls: PlatformCalls, *, grant: Grant, url: str, max_members: int) -> list[Member]:
    """Every member of every page; more than `max_members` entries is an error (no partial roster)."""
    found: dict[str, Member] = {}
    seen = 0
    for page in calls.pages(url, grant=grant, scopes=(SCOPE_ROSTER,), accept=MEMBERSHIP_TYPE, what="roster service"):
        members = page.data.get("members") if isinstance(page.data, dict) else None
        if not isinstance(members, list):
            raise PlatformError("the platform's roster page has no members list")
        seen += len(members)
        if seen > max_members:
            raise PlatformError(
                f"the platform's roster lists more than {max_members} members; nothing was changed "
                "(raise TITANGRADE_LTI_ROSTER_MAX_MEMBERS if the course really is this large)",
                code="lti_roster_too_large",
            )
        for member in members:
            parsed = parse_member(member, index=len(found) + 1)
            found[parsed.subject] = parsed
    return list(found.values())


def apply_roster(session: Session, *, issuer: str, course: str, members: list[Member]) -> Outcome:
    """Upsert the identities and memberships of `members`; mark this platform's other members of the course
    inactive. Local identities (other issuers) are never touched."""
    now = utcnow()
    by_subject: dict[str, Identity] = {}
    subjects = [m.subject for m in members]
    for start in range(0, len(subjects), CHUNK):
        chunk = subjects[start : start + CHUNK]
        for found in session.scalars(select(Identity).where(Identity.issuer == issuer, Identity.subject.in_(chunk))):
            by_subject[found.subject] = found
    for m in members:
        if m.subject not in by_subject and m.active:
            by_subject[m.subject] = Identity(issuer=issuer, subject=m.subject, name=m.name)
            session.add(by_subject[m.subject])
        elif m.subject in by_subject and m.name != m.subject:
            by_subject[m.subject].name = m.name
    session.flush()
    current: dict[int, Membership] = {
        m.identity_id: m
        for m in session.scalars(
            select(Membership)
            .join(Identity, Identity.id == Membership.identity_id)
            .where(Membership.course == course, Identity.issuer == issuer)
        )
    }
    added, deactivated, listed = 0, 0, set()
    for m in members:
        person = by_subject.get(m.subject)
        if person is None:  # an inactive member the tool never knew: nothing to keep
            continue
        row = current.get(person.id)
        if not m.active:
            if row is not None and row.inactive_at is None:
                row.inactive_at, deactivated = now, deactivated + 1
            continue
        listed.add(person.id)
        if row is None:
            session.add(Membership(identity_id=person.id, course=course, role=m.role))
            added += 1
        else:
            row.role, row.inactive_at = m.role, None
    gone = [ident for ident in current if ident not in listed and current[ident].inactive_at is None]
    for ident in gone:
        current[ident].inactive_at = now
    session.flush()
    return Outcome(course=course, members=len(listed), added=added, deactivated=deactivated + len(gone))


def note_launch(session: Session, *, platform_id: int, claims: dict, throttle_s: float) -> int | None:
    """In the launch's transaction: remember the roster URL the launch carried and, when the course's roster
    was not asked for within `throttle_s`, claim a sync (returns the context id to sync after the answer)."""
    claim = claims.get(CLAIM)
    context = claims.get(LTI + "context")
    if not isinstance(claim, dict) or not isinstance(context, dict) or not isinstance(context.get("id"), str):
        return None
    url = claim.get("context_memberships_url")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")) or len(url) > 2000:
        return None
    row = session.scalar(
        select(LtiContext).where(LtiContext.platform_id == platform_id, LtiContext.context_id == context["id"][:255])
    )
    if row is None:
        return None
    if row.memberships_url != url:
        row.memberships_url = url
    now = utcnow()
    claimed = session.execute(  # one launch of many concurrent ones wins the claim
        update(LtiContext)
        .where(
            LtiContext.id == row.id,
            or_(
                LtiContext.roster_requested_at.is_(None),
                LtiContext.roster_requested_at <= now - dt.timedelta(seconds=throttle_s),
            ),
        )
        .values(roster_requested_at=now)
        .execution_options(synchronize_session=False)
    )
    return row.id if claimed.rowcount else None  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Job:
    context_id: int
    course: str
    issuer: str
    url: str
    grant: Grant


def _job(session: Session, *, context_id: int) -> _Job:
    row = session.execute(
        select(LtiContext, LtiPlatform)
        .join(LtiPlatform, LtiPlatform.id == LtiContext.platform_id)
        .where(LtiContext.id == context_id)
    ).first()
    if row is None or row[1].removed_at is not None or row[1].status != PlatformStatus.ACTIVE:
        raise ServiceError(
            "the course's platform was removed or is not approved", code="roster_unavailable", status_code=409
        )
    ctx, platform = row
    if not ctx.memberships_url:
        raise ServiceError(
            f"no launch from course {clip(ctx.course)!r} has carried the platform's roster service yet (the "
            "Names and Role Provisioning Services claim); enable it for the tool in the LMS and launch once",
            code="roster_unavailable",
            status_code=409,
        )
    grant = Grant(token_url=platform.auth_token_url, client_id=platform.client_id)
    return _Job(context_id=ctx.id, course=ctx.course, issuer=platform.issuer, url=ctx.memberships_url, grant=grant)


def sync_context(
    sessions: sessionmaker[Session], *, calls: PlatformCalls, context_id: int, max_members: int
) -> Outcome:
    """Read the roster (no transaction open), then apply it in one transaction; a failure is recorded on
    the context (`roster_error`) and raised."""
    with sessions() as session:
        job = _job(session, context_id=context_id)
    try:
        members = fetch_roster(calls, grant=job.grant, url=job.url, max_members=max_members)
    except PlatformError as exc:
        with transaction(sessions) as session:
            ctx = session.get(LtiContext, job.context_id)
            if ctx is not None:
                ctx.roster_error = exc.message[:1000]
        raise
    with transaction(sessions) as session:
        outcome = apply_roster(session, issuer=job.issuer, course=job.course, members=members)
        ctx = session.get(LtiContext, job.context_id)
        if ctx is not None:
            ctx.roster_synced_at, ctx.roster_members, ctx.roster_error = utcnow(), outcome.members, ""
    return outcome


def sync_course(
    sessions: sessionmaker[Session], *, calls: PlatformCalls, course: str, max_members: int
) -> list[Outcome]:
    """Sync every LTI context that maps to `course` (on demand: CLI and API)."""
    with sessions() as session:
        ids = list(session.scalars(select(LtiContext.id).where(LtiContext.course == course).order_by(LtiContext.id)))
    if not ids:
        raise ServiceError(
            f"course {clip(course)!r} is not an LTI course (no launch has come from it)",
            code="roster_unavailable",
            status_code=409,
        )
    return [sync_context(sessions, calls=calls, context_id=i, max_members=max_members) for i in ids]


def sync_in_background(
    sessions: sessionmaker[Session], *, calls: PlatformCalls, context_id: int, max_members: int
) -> None:
    """After a launch was answered: a failure is logged and kept on the context, never raised."""
    try:
        outcome = sync_context(sessions, calls=calls, context_id=context_id, max_members=max_members)
        log.info("lti roster synced", extra={"course": outcome.course, "members": outcome.members})
    except ServiceError as exc:
        log.warning("lti roster sync failed: %s", exc.message)
    except Exception:  # a background task must not take the server's thread down with it
        log.exception("lti roster sync failed")


def status(session: Session, *, course: str) -> list[dict]:
    rows = session.scalars(select(LtiContext).where(LtiContext.course == course).order_by(LtiContext.id))
    return [
        {
            "context_id": r.context_id,
            "roster_service": r.memberships_url is not None,
            "synced_at": r.roster_synced_at,
            "members": r.roster_members,
            "error": r.roster_error or None,
        }
        for r in rows
    ]
