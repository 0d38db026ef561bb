"""Verifying platform id_tokens against the platform's JWKS (fetched, cached, refetched on an unknown kid),
signing the tool's own JWTs (deep-linking responses, pick and bind tokens, AGS client assertions) with its
active key, and the OAuth2 client-credentials grant those assertions are for."""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from dataclasses import dataclass, field

import httpx
import jwt

from service.errors import clip
from service.lti.errors import LtiError
from service.lti.keys import KeyStore
from service.lti.models import PlatformRef

MAX_JWKS_BYTES = 256 * 1024
LTI = "https://purl.imsglobal.org/spec/lti/claim/"


@dataclass
class _Keyset:
    """One platform keyset URL: the keys last read, when, and the last attempt (failed or not)."""

    keys: jwt.PyJWKSet | None = None
    fetched_at: float = -math.inf  # last successful fetch (monotonic)
    tried_at: float = -math.inf  # last attempt
    error: LtiError | None = None  # the last attempt's failure, answered again until the next attempt
    generation: int = 0  # attempts so far: a caller that waited for the lock sees whether one happened meanwhile
    lock: threading.Lock = field(default_factory=threading.Lock)


class JwksCache:
    """Platform keysets by URL, fetched with no database connection held (callers run it between
    transactions). Keys are reused for `ttl_s`; a kid not in the set, or a failed fetch, triggers at most
    one fetch per `refetch_s` (a negative cache), and concurrent launches share one fetch (single flight)."""

    def __init__(self, client: httpx.Client, *, ttl_s: float, refetch_s: float = 30.0) -> None:
        self.client, self.ttl_s, self.refetch_s = client, ttl_s, refetch_s
        self._sets: dict[str, _Keyset] = {}
        self._lock = threading.Lock()
        self.fetches = 0

    def _entry(self, url: str) -> _Keyset:
        with self._lock:
            return self._sets.setdefault(url, _Keyset())

    def _fetch(self, url: str) -> jwt.PyJWKSet:
        with self._lock:
            self.fetches += 1
        try:
            resp = self.client.get(url)
            if resp.status_code != 200 or len(resp.content) > MAX_JWKS_BYTES:
                raise LtiError(
                    "lti_jwks_unavailable", f"the platform's keyset answered HTTP {resp.status_code}", status_code=502
                )
            data = resp.json()
            if not isinstance(data, dict):
                raise ValueError("a keyset is a JSON object")
            return jwt.PyJWKSet.from_dict(data)
        except (httpx.HTTPError, ValueError, RecursionError, jwt.PyJWKSetError) as exc:  # nested past the parser
            raise LtiError(
                "lti_jwks_unavailable",
                f"the platform's keyset could not be read: {type(exc).__name__}",
                status_code=502,
            ) from exc

    def _refresh(self, url: str, entry: _Keyset, seen: int) -> None:
        """Fetch once for everyone who saw generation `seen`; callers queued behind it use its result."""
        with entry.lock:
            if entry.generation != seen:
                return
            try:
                keys = self._fetch(url)
            except LtiError as exc:
                entry.error = exc
            else:
                entry.keys, entry.fetched_at, entry.error = keys, time.monotonic(), None
            entry.tried_at = time.monotonic()
            entry.generation += 1

    def key(self, url: str, kid: str | None) -> jwt.PyJWK:
        entry = self._entry(url)
        seen, now = entry.generation, time.monotonic()
        found = _match(entry.keys, kid)
        if found is not None and now - entry.fetched_at <= self.ttl_s:
            return found
        if now - entry.tried_at >= self.refetch_s:  # else: a stale set is used, an unknown kid refused
            self._refresh(url, entry, seen)
            found = _match(entry.keys, kid)
        if found is not None:
            return found
        if entry.error is not None:
            raise entry.error
        raise LtiError("lti_bad_signature", f"the id_token's key {clip(kid)!r} is not in the platform's keyset")


def _match(keys: jwt.PyJWKSet | None, kid: str | None) -> jwt.PyJWK | None:
    match = [k for k in (keys.keys if keys is not None else []) if kid is None or k.key_id == kid]
    return match[0] if match else None


def verify_id_token(token: str, *, platform: PlatformRef, jwks: JwksCache, leeway_s: float) -> dict:
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


def verify_own(token: str, *, keys: KeyStore, audience: str) -> dict:
    """A JWT the tool signed itself (a pick or bind token) for `audience`, with its `k`; LtiError if not."""
    try:
        kid = jwt.get_unverified_header(token).get("kid")
        key = next(k for k in keys.keys() if k.kid == kid)  # noqa: SIM118 (a KeyStore, not a dict)
        return jwt.decode(
            token,
            jwt.PyJWK(key.public_jwk()).key,
            algorithms=["RS256"],
            audience=audience,
            options={"require": ["exp", "k"]},
        )
    except (StopIteration, jwt.InvalidTokenError) as exc:
        raise LtiError("lti_pick_invalid", "the pick token is invalid or expired; open the picker again") from exc


def client_assertion(*, keys: KeyStore, client_id: str, token_url: str, deployment_id: str | None = None) -> str:
    """The JWT that authenticates the tool at the platform's token endpoint (LTI Security Framework 4.1):
    iss = sub = the client id, aud = the token URL, and the deployment the platform gave, when it gave one."""
    claims: dict = {"iss": client_id, "sub": client_id, "aud": token_url}
    if deployment_id:
        claims[LTI + "deployment_id"] = deployment_id
    return sign(claims, keys=keys)


ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


class GrantRefused(Exception):
    """The platform's token endpoint granted no token."""


def grant(
    client: httpx.Client, *, keys: KeyStore, token_url: str, client_id: str, scope: str, deployment_id: str | None
) -> tuple[str, float]:
    """An access token and its lifetime in seconds from the client-credentials grant (no caching here)."""
    resp = client.post(
        token_url,
        data={
            "grant_type": "client_credentials",
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": client_assertion(
                keys=keys, client_id=client_id, token_url=token_url, deployment_id=deployment_id
            ),
            "scope": scope,
        },
    )
    if resp.status_code != 200:
        raise GrantRefused(f"token endpoint answered HTTP {resp.status_code}: {resp.text[:200]}")
    data = resp.json()
    token = data.get("access_token") if isinstance(data, dict) else None
    if not isinstance(token, str) or not token:
        raise GrantRefused("token endpoint answered without an access_token")
    return token, float(data.get("expires_in") or 3600)


def unverified_issuer(token: str) -> str:
    try:
        return str(jwt.decode(token, options={"verify_signature": False}).get("iss", ""))
    except jwt.DecodeError as exc:
        raise LtiError("lti_token_invalid", "the id_token is not a JWT") from exc


def dumps(value) -> str:
    return json.dumps(value, separators=(",", ":"))
