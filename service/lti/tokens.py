"""Verifying platform id_tokens against the platform's JWKS (fetched, cached, refetched on an unknown kid)
and signing the tool's own JWTs (deep-linking responses, AGS client assertions) with its active key."""

from __future__ import annotations

import json
import threading
import time
import uuid

import httpx
import jwt

from service.errors import clip
from service.lti.errors import LtiError
from service.lti.keys import KeyStore
from service.lti.models import LtiPlatform

MAX_JWKS_BYTES = 256 * 1024
LTI = "https://purl.imsglobal.org/spec/lti/claim/"


class JwksCache:
    """Platform key sets by URL; a token with a kid not in the cached set triggers one refetch."""

    def __init__(self, client: httpx.Client, *, ttl_s: float) -> None:
        self.client, self.ttl_s = client, ttl_s
        self._sets: dict[str, tuple[float, jwt.PyJWKSet]] = {}
        self._lock = threading.Lock()

    def _fetch(self, url: str) -> jwt.PyJWKSet:
        try:
            resp = self.client.get(url)
            if resp.status_code != 200 or len(resp.content) > MAX_JWKS_BYTES:
                raise LtiError(
                    "lti_jwks_unavailable", f"the platform's keyset answered HTTP {resp.status_code}", status_code=502
                )
            keys = jwt.PyJWKSet.from_dict(resp.json())
        except (httpx.HTTPError, ValueError, jwt.PyJWKSetError) as exc:
            raise LtiError(
                "lti_jwks_unavailable",
                f"the platform's keyset could not be read: {type(exc).__name__}",
                status_code=502,
            ) from exc
        with self._lock:
            self._sets[url] = (time.monotonic(), keys)
        return keys

    def key(self, url: str, kid: str | None) -> jwt.PyJWK:
        with self._lock:
            cached = self._sets.get(url)
        fresh = cached is None or time.monotonic() - cached[0] > self.ttl_s
        keys = self._fetch(url) if fresh or cached is None else cached[1]
        for attempt in range(2):
            match = [k for k in keys.keys if kid is None or k.key_id == kid]
            if match:
                return match[0]
            if attempt == 0 and not fresh:
                keys = self._fetch(url)
        raise LtiError("lti_bad_signature", f"the id_token's key {clip(kid)!r} is not in the platform's keyset")


def verify_id_token(token: str, *, platform: LtiPlatform, jwks: JwksCache, leeway_s: float) -> dict:
    """Signature, iss, aud, azp, exp/iat and the presence of sub/nonce; LtiError names what failed."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.DecodeError as exc:
        raise LtiError("lti_token_invalid", "the id_token is not a JWT") from exc
    if header.get("alg") != "RS256":
        raise LtiError("lti_token_invalid", f"the id_token must be signed with RS256, not {clip(header.get('alg'))!r}")
    key = jwks.key(platform.keyset_url, header.get("kid"))
    try:
        claims = jwt.decode(
            token,
            key.key,
            algorithms=["RS256"],
            audience=platform.client_id,
            issuer=platform.issuer,
            leeway=leeway_s,
            options={"require": ["exp", "iat", "iss", "aud", "sub", "nonce"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise LtiError("lti_token_expired", "the id_token has expired; launch again from the LMS") from exc
    except jwt.InvalidAudienceError as exc:
        raise LtiError("lti_wrong_audience", "the id_token is not addressed to this tool's client id") from exc
    except jwt.InvalidIssuerError as exc:
        raise LtiError("lti_wrong_issuer", "the id_token's issuer is not the platform that started the login") from exc
    except jwt.InvalidSignatureError as exc:
        raise LtiError(
            "lti_bad_signature", "the id_token's signature does not verify with the platform's keys"
        ) from exc
    except jwt.InvalidTokenError as exc:
        raise LtiError("lti_token_invalid", f"the id_token is invalid: {clip(exc)}") from exc
    aud = claims["aud"]
    if ((isinstance(aud, list) and len(aud) > 1) or "azp" in claims) and claims.get("azp") != platform.client_id:
        raise LtiError("lti_wrong_audience", "the id_token's azp is not this tool's client id")
    return claims


def sign(claims: dict, *, keys: KeyStore, lifetime_s: float = 300) -> str:
    """A JWT from the tool, signed RS256 with the active key (kid in the header)."""
    key = keys.active()
    now = int(time.time())
    body = {"iat": now, "exp": now + int(lifetime_s), "jti": uuid.uuid4().hex, **claims}
    return jwt.encode(body, key.private_pem, algorithm="RS256", headers={"kid": key.kid})


def unverified_issuer(token: str) -> str:
    try:
        return str(jwt.decode(token, options={"verify_signature": False}).get("iss", ""))
    except jwt.DecodeError as exc:
        raise LtiError("lti_token_invalid", "the id_token is not a JWT") from exc


def dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"))
