"""Platform registrations (create, list, remove) and OIDC login initiation (a state and a nonce, once)."""

from __future__ import annotations

import datetime as dt
import secrets
from urllib.parse import urlencode, urlsplit

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from service.db import utcnow
from service.errors import Conflict, ServiceError, clip
from service.lti.binding import wrong_browser
from service.lti.errors import LtiError
from service.lti.models import LtiLoginState, LtiPlatform, PlatformStatus

ISSUER_MAX = 200  # identities.issuer


def _url(value: str, field: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ServiceError(f"{field} must be an http(s) URL, not {clip(value)!r}", code="invalid_url", status_code=422)
    return value


def create(
    session: Session,
    *,
    name: str,
    issuer: str,
    client_id: str,
    auth_login_url: str,
    auth_token_url: str,
    keyset_url: str,
    deployment_ids: list[str],
) -> LtiPlatform:
    """Register a platform; (issuer, client_id) is unique among platforms not removed."""
    if not deployment_ids or not all(d.strip() for d in deployment_ids):
        raise ServiceError(
            "give at least one deployment id (the platform shows it after you add the tool)",
            code="invalid_deployment",
            status_code=422,
        )
    if not client_id.strip() or not name.strip():
        raise ServiceError("name and client_id must not be empty", code="invalid_platform", status_code=422)
    if len(issuer) > ISSUER_MAX:  # its users are identities (issuer, sub): identities.issuer holds no more
        raise ServiceError(
            f"the platform's issuer is {len(issuer)} characters; at most {ISSUER_MAX} are supported (its users' "
            "identities are named by it)",
            code="invalid_platform",
            status_code=422,
        )
    for value, field in (
        (issuer, "issuer"),
        (auth_login_url, "auth_login_url"),
        (auth_token_url, "auth_token_url"),
        (keyset_url, "keyset_url"),
    ):
        _url(value, field)
    clash = session.scalar(select(LtiPlatform).where(LtiPlatform.issuer == issuer, LtiPlatform.client_id == client_id))
    if clash is not None:
        if clash.removed_at is None:
            raise Conflict(
                f"platform {clip(issuer)!r} with client id {clip(client_id)!r} is already registered "
                f"(id {clash.id}); remove it first",
                code="platform_exists",
            )
        session.delete(clash)
        session.flush()
    row = LtiPlatform(
        name=name.strip(),
        issuer=issuer,
        client_id=client_id.strip(),
        auth_login_url=auth_login_url,
        auth_token_url=auth_token_url,
        keyset_url=keyset_url,
        deployment_ids=[d.strip() for d in deployment_ids],
    )
    session.add(row)
    session.flush()
    return row


def list_all(session: Session) -> list[LtiPlatform]:
    return list(session.scalars(select(LtiPlatform).where(LtiPlatform.removed_at.is_(None)).order_by(LtiPlatform.id)))


def remove(session: Session, *, platform_id: int) -> LtiPlatform | None:
    """Stop accepting launches from a platform and stop passing grades back to it (idempotent)."""
    row = session.get(LtiPlatform, platform_id)
    if row is not None and row.removed_at is None:
        row.removed_at = utcnow()
    return row


def find(session: Session, *, issuer: str, client_id: str | None) -> LtiPlatform:
    stmt = select(LtiPlatform).where(LtiPlatform.issuer == issuer, LtiPlatform.removed_at.is_(None))
    if client_id:
        stmt = stmt.where(LtiPlatform.client_id == client_id)
    rows = list(session.scalars(stmt))
    if len(rows) > 1 and not client_id:  # a pending registration does not make an approved one ambiguous
        rows = [r for r in rows if r.status == PlatformStatus.ACTIVE] or rows
    if len(rows) != 1:
        why = "is not registered" if not rows else "has several registrations; the platform must send client_id"
        raise LtiError("lti_unknown_platform", f"platform {clip(issuer)!r} {why} (titangrade lti platforms add)")
    if rows[0].status != PlatformStatus.ACTIVE:  # registered itself (dynamic registration), not yet approved
        raise LtiError(
            "lti_platform_pending",
            f"platform {clip(issuer)!r} registered itself but an admin has not approved it yet "
            f"(titangrade lti platforms approve {rows[0].id})",
            status_code=403,
        )
    return rows[0]


def login_redirect(
    session: Session, *, params: dict[str, str], redirect_uri: str, ttl_s: float, browser_hash: str
) -> str:
    """OIDC third-party login initiation: remember a fresh state + nonce bound to the initiating browser
    (`browser_hash`, service/lti/binding.py), return the platform's auth URL."""
    for key in ("iss", "login_hint", "target_link_uri"):
        if not params.get(key):
            raise LtiError("lti_missing_parameter", f"the login initiation lacks {key!r}")
    platform = find(session, issuer=params["iss"], client_id=params.get("client_id"))
    deployment = params.get("lti_deployment_id")
    if deployment and deployment not in platform.deployment_ids:
        raise LtiError("lti_unknown_deployment", f"deployment {clip(deployment)!r} is not registered for this platform")
    state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    now = utcnow()
    remove_expired(session, now=now)
    session.add(
        LtiLoginState(
            state=state,
            nonce=nonce,
            platform_id=platform.id,
            created_at=now,
            expires_at=now + dt.timedelta(seconds=ttl_s),
            browser_hash=browser_hash,
        )
    )
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": platform.client_id,
        "redirect_uri": redirect_uri,
        "login_hint": params["login_hint"],
        "state": state,
        "nonce": nonce,
    }
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    sep = "&" if urlsplit(platform.auth_login_url).query else "?"
    return platform.auth_login_url + sep + urlencode(query)


def remove_expired(session: Session, *, now: dt.datetime) -> int:
    """Every login writes through here: states, tickets and picks past their expiry are deleted (spent ones
    are deleted when spent), so the table holds no more than the logins of one TTL."""
    result = session.execute(delete(LtiLoginState).where(LtiLoginState.expires_at <= now))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def consume_state(session: Session, *, state: str, browser_hash: str) -> LtiLoginState:
    """Spend a login state (or a ticket's or pick's key) once, atomically, and only from the browser it is
    bound to: the row is deleted. Unknown, used or expired ones are `lti_state_invalid`; a live one sent
    from another browser is `lti_wrong_browser` and stays unspent."""
    now = utcnow()
    row = session.execute(
        delete(LtiLoginState)
        .where(
            LtiLoginState.state == state,
            LtiLoginState.used_at.is_(None),
            LtiLoginState.expires_at > now,
            LtiLoginState.browser_hash == browser_hash,
        )
        .returning(LtiLoginState.state, LtiLoginState.nonce, LtiLoginState.platform_id, LtiLoginState.expires_at)
        .execution_options(synchronize_session=False)
    ).first()
    if row is None:
        live = session.scalar(
            select(LtiLoginState.state).where(
                LtiLoginState.state == state, LtiLoginState.used_at.is_(None), LtiLoginState.expires_at > now
            )
        )
        if live is not None:
            raise wrong_browser()
        raise LtiError(
            "lti_state_invalid",
            "the launch's state is unknown, already used or expired; start the launch again from the LMS",
        )
    return LtiLoginState(
        state=row.state,
        nonce=row.nonce,
        platform_id=row.platform_id,
        expires_at=row.expires_at,
        browser_hash=browser_hash,
    )


def spend_offer(session: Session, *, signed: dict, browser_hash: str, spent: str, removed: str) -> LtiPlatform:
    """Spend the login state a picker's or a bind form's signed token carries (once, in the browser that
    got it) and return its platform, still registered. `spent` and `removed` are the refusals' words."""
    try:
        consume_state(session, state=str(signed["k"]), browser_hash=browser_hash)
    except LtiError as exc:
        if exc.code == "lti_wrong_browser":
            raise
        raise LtiError("lti_pick_invalid", spent) from exc
    platform = session.get(LtiPlatform, signed["platform_id"])
    if platform is None or platform.removed_at is not None:
        raise LtiError("lti_unknown_platform", removed)
    return platform
