"""LTI Dynamic Registration (1EdTech): the registration URL a platform administrator pastes into the LMS.

The platform opens `/lti/register?openid_configuration=...&registration_token=...`. The tool reads the
platform's OpenID configuration (through the address-checking client: no private addresses in prod mode),
checks it (the issuer's host is the configuration URL's host, https endpoints, RS256 and private_key_jwt),
POSTs its own registration to the platform's `registration_endpoint` with the registration token, and
records the `client_id` it is given as a **pending** platform. No launch from it is accepted until an admin
approves it (`titangrade lti platforms approve ID`, `POST /api/v1/lti/platforms/{id}/approve`). The answer
is a page that posts `{subject: "org.imsglobal.lti.close"}` to the LMS window that opened it.
"""

from __future__ import annotations

import base64
import hashlib
import html
from dataclasses import dataclass

import httpx
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from grading.text import clean_text
from service.db import utcnow
from service.errors import Conflict, NotFound, ServiceError, clip
from service.lti import calls as services
from service.lti.calls import PlatformCalls, PlatformError
from service.lti.errors import LtiError
from service.lti.models import LtiPlatform, PlatformStatus
from service.lti.service import ISSUER_MAX

PLATFORM_CONF = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONF = "https://purl.imsglobal.org/spec/lti-tool-configuration"
TOOL_SCOPES = (
    services.SCOPE_SCORE,
    services.SCOPE_LINEITEM,
    services.SCOPE_LINEITEM_READ,
    services.SCOPE_RESULT_READ,
    services.SCOPE_ROSTER,
)
CLOSE_SCRIPT = "(window.opener || window.parent).postMessage({subject: 'org.imsglobal.lti.close'}, '*');"
URL_FIELDS = ("authorization_endpoint", "token_endpoint", "jwks_uri", "registration_endpoint")


def _invalid(why: str) -> LtiError:
    return LtiError(
        "lti_registration_invalid",
        f"the platform's OpenID configuration is refused: {why}; check the registration URL the LMS used",
    )


def _url(value: object, field: str, *, allow_http: bool) -> str:
    schemes = ("https", "http") if allow_http else ("https",)
    if not isinstance(value, str) or not value or len(value) > 2000:
        raise _invalid(f"{field} must be a URL of at most 2000 characters")
    try:
        parsed = httpx.URL(value)
    except (httpx.InvalidURL, ValueError):
        raise _invalid(f"{field} {clip(value)!r} is not a URL") from None
    if parsed.scheme not in schemes or not parsed.host or parsed.userinfo:
        raise _invalid(f"{field} {clip(value)!r} must be an absolute {' or '.join(schemes)} URL without user info")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformConfig:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    registration_endpoint: str
    scopes_supported: tuple[str, ...] | None
    product: str


def validate_configuration(config: object, *, url: str, allow_http: bool) -> PlatformConfig:
    """The fields the tool uses, checked as the Dynamic Registration spec asks."""
    if not isinstance(config, dict):
        raise _invalid("it is not a JSON object")
    issuer = _url(config.get("issuer"), "issuer", allow_http=allow_http)
    if len(issuer) > ISSUER_MAX:
        raise _invalid(f"the issuer is longer than {ISSUER_MAX} characters")
    if httpx.URL(issuer).host != httpx.URL(url).host:
        raise LtiError(
            "lti_registration_issuer_mismatch",
            f"the configuration's issuer {clip(issuer)!r} is not on the host it was read from "
            f"({clip(httpx.URL(url).host)!r}); the spec requires them to match",
        )
    found = {f: _url(config.get(f), f, allow_http=allow_http) for f in URL_FIELDS}
    auth_methods = config.get("token_endpoint_auth_methods_supported", ["private_key_jwt"])
    if not isinstance(auth_methods, list) or "private_key_jwt" not in auth_methods:
        raise _invalid("its token endpoint does not support private_key_jwt client authentication")
    algs = config.get("id_token_signing_alg_values_supported", ["RS256"])
    if not isinstance(algs, list) or "RS256" not in algs:
        raise _invalid("it does not sign id_tokens with RS256")
    scopes = config.get("scopes_supported")
    if scopes is not None and not (isinstance(scopes, list) and all(isinstance(s, str) for s in scopes)):
        raise _invalid("scopes_supported is not a list of strings")
    platform = config.get(PLATFORM_CONF)
    product = platform.get("product_family_code") if isinstance(platform, dict) else None
    return PlatformConfig(
        issuer=issuer,
        scopes_supported=tuple(scopes) if scopes is not None else None,
        product=clean_text(product)[:60] if isinstance(product, str) else "",
        **found,
    )


def tool_registration(*, tool_url: str, scopes_supported: tuple[str, ...] | None) -> dict:
    """The tool's client registration (OpenID Connect Dynamic Client Registration + the LTI tool
    configuration): login, launch and keyset URLs, the Advantage scopes it uses, resource-link and
    deep-linking messages, and the claims it reads."""
    base = tool_url.rstrip("/")
    launch = base + "/lti/launch"
    scopes = [s for s in TOOL_SCOPES if scopes_supported is None or s in scopes_supported]
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": base + "/lti/login",
        "redirect_uris": [launch],
        "client_name": "titangrade",
        "jwks_uri": base + "/lti/jwks",
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(scopes),
        TOOL_CONF: {
            "domain": httpx.URL(base).host,
            "target_link_uri": launch,
            "claims": ["iss", "sub", "name", "given_name", "family_name"],
            "messages": [
                {"type": "LtiResourceLinkRequest", "target_link_uri": launch},
                {"type": "LtiDeepLinkingRequest", "target_link_uri": launch, "label": "titangrade exercise"},
            ],
        },
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Registered:
    client_id: str
    deployment_id: str | None


def register(
    calls: PlatformCalls, *, config_url: str, registration_token: str, tool_url: str, allow_http: bool
) -> tuple[PlatformConfig, Registered]:
    """Read and check the configuration, then register with the platform (no transaction is open)."""
    config_url = _url(config_url, "openid_configuration", allow_http=allow_http)
    status, data, _ = calls.call("GET", config_url, what="OpenID configuration", headers={"accept": "application/json"})
    if status != 200:
        raise PlatformError(f"the platform's OpenID configuration answered HTTP {status}")
    config = validate_configuration(data, url=config_url, allow_http=allow_http)
    headers = {"accept": "application/json", "content-type": "application/json"}
    if registration_token:
        headers["authorization"] = f"Bearer {registration_token}"
    body = tool_registration(tool_url=tool_url, scopes_supported=config.scopes_supported)
    status, answer, _ = calls.call(
        "POST", config.registration_endpoint, what="registration endpoint", headers=headers, json=body
    )
    if status not in (200, 201) or not isinstance(answer, dict):
        raise PlatformError(f"the platform refused the registration (HTTP {status}): {clip(answer)}")
    client_id = answer.get("client_id")
    if not isinstance(client_id, str) or not client_id.strip() or len(client_id) > 200:
        raise PlatformError("the platform's registration answer has no client_id of 1 to 200 characters")
    tool_conf = answer.get(TOOL_CONF)
    deployment = tool_conf.get("deployment_id") if isinstance(tool_conf, dict) else None
    if not isinstance(deployment, str) or not deployment.strip() or len(deployment) > 255:
        deployment = None
    return config, Registered(client_id=client_id.strip(), deployment_id=deployment)


def pending_count(session: Session) -> int:
    return int(
        session.scalar(
            select(func.count()).where(LtiPlatform.status == PlatformStatus.PENDING, LtiPlatform.removed_at.is_(None))
        )
        or 0
    )


def check_room(session: Session, *, max_pending: int) -> None:
    if pending_count(session) >= max_pending:
        raise LtiError(
            "lti_registration_limit",
            f"{max_pending} registrations already await an admin's approval; approve or remove them first "
            "(titangrade lti platforms list --pending)",
            status_code=429,
        )


def record_pending(
    session: Session, *, config: PlatformConfig, registered: Registered, max_pending: int
) -> LtiPlatform:
    """The platform as a pending registration (launches refused until approved)."""
    check_room(session, max_pending=max_pending)
    clash = session.scalar(
        select(LtiPlatform).where(LtiPlatform.issuer == config.issuer, LtiPlatform.client_id == registered.client_id)
    )
    if clash is not None:
        if clash.removed_at is None:
            raise Conflict(
                f"platform {clip(config.issuer)!r} with client id {clip(registered.client_id)!r} is already "
                f"registered (id {clash.id})",
                code="platform_exists",
            )
        session.delete(clash)
        session.flush()
    name = f"{config.product or 'platform'} ({httpx.URL(config.issuer).host})"[:200]
    row = LtiPlatform(
        name=name,
        issuer=config.issuer,
        client_id=registered.client_id,
        auth_login_url=config.authorization_endpoint,
        auth_token_url=config.token_endpoint,
        keyset_url=config.jwks_uri,
        deployment_ids=[registered.deployment_id] if registered.deployment_id else [],
        status=PlatformStatus.PENDING,
    )
    session.add(row)
    session.flush()
    return row


def approve(session: Session, *, platform_id: int, deployment_ids: list[str] | None = None) -> LtiPlatform:
    """Accept launches from a pending platform (adding deployment ids the registration did not carry)."""
    row = session.get(LtiPlatform, platform_id)
    if row is None or row.removed_at is not None:
        raise NotFound(f"no LTI platform {platform_id}", code="platform_not_found")
    ids = list(dict.fromkeys([*row.deployment_ids, *(d.strip() for d in deployment_ids or () if d.strip())]))
    if not ids:
        raise ServiceError(
            "the platform's registration carried no deployment id; give the one the LMS shows for the tool "
            "(--deployment-id, or deployment_ids in the request)",
            code="invalid_deployment",
            status_code=422,
        )
    row.deployment_ids, row.status = ids, PlatformStatus.ACTIVE
    if row.created_at is None:
        row.created_at = utcnow()
    return row


def script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


def page(*, title: str, message: str, frame_origins: str, close: bool) -> tuple[str, dict[str, str]]:
    """The page the platform shows in its registration frame or window; `close` posts the spec's close
    message to the window that opened it. Only the platform's origin may frame it."""
    script = f"<script>{CLOSE_SCRIPT}</script>" if close else ""
    body = (
        f'<!doctype html><html lang="en"><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<main><h1>{html.escape(title)}</h1><p>{html.escape(message)}</p></main>{script}</html>"
    )
    csp = (
        f"default-src 'none'; script-src '{script_hash(CLOSE_SCRIPT)}'; frame-ancestors {frame_origins}; "
        "base-uri 'none'"
    )
    return body, {"Content-Security-Policy": csp, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def frame_origin(config_url: str) -> str:
    """The origin of the configuration URL (the LMS that opened the registration), or 'none'."""
    try:
        parsed = httpx.URL(config_url)
    except (httpx.InvalidURL, ValueError, TypeError):
        return "'none'"
    if parsed.scheme not in ("http", "https") or not parsed.host or any(c in config_url for c in " ;,'\""):
        return "'none'"
    host = parsed.raw_host.decode("ascii").lower()
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{f'[{host}]' if ':' in host else host}{port}"
