"""A validated launch becomes a session: the identity (platform issuer + subject), its membership in the
course the LTI context maps to (role from the roles claim), the line item grades go back to, and a
short-lived bearer token. Deep-linking requests get a signed pick token instead (instructors only)."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import secrets
import time
from dataclasses import dataclass

import jwt
from sqlalchemy import select
from sqlalchemy.orm import Session

from grading.exercise import Catalogue
from service.auth.service import create_token, get_or_create_identity
from service.db import utcnow
from service.errors import clip
from service.lti import service as lti_service
from service.lti import tokens, urls
from service.lti.errors import LtiError
from service.lti.keys import KeyStore
from service.lti.models import LtiContext, LtiLineItem, LtiLoginState, LtiPlatform, PlatformRef
from service.lti.tokens import LTI

AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
AGS_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
TEACHING = {MEMBERSHIP + r for r in ("Instructor", "ContentDeveloper", "Administrator")} | {
    MEMBERSHIP + "Instructor#TeachingAssistant",
    "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
    "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
}
MESSAGE_TYPES = ("LtiResourceLinkRequest", "LtiDeepLinkingRequest")
PICK_AUDIENCE = "titangrade-deep-link"


def role_of(roles: object) -> str:
    """instructor for teaching roles (instructor, TA, content developer, administrators), else learner."""
    return "instructor" if isinstance(roles, list) and any(r in TEACHING for r in roles) else "learner"


def platform_for_launch(session: Session, *, platform_id: int) -> PlatformRef:
    """The platform of a spent login state, read before the id_token's keyset is fetched (no transaction
    stays open over that fetch)."""
    platform = session.get(LtiPlatform, platform_id)
    if platform is None or platform.removed_at is not None:
        raise LtiError("lti_unknown_platform", "the platform of this login was removed")
    return PlatformRef.of(platform)


def validate(*, id_token: str, platform: PlatformRef, nonce: str, jwks: tokens.JwksCache, leeway_s: float) -> dict:
    """Every check of a launch whose login state (platform, nonce) was already spent by the caller. Takes no
    database session: it may fetch the platform's keyset."""
    if tokens.unverified_issuer(id_token) != platform.issuer:
        raise LtiError("lti_wrong_issuer", "the id_token's issuer is not the platform that started the login")
    claims = tokens.verify_id_token(id_token, platform=platform, jwks=jwks, leeway_s=leeway_s)
    if claims["nonce"] != nonce:
        raise LtiError("lti_nonce_invalid", "the id_token's nonce is not the one this login issued (replayed?)")
    if claims.get(LTI + "deployment_id") not in platform.deployment_ids:
        raise LtiError(
            "lti_unknown_deployment",
            f"deployment {clip(claims.get(LTI + 'deployment_id'))!r} is not registered for this platform",
        )
    if claims.get(LTI + "version") != "1.3.0":
        raise LtiError("lti_version", "only LTI 1.3.0 launches are accepted")
    if claims.get(LTI + "message_type") not in MESSAGE_TYPES:
        raise LtiError("lti_message_type", f"message type {clip(claims.get(LTI + 'message_type'))!r} is not supported")
    return claims


def course_for(session: Session, *, platform: PlatformRef, context: object) -> str:
    if not isinstance(context, dict) or not isinstance(context.get("id"), str) or not context["id"]:
        raise LtiError("lti_no_context", "the launch has no context (course); launch from inside a course")
    row = session.scalar(
        select(LtiContext).where(LtiContext.platform_id == platform.id, LtiContext.context_id == context["id"][:255])
    )
    if row is None:
        row = LtiContext(
            platform_id=platform.id,
            context_id=context["id"][:255],
            course=f"lti{platform.id}-{context['id']}"[:200],
            title=str(context.get("title", ""))[:500],
        )
        session.add(row)
        session.flush()
    return row.course


def resource_link(
    session: Session, *, platform: PlatformRef, claims: dict, catalogue: Catalogue, session_s: float
) -> dict:
    """Enrol the launching user and hand out a token; remember the line item for grade passback."""
    course = course_for(session, platform=platform, context=claims.get(LTI + "context"))
    role = role_of(claims.get(LTI + "roles"))
    custom = claims.get(LTI + "custom") or {}
    exercise_id = custom.get("exercise_id") if isinstance(custom, dict) else None
    if exercise_id is not None and exercise_id not in catalogue:
        raise LtiError(
            "lti_unknown_exercise",
            f"the link names exercise {clip(exercise_id)!r}, which this "
            "titangrade does not have; pick the exercise again (deep linking)",
            status_code=404,
        )
    ags = claims.get(AGS) or {}
    lineitem = ags.get("lineitem") if isinstance(ags, dict) else None
    if exercise_id and isinstance(lineitem, str) and AGS_SCORE in (ags.get("scope") or []):
        item = session.scalar(
            select(LtiLineItem).where(LtiLineItem.platform_id == platform.id, LtiLineItem.url == lineitem)
        )
        if item is None:
            session.add(
                LtiLineItem(platform_id=platform.id, url=lineitem[:2000], course=course, exercise_id=exercise_id)
            )
    name = str(claims.get("name") or claims.get("given_name") or claims["sub"])[:200]
    get_or_create_identity(session, issuer=platform.issuer, subject=str(claims["sub"])[:200], name=name)
    token = create_token(
        session,
        user=str(claims["sub"])[:200],
        role=role,
        course=course,
        issuer=platform.issuer,
        expires_in_days=session_s / 86400,
        label="lti launch",
    )
    links = {
        "course": f"/api/v1/courses/{course}/gradebook" if role == "instructor" else None,
        "submissions": "/api/v1/submissions",
    }
    if exercise_id:
        links["exercise"] = f"/api/v1/exercises/{exercise_id}"
    return {
        "message_type": "LtiResourceLinkRequest",
        "token": token,
        "token_type": "Bearer",
        "expires_in": int(session_s),
        "course": course,
        "role": role,
        "exercise_id": exercise_id,
        "links": links,
    }


def deep_link_request(
    session: Session,
    *,
    platform: PlatformRef,
    claims: dict,
    catalogue: Catalogue,
    keys: KeyStore,
    ttl_s: float,
    browser_hash: str,
    allow_http: bool,
) -> dict:
    """An instructor picks an exercise: list them with a pick token that carries the platform's settings.
    The pick is single use, lives `ttl_s` and works only in this browser (a row keyed by its `k`)."""
    if role_of(claims.get(LTI + "roles")) != "instructor":
        raise LtiError("lti_forbidden", "only instructors can add titangrade exercises to a course", status_code=403)
    settings = claims.get(DL)
    if not isinstance(settings, dict) or not isinstance(settings.get("deep_link_return_url"), str):
        raise LtiError("lti_deep_linking", "the deep-linking request has no deep_link_return_url")
    return_url = urls.return_url(settings["deep_link_return_url"], allow_http=allow_http)
    key = "pick-" + secrets.token_urlsafe(24)
    session.add(
        LtiLoginState(
            state=key,
            nonce=key,
            platform_id=platform.id,
            expires_at=utcnow() + dt.timedelta(seconds=ttl_s),
            browser_hash=browser_hash,
        )
    )
    pick = tokens.sign(
        {
            "aud": PICK_AUDIENCE,
            "k": key,
            "platform_id": platform.id,
            "deployment_id": claims[LTI + "deployment_id"],
            "return_url": return_url,
            "data": settings.get("data"),
        },
        keys=keys,
        lifetime_s=ttl_s,
    )
    return {
        "message_type": "LtiDeepLinkingRequest",
        "pick_token": pick,
        "respond": "/lti/deep-link",
        "exercises": [{"id": e.id, "title": e.manifest.title.en, "max_score": e.manifest.max_score} for e in catalogue],
    }


@dataclass(frozen=True, slots=True)
class DeepLinkAnswer:
    return_url: str
    jwt: str
    frame_origins: str  # who may frame the auto-posting page: the platform's own origins


def deep_link_response(
    session: Session,
    *,
    pick_token: str,
    exercise_id: str,
    catalogue: Catalogue,
    keys: KeyStore,
    launch_url: str,
    browser_hash: str,
    allow_http: bool,
    frame_ancestors: str = "",
) -> DeepLinkAnswer:
    """The signed LtiDeepLinkingResponse for the picked exercise; spends the pick (once, this browser)."""
    try:
        kid = jwt.get_unverified_header(pick_token).get("kid")
        key = next(k for k in keys.keys() if k.kid == kid)  # noqa: SIM118 (a KeyStore, not a dict)
        pick = jwt.decode(
            pick_token,
            jwt.PyJWK(key.public_jwk()).key,
            algorithms=["RS256"],
            audience=PICK_AUDIENCE,
            options={"require": ["exp", "k"]},
        )
    except (StopIteration, jwt.InvalidTokenError) as exc:
        raise LtiError("lti_pick_invalid", "the pick token is invalid or expired; open the picker again") from exc
    if exercise_id not in catalogue:
        raise LtiError("lti_unknown_exercise", f"no exercise {clip(exercise_id)!r}", status_code=404)
    return_url = urls.return_url(pick["return_url"], allow_http=allow_http)
    try:
        lti_service.consume_state(session, state=str(pick["k"]), browser_hash=browser_hash)
    except LtiError as exc:
        if exc.code == "lti_wrong_browser":
            raise
        raise LtiError(
            "lti_pick_invalid", "the pick token was already used or has expired; open the picker again"
        ) from exc
    platform = session.get(LtiPlatform, pick["platform_id"])
    if platform is None or platform.removed_at is not None:
        raise LtiError("lti_unknown_platform", "the platform of this picker was removed")
    exercise = catalogue.get(exercise_id)
    item = {
        "type": "ltiResourceLink",
        "title": exercise.manifest.title.en,
        "url": launch_url,
        "custom": {"exercise_id": exercise_id},
        "lineItem": {
            "scoreMaximum": exercise.manifest.max_score,
            "label": exercise.manifest.title.en,
            "resourceId": exercise_id,
        },
    }
    claims = {
        "iss": platform.client_id,
        "aud": platform.issuer,
        "azp": platform.client_id,
        "nonce": f"{time.time_ns():x}",
        LTI + "message_type": "LtiDeepLinkingResponse",
        LTI + "version": "1.3.0",
        LTI + "deployment_id": pick["deployment_id"],
        "https://purl.imsglobal.org/spec/lti-dl/claim/content_items": [item],
    }
    if pick.get("data") is not None:
        claims["https://purl.imsglobal.org/spec/lti-dl/claim/data"] = pick["data"]
    return DeepLinkAnswer(
        return_url,
        tokens.sign(claims, keys=keys),
        urls.frame_origins(PlatformRef.of(platform), allow_http=allow_http, extra=frame_ancestors),
    )


AUTOPOST_SCRIPT = "document.forms[0].submit()"


def autopost(answer: DeepLinkAnswer) -> tuple[str, dict[str, str]]:
    """The page that posts the deep-linking response back to the platform (the browser submits it), and its
    headers: only this inline script runs, the form may post only to the return URL's origin, and only
    the platform may frame it."""
    page = (
        f'<!doctype html><form method="post" action="{html.escape(answer.return_url)}">'
        f'<input type="hidden" name="JWT" value="{html.escape(answer.jwt)}"><noscript><button>Continue</button>'
        f"</noscript></form><script>{AUTOPOST_SCRIPT}</script>"
    )
    digest = base64.b64encode(hashlib.sha256(AUTOPOST_SCRIPT.encode()).digest()).decode()
    csp = (
        f"default-src 'none'; script-src 'sha256-{digest}'; form-action {urls.origin(answer.return_url)}; "
        f"frame-ancestors {answer.frame_origins}; base-uri 'none'"
    )
    return page, {"Content-Security-Policy": csp, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
