"""From a launch to a web session: a one-time ticket exchanged at a first-party navigation.

A launch is a cross-site form POST from the LMS (often inside an iframe), so a cookie set on its response
may be refused or, with SameSite=None, would have to be sent on every cross-site request. Instead the
launch answers a browser with a 303 to `/lti/enter?ticket=...`: the ticket is HMAC-signed with the
service secret, names the identity, course, launch token and landing page, lives 60 s and is spent once
(a row in lti_login_states, the table whose rows are already single-use), only in the browser that
launched (the binding cookie of /lti/login, service/lti/binding.py). `/lti/enter` is a top-level GET,
so it sets the ordinary SameSite=Lax session cookie and 303s to the page. Inside an iframe it sets nothing
and shows a link that opens itself in a new tab (the pages refuse framing: frame-ancestors 'none').
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import secrets
from urllib.parse import quote

from sqlalchemy.orm import Session

from service.auth import service as auth
from service.db import utcnow
from service.lti import service as lti_service
from service.lti.errors import LtiError
from service.lti.models import LtiLoginState
from service.web import sessions

TICKET_TTL_S = 60


def landing(*, role: str, course: str, exercise_id: str | None) -> str:
    """Where a launch lands: the exercise's row (learners); its stats page or the gradebook (instructors)."""
    if role == "instructor":
        if exercise_id:
            return "/teach/exercises/" + quote(exercise_id, safe="")
        return "/teach/courses/" + quote(course, safe="") + "/gradebook"
    return "/exercises#ex-" + quote(exercise_id, safe=".-_") if exercise_id else "/exercises"


def _mac(secret: str, body: str) -> str:
    return hmac.new(secret.encode(), ("lti-enter:" + body).encode(), hashlib.sha256).hexdigest()


def issue_ticket(
    session: Session,
    *,
    secret: str,
    platform_id: int,
    launched: dict,
    session_s: float,
    browser_hash: str,
    frame_origins: str,
) -> str:
    """The ticket for a resource-link launch's result (`launch.resource_link`), inside its transaction; only
    the launching browser (`browser_hash`) can spend it. `frame_origins` may frame its new-tab page."""
    principal = auth.principal_for_token(session, token=launched["token"])
    assert principal is not None  # just created in this transaction
    key = "enter-" + secrets.token_urlsafe(24)
    session.add(
        LtiLoginState(
            state=key,
            nonce="enter-" + secrets.token_urlsafe(24),
            platform_id=platform_id,
            expires_at=utcnow() + dt.timedelta(seconds=TICKET_TTL_S),
            browser_hash=browser_hash,
        )
    )
    payload = {
        "k": key,
        "i": principal.identity_id,
        "c": launched["course"],
        "t": principal.credential_id,
        "s": int(min(session_s, sessions.SESSION_TTL_S)),
        "d": landing(role=launched["role"], course=launched["course"], exercise_id=launched["exercise_id"]),
        "f": frame_origins,
        "l": launched.get("language"),  # the link's language (the pick's custom `lang`), or None
    }
    body = base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")
    return body + "~" + _mac(secret, body)


def read_ticket(*, secret: str, ticket: str) -> dict:
    """The signed payload of a ticket (not yet spent); forged ones are a 400."""
    body, _, mac = ticket.rpartition("~")
    if not body or len(ticket) > 2000 or not hmac.compare_digest(mac, _mac(secret, body)):
        raise LtiError("lti_ticket_invalid", "this sign-in link is not valid; launch again from the LMS")
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def redeem_ticket(session: Session, *, secret: str, ticket: str, browser_hash: str) -> tuple[str, str, str | None]:
    """Spend a ticket in the browser that launched: (session cookie value, landing path, the link's language
    or None). Forged, expired or used tickets are a 400 `lti_ticket_invalid`; one opened in another browser
    `lti_wrong_browser`."""
    payload = read_ticket(secret=secret, ticket=ticket)
    try:
        lti_service.consume_state(session, state=payload["k"], browser_hash=browser_hash)
    except LtiError as exc:
        if exc.code == "lti_wrong_browser":
            raise
        raise LtiError(
            "lti_ticket_invalid", "this sign-in link was already used or has expired; launch again from the LMS"
        ) from exc
    cookie = sessions.create_web_session(
        secret=secret, identity_id=payload["i"], scope=payload["c"], token_id=payload["t"], ttl_s=payload["s"]
    )
    lang = payload.get("l")
    return cookie, payload["d"], lang if isinstance(lang, str) else None
