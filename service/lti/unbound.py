"""An instructor's launch of a graded link that names no exercise (service/lti/links.py): the picker in
"bind" mode. The bind token is signed by the tool, single use and spent only in the launching browser (a
login-state row, like the deep-linking pick); it carries what the launch established (platform, deployment,
context, resource link, line item, who launched), so choosing the exercise binds the link, records the
line item and signs the instructor in as the launch would have."""

from __future__ import annotations

import datetime as dt
import secrets

from sqlalchemy.orm import Session

from grading.exercise import Catalogue
from service.db import utcnow
from service.errors import clip
from service.lti import links, tokens
from service.lti import service as lti_service
from service.lti.errors import LtiError
from service.lti.keys import KeyStore
from service.lti.launch import AGS_SCORE, enrol, remember_line_item
from service.lti.models import LtiLoginState, PlatformRef
from service.lti.tokens import LTI

BIND_AUDIENCE = "titangrade-bind"


def offer(
    session: Session,
    *,
    platform: PlatformRef,
    claims: dict,
    course: str,
    catalogue: Catalogue,
    keys: KeyStore,
    ttl_s: float,
    browser_hash: str,
) -> dict:
    """The bind picker's data for an unbound graded link (an instructor's launch)."""
    key = "bind-" + secrets.token_urlsafe(24)
    session.add(
        LtiLoginState(
            state=key,
            nonce=key,
            platform_id=platform.id,
            expires_at=utcnow() + dt.timedelta(seconds=ttl_s),
            browser_hash=browser_hash,
        )
    )
    lineitem, scopes = links.line_item(claims)
    context = claims.get(LTI + "context")
    bind = tokens.sign(
        {
            "aud": BIND_AUDIENCE,
            "k": key,
            "platform_id": platform.id,
            "link": list(links.link_key(claims) or ()),
            "course": course,
            "lineitem": lineitem if AGS_SCORE in scopes else None,
            "sub": str(claims["sub"])[:200],
            "name": str(claims.get("name") or claims.get("given_name") or claims["sub"])[:200],
        },
        keys=keys,
        lifetime_s=ttl_s,
    )
    return {
        "message_type": "LtiResourceLinkRequest",
        "unbound": True,
        "bind_token": bind,
        "respond": "/lti/bind",
        "course": course,
        "course_title": str(context.get("title") or "")[:200] if isinstance(context, dict) else "",
        "exercises": [
            {"id": e.id, "chapter": e.manifest.chapter, "title": e.manifest.title.en, "title_zh": e.manifest.title.zh}
            for e in catalogue
        ],
    }


def redeem(
    session: Session,
    *,
    bind_token: str,
    exercise_id: str,
    catalogue: Catalogue,
    keys: KeyStore,
    browser_hash: str,
    session_s: float,
) -> tuple[dict, int]:
    """Bind the link to the chosen exercise and sign the instructor in: (the launch's answer, platform id)."""
    bind = tokens.verify_own(bind_token, keys=keys, audience=BIND_AUDIENCE)
    if exercise_id not in catalogue:
        raise LtiError("lti_unknown_exercise", f"no exercise {clip(exercise_id)!r}", status_code=404)
    row = lti_service.spend_offer(
        session,
        signed=bind,
        browser_hash=browser_hash,
        spent="this choice was already made or has expired; launch the link again from the LMS",
        removed="the platform of this link was removed",
    )
    platform, course = PlatformRef.of(row), str(bind["course"])
    link = bind.get("link") or []
    if len(link) == 3:
        links.bind(
            session,
            platform_id=platform.id,
            key=(link[0], link[1], link[2]),
            course=course,
            exercise_id=exercise_id,
            bound_by="instructor",
        )
    if bind.get("lineitem"):
        remember_line_item(
            session,
            platform_id=platform.id,
            url=str(bind["lineitem"]),
            course=course,
            exercise_id=exercise_id,
            deployment_id=link[0] if link else None,
        )
    done = enrol(
        session,
        platform=platform,
        sub=str(bind["sub"]),
        name=str(bind["name"]),
        role="instructor",
        course=course,
        exercise_id=exercise_id,
        session_s=session_s,
    )
    return done, platform.id
