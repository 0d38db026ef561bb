"""Web sessions: a signed cookie naming an identity, and the CSRF token bound to it.

The cookie holds `identity_id.scope.token_id.expires.nonce` and an HMAC-SHA256 of it keyed by the service
secret, and nothing in it is secret. Each request rebuilds the Principal from the database (memberships,
and the token it was signed in with, which must still be active), so a revoked token ends its web sessions
too; signing out records the session's nonce (`web_session_revocations`, kept until the session would have
expired), so a copy of the cookie stops working at once. `create_web_session` is the hook other sign-ins
(LTI) call.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from service.auth import service as auth
from service.auth.models import Identity, Token
from service.auth.principal import Principal
from service.db import utcnow
from service.web.models import RevokedWebSession

COOKIE = "tg_session"
SESSION_TTL_S = 12 * 3600


@dataclass(frozen=True, slots=True, kw_only=True)
class WebSession:
    identity_id: int
    scope: str | None  # the one course this session is limited to (as its token or LTI launch was)
    token_id: int | None  # the bearer token used to sign in; None for LTI launches
    expires: int  # unix seconds
    nonce: str

    def encode(self) -> str:
        return ".".join(
            [str(self.identity_id), _b64(self.scope or ""), str(self.token_id or 0), str(self.expires), self.nonce]
        )


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()


def _sign(secret: str, message: str) -> str:
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


def create_web_session(
    *, secret: str, identity_id: int, scope: str | None = None, token_id: int | None = None, ttl_s: int = SESSION_TTL_S
) -> str:
    """The cookie value for a fresh session of `identity_id` (LTI: scope = the launch's course)."""
    body = WebSession(
        identity_id=identity_id,
        scope=scope,
        token_id=token_id,
        expires=int(time.time()) + ttl_s,
        nonce=secrets.token_urlsafe(16),
    ).encode()
    return body + "~" + _sign(secret, "session:" + body)


def read_web_session(*, secret: str, cookie: str | None) -> WebSession | None:
    """The session a cookie names if its signature is good and it has not expired, else None."""
    if not cookie or len(cookie) > 1000 or "~" not in cookie:
        return None
    body, _, mac = cookie.rpartition("~")
    if not hmac.compare_digest(mac, _sign(secret, "session:" + body)):
        return None
    try:
        ident, scope, token_id, expires, nonce = body.split(".")
        ws = WebSession(
            identity_id=int(ident),
            scope=_unb64(scope) or None,
            token_id=int(token_id) or None,
            expires=int(expires),
            nonce=nonce,
        )
    except ValueError:
        return None
    return ws if ws.expires > time.time() else None


def csrf_token(*, secret: str, ws: WebSession) -> str:
    """A per-session token for forms' hidden field (synchronizer pattern, keyed by the session's nonce)."""
    return _sign(secret, "csrf:" + ws.nonce)


def csrf_ok(*, secret: str, ws: WebSession, sent: str | None) -> bool:
    return bool(sent) and hmac.compare_digest(sent or "", csrf_token(secret=secret, ws=ws))


def revoke_web_session(session: Session, *, ws: WebSession) -> None:
    """End `ws` on the server (sign-out): every later request with its cookie is refused, whoever holds a
    copy. Revocations of sessions that have expired anyway are removed on the way (in the caller's transaction)."""
    now = utcnow()
    session.execute(delete(RevokedWebSession).where(RevokedWebSession.expires_at < now))
    expires = dt.datetime.fromtimestamp(ws.expires, dt.UTC).replace(tzinfo=None)
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    # ON CONFLICT: two sign-outs of one session at once (both saw no row yet) must not make the second a 500
    session.execute(
        insert(RevokedWebSession)
        .values(nonce=ws.nonce, expires_at=max(expires, now), revoked_at=now)
        .on_conflict_do_nothing(index_elements=["nonce"])
    )


def is_revoked(session: Session, *, ws: WebSession) -> bool:
    return session.get(RevokedWebSession, ws.nonce) is not None


def principal_for_session(session: Session, *, ws: WebSession) -> Principal | None:
    """Who a web session stands for now, or None if it was signed out, or its identity or sign-in token is
    gone or revoked."""
    identity = session.get(Identity, ws.identity_id)
    if identity is None or is_revoked(session, ws=ws):
        return None
    if ws.token_id is not None:
        token = session.get(Token, ws.token_id)
        if token is None or token.identity_id != identity.id or auth.token_state(token) != "active":
            return None
    member = auth.memberships(session, identity_id=identity.id)
    if ws.scope is not None:
        member = {c: r for c, r in member.items() if c == ws.scope}
    return Principal(
        identity_id=identity.id,
        issuer=identity.issuer,
        subject=identity.subject,
        name=identity.name,
        global_role=identity.global_role if ws.scope is None else None,
        memberships=member,
        scope=ws.scope,
        via="web",
        credential_id=ws.token_id,
    )


def sign_in_with_token(session: Session, *, secret: str, token: str) -> tuple[str, Principal] | None:
    """Check a bearer token typed into the sign-in form; the session cookie value and principal, or None."""
    token = token.strip()
    principal = auth.principal_for_token(session, token=token) if 0 < len(token) <= 200 else None
    if principal is None:
        return None
    return create_web_session(
        secret=secret, identity_id=principal.identity_id, scope=principal.scope, token_id=principal.credential_id
    ), principal
