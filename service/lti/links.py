"""Which exercise a resource-link launch is for, so its grades go back even when the platform drops the
pick's custom `exercise_id` (issue 28, item 2).

In order: the custom `exercise_id` (and the link is bound to it, `bound_by = launch`); the link's binding
(`lti_resource_links`); the `resourceId` of the launch's AGS line item, read from the platform with the
line-item scope (then bound, `line_item`). A graded link (it carries a line item) that none of these
resolve is *unbound*: an instructor is offered the picker to bind it (`instructor`), a learner is told so.
"""

from __future__ import annotations

import logging

import httpx
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grading.exercise import Catalogue
from service.db import utcnow
from service.lti import tokens
from service.lti.keys import KeyStore
from service.lti.models import LtiResourceLink, PlatformRef
from service.lti.tokens import LTI

log = logging.getLogger("titangrade.lti")
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_LINEITEM_READ = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
MAX_LINEITEM_BYTES = 64 * 1024
KEY_CHARS = 255


def custom_exercise(claims: dict) -> str | None:
    custom = claims.get(LTI + "custom")
    value = custom.get("exercise_id") if isinstance(custom, dict) else None
    return value if isinstance(value, str) and value else None


def link_key(claims: dict) -> tuple[str, str, str] | None:
    """(deployment, context, resource link) of a launch, or None when the platform sent no resource link."""
    link, context = claims.get(LTI + "resource_link"), claims.get(LTI + "context")
    link_id = link.get("id") if isinstance(link, dict) else None
    context_id = context.get("id") if isinstance(context, dict) else None
    if not isinstance(link_id, str) or not link_id or not isinstance(context_id, str):
        return None
    return str(claims.get(LTI + "deployment_id"))[:KEY_CHARS], context_id[:KEY_CHARS], link_id[:KEY_CHARS]


def line_item(claims: dict) -> tuple[str | None, list[str]]:
    """The launch's AGS line item URL (if any) and the scopes the platform grants the tool."""
    ags = claims.get(AGS)
    if not isinstance(ags, dict):
        return None, []
    url, scopes = ags.get("lineitem"), ags.get("scope")
    return (url if isinstance(url, str) and url else None), [s for s in scopes or [] if isinstance(s, str)]


def bound_exercise(session: Session, *, platform: PlatformRef, claims: dict) -> str | None:
    key = link_key(claims)
    if key is None:
        return None
    return session.scalar(
        select(LtiResourceLink.exercise_id).where(
            LtiResourceLink.platform_id == platform.id,
            LtiResourceLink.deployment_id == key[0],
            LtiResourceLink.context_id == key[1],
            LtiResourceLink.resource_link_id == key[2],
        )
    )


def bind(
    session: Session,
    *,
    platform_id: int,
    key: tuple[str, str, str],
    course: str,
    exercise_id: str,
    bound_by: str,
) -> None:
    """Bind (or re-bind) a resource link to an exercise. Concurrent first launches of one link both try
    the insert: the loser's savepoint rolls back and it updates the winner's row instead (never a 500)."""
    deployment_id, context_id, link_id = key
    where = (
        LtiResourceLink.platform_id == platform_id,
        LtiResourceLink.deployment_id == deployment_id,
        LtiResourceLink.context_id == context_id,
        LtiResourceLink.resource_link_id == link_id,
    )
    row = session.scalar(select(LtiResourceLink).where(*where))
    if row is None:
        try:
            with session.begin_nested():
                session.add(
                    LtiResourceLink(
                        platform_id=platform_id,
                        deployment_id=deployment_id,
                        context_id=context_id,
                        resource_link_id=link_id,
                        course=course,
                        exercise_id=exercise_id,
                        bound_by=bound_by,
                    )
                )
                session.flush()
            return
        except IntegrityError:
            row = session.scalar(select(LtiResourceLink).where(*where))
            if row is None:
                raise
    if row.exercise_id != exercise_id:
        row.exercise_id, row.bound_by, row.updated_at = exercise_id, bound_by, utcnow()
        session.flush()


def resolve(
    session: Session,
    *,
    platform: PlatformRef,
    claims: dict,
    course: str,
    catalogue: Catalogue,
    from_line_item: str | None,
) -> str | None:
    """The exercise of a resource-link launch (custom parameter, binding, line item's resourceId), binding
    the link on the way; None when none names an exercise this titangrade has. The custom parameter is
    checked by the caller (an unknown one is a 404, not an unbound link)."""
    key = link_key(claims)
    chosen = custom_exercise(claims)
    if chosen is not None:
        if key is not None:
            bind(session, platform_id=platform.id, key=key, course=course, exercise_id=chosen, bound_by="launch")
        return chosen
    bound = bound_exercise(session, platform=platform, claims=claims)
    if bound is not None and bound in catalogue:
        return bound
    if from_line_item is not None and from_line_item in catalogue:
        if key is not None:
            bind(
                session,
                platform_id=platform.id,
                key=key,
                course=course,
                exercise_id=from_line_item,
                bound_by="line_item",
            )
        return from_line_item
    return None


def needs_line_item(claims: dict) -> tuple[str, str] | None:
    """(line item URL, scope to ask for) when a resource-link launch names no exercise but carries a line
    item the tool may read; the caller first checks the binding (no fetch for a bound link)."""
    if claims.get(LTI + "message_type") != "LtiResourceLinkRequest" or custom_exercise(claims) is not None:
        return None
    url, scopes = line_item(claims)
    scope = next((s for s in (SCOPE_LINEITEM_READ, SCOPE_LINEITEM) if s in scopes), None)
    return (url, scope) if url and scope else None


def fetch_resource_id(
    client: httpx.Client, *, keys: KeyStore, platform: PlatformRef, url: str, scope: str, deployment_id: str | None
) -> str | None:
    """The line item's `resourceId` from the platform (a token grant, then GET the line item), with no
    database connection held. Any failure is logged and answers None: the link is then unbound."""
    try:
        token, _ = tokens.grant(
            client,
            keys=keys,
            token_url=platform.auth_token_url,
            client_id=platform.client_id,
            scope=scope,
            deployment_id=deployment_id,
        )
        resp = client.get(url, headers={"accept": LINEITEM_TYPE, "authorization": f"Bearer {token}"})
        if resp.status_code != 200 or len(resp.content) > MAX_LINEITEM_BYTES:
            log.warning("lti line item %s answered HTTP %s", url[:200], resp.status_code)
            return None
        body = resp.json()
    except (httpx.HTTPError, ValueError, tokens.GrantRefused) as exc:
        log.warning("lti line item %s could not be read: %s", url[:200], type(exc).__name__)
        return None
    found = body.get("resourceId") if isinstance(body, dict) else None
    return found[:200] if isinstance(found, str) and found else None
