"""A validated launch becomes a session: the identity (platform issuer + subject), its membership in the
course the LTI context maps to (role from the roles claim), the line item grades go back to, and a
short-lived bearer token. Deep-linking requests get the picker instead (service/lti/deep_link.py)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grading.exercise import Catalogue
from service.auth.service import create_token, get_or_create_identity
from service.db import utcnow
from service.errors import clip
from service.lti import links, tokens
from service.lti.errors import LtiError
from service.lti.models import LtiContext, LtiLineItem, LtiLoginState, LtiPlatform, PlatformRef
from service.lti.tokens import LTI
from service.messages import error
from service.web.i18n import LANGS

AGS_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
TEACHING = {MEMBERSHIP + r for r in ("Instructor", "ContentDeveloper", "Administrator")} | {
    MEMBERSHIP + "Instructor#TeachingAssistant",
    "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
    "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
}
MESSAGE_TYPES = ("LtiResourceLinkRequest", "LtiDeepLinkingRequest")


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


def platform_of_state(session: Session, *, state: str) -> PlatformRef:
    """The platform of a live login state, read without spending it (the cookie-less launch's first leg)."""
    row = session.scalar(select(LtiLoginState).where(LtiLoginState.state == state, LtiLoginState.expires_at > utcnow()))
    if row is None:
        raise LtiError(
            "lti_state_invalid",
            "the launch's state is unknown, already used or expired; start the launch again from the LMS",
        )
    return platform_for_launch(session, platform_id=row.platform_id)


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


def remember_line_item(
    session: Session, *, platform_id: int, url: str, course: str, exercise_id: str, deployment_id: str | None
) -> None:
    """The line item grades of `exercise_id` go back to (the outbox's "lti" target), with its deployment.
    Learners launching a new link at once all try the insert: the losers' savepoints roll back (no 500)."""
    where = (LtiLineItem.platform_id == platform_id, LtiLineItem.url == url[:2000])
    item = session.scalar(select(LtiLineItem).where(*where))
    if item is None:
        try:
            with session.begin_nested():
                session.add(
                    LtiLineItem(
                        platform_id=platform_id,
                        url=url[:2000],
                        course=course,
                        exercise_id=exercise_id,
                        deployment_id=deployment_id,
                    )
                )
                session.flush()
            return
        except IntegrityError:
            item = session.scalar(select(LtiLineItem).where(*where))
            if item is None:
                raise
    if item.deployment_id is None and deployment_id:
        item.deployment_id = deployment_id


def enrol(
    session: Session,
    *,
    platform: PlatformRef,
    sub: str,
    name: str,
    role: str,
    course: str,
    exercise_id: str | None,
    session_s: float,
) -> dict:
    """The launching user's identity and a bearer token for the course: the launch's answer."""
    get_or_create_identity(session, issuer=platform.issuer, subject=sub[:200], name=name[:200])
    token = create_token(
        session,
        user=sub[:200],
        role=role,
        course=course,
        issuer=platform.issuer,
        expires_in_days=session_s / 86400,
        label="lti launch",
    )
    links_ = {
        "course": f"/api/v1/courses/{course}/gradebook" if role == "instructor" else None,
        "submissions": "/api/v1/submissions",
    }
    if exercise_id:
        links_["exercise"] = f"/api/v1/exercises/{exercise_id}"
    return {
        "message_type": "LtiResourceLinkRequest",
        "token": token,
        "token_type": "Bearer",
        "expires_in": int(session_s),
        "course": course,
        "role": role,
        "exercise_id": exercise_id,
        "links": links_,
    }


def resource_link(
    session: Session,
    *,
    platform: PlatformRef,
    claims: dict,
    catalogue: Catalogue,
    session_s: float,
    from_line_item: str | None = None,
) -> dict:
    """Enrol the launching user and hand out a token; remember the line item for grade passback. A graded
    link whose exercise cannot be resolved (service/lti/links.py) is refused to a learner (409, nothing
    stored) and answered `{"unbound": True}` for an instructor (the caller offers the picker)."""
    course = course_for(session, platform=platform, context=claims.get(LTI + "context"))
    role = role_of(claims.get(LTI + "roles"))
    custom = links.custom_exercise(claims)
    if custom is not None and custom not in catalogue:
        raise LtiError(
            "lti_unknown_exercise",
            f"the link names exercise {clip(custom)!r}, which this "
            "titangrade does not have; pick the exercise again (deep linking)",
            status_code=404,
        )
    exercise_id = links.resolve(
        session, platform=platform, claims=claims, course=course, catalogue=catalogue, from_line_item=from_line_item
    )
    lineitem, scopes = links.line_item(claims)
    if exercise_id is None and lineitem is not None:
        if role != "instructor":
            raise LtiError("lti_unbound_link", error("lti_unbound_link"), status_code=409)
        return {"message_type": "LtiResourceLinkRequest", "unbound": True, "course": course, "role": role}
    if exercise_id and lineitem is not None and AGS_SCORE in scopes:
        remember_line_item(
            session,
            platform_id=platform.id,
            url=lineitem,
            course=course,
            exercise_id=exercise_id,
            deployment_id=str(claims[LTI + "deployment_id"]),
        )
    done = enrol(
        session,
        platform=platform,
        sub=str(claims["sub"]),
        name=str(claims.get("name") or claims.get("given_name") or claims["sub"]),
        role=role,
        course=course,
        exercise_id=exercise_id,
        session_s=session_s,
    )
    custom_ = claims.get(LTI + "custom")
    lang = custom_.get("lang") if isinstance(custom_, dict) else None
    done["language"] = lang if lang in LANGS else None  # the link's language, chosen in the picker
    return done
