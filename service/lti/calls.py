"""Calls the tool makes to a platform's LTI Advantage services (line items, results, rosters).

A service token comes from the OAuth2 client-credentials grant (a JWT client assertion signed with the
tool's key), one per (token URL, client id, scopes), cached until shortly before it expires. Requests go
through the outbox's address-checking client (service/outbox/ssrf.py: no private addresses in prod mode,
no redirects, no proxies). Everything a platform answers is untrusted: each answer is read up to
`max_bytes`, must be a JSON object, and `Link: rel="next"` paging stops after `max_pages`, at a page seen
before, or at a link to another origin (the bearer token is only ever sent where the first page was).
Callers hold no database transaction while these run.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

from service.errors import clip
from service.lti import tokens
from service.lti.errors import LtiError
from service.lti.keys import KeyStore, key_store
from service.outbox.ssrf import AddressPolicy, make_client

AGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"
SCOPE_LINEITEM = AGS + "lineitem"
SCOPE_LINEITEM_READ = AGS + "lineitem.readonly"
SCOPE_RESULT_READ = AGS + "result.readonly"
SCOPE_SCORE = AGS + "score"
SCOPE_ROSTER = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TOKEN_MARGIN_S = 60
MAX_TOKEN_CHARS = 4096


class PlatformError(LtiError):
    """The platform's service could not be used (refused, unreachable, or answered something invalid)."""

    def __init__(self, message: str, *, code: str = "lti_platform_error", status_code: int = 502) -> None:
        super().__init__(code, message, status_code=status_code)


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """Who asks for a service token: the platform's token endpoint, the client id it gave the tool, and the
    deployment the client assertion names where the launch gave one (LTI Security Framework 4.1)."""

    token_url: str
    client_id: str
    deployment_id: str | None = None


@dataclass(frozen=True, slots=True)
class Page:
    data: object  # a JSON object or array (AGS containers are arrays), checked by the caller
    next_url: str | None


def origin_of(url: str) -> tuple[str, str, int | None]:
    parsed = httpx.URL(url)
    return parsed.scheme, parsed.host, parsed.port


class PlatformCalls:
    """One per process (service/deps.py makes it once); thread-safe."""

    def __init__(self, client: httpx.Client, keys: KeyStore, *, max_bytes: int, max_pages: int) -> None:
        self.client, self.keys, self.max_bytes, self.max_pages = client, keys, max_bytes, max_pages
        self._tokens: dict[tuple[str, str, str, tuple[str, ...]], tuple[str, float]] = {}
        self._lock = threading.Lock()
        self.token_requests = 0

    @classmethod
    def from_settings(cls, settings) -> PlatformCalls:
        return cls(
            make_client(AddressPolicy.from_settings(settings), timeout_s=settings.webhook_timeout_s, max_connections=4),
            key_store(settings),
            max_bytes=settings.lti_service_max_bytes,
            max_pages=settings.lti_service_max_pages,
        )

    def token(self, grant: Grant, scopes: tuple[str, ...]) -> str:
        key = (grant.token_url, grant.client_id, grant.deployment_id or "", scopes)
        with self._lock:
            cached = self._tokens.get(key)
        if cached is not None and cached[1] > time.monotonic():
            return cached[0]
        assertion = tokens.client_assertion(
            keys=self.keys, client_id=grant.client_id, token_url=grant.token_url, deployment_id=grant.deployment_id
        )
        form = {
            "grant_type": "client_credentials",
            "client_assertion_type": ASSERTION_TYPE,
            "client_assertion": assertion,
            "scope": " ".join(scopes),
        }
        with self._lock:
            self.token_requests += 1
        status, data, _ = self.call("POST", grant.token_url, data=form, what="token endpoint")
        if status != 200 or not isinstance(data, dict):
            raise PlatformError(f"the platform's token endpoint refused a token (HTTP {status}): {clip(data)}")
        token, lifetime = data.get("access_token"), data.get("expires_in", 3600)
        if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_CHARS:
            raise PlatformError("the platform's token endpoint answered without a usable access_token")
        if not isinstance(lifetime, int | float) or isinstance(lifetime, bool):
            lifetime = 3600
        with self._lock:
            self._tokens[key] = (token, time.monotonic() + max(float(lifetime) - TOKEN_MARGIN_S, 0))
        return token

    def _drop(self, grant: Grant, scopes: tuple[str, ...]) -> None:
        with self._lock:
            self._tokens.pop((grant.token_url, grant.client_id, grant.deployment_id or "", scopes), None)

    def call(self, method: str, url: str, *, what: str, **kwargs) -> tuple[int, object, httpx.Headers]:
        """One request, its answer read up to `max_bytes` and parsed as JSON, an object or an array (a
        non-JSON error answer becomes {"text": ...} so the caller can still name the status)."""
        try:
            with self.client.stream(method, url, **kwargs) as resp:
                raw = bytearray()
                for chunk in resp.iter_bytes():
                    raw += chunk
                    if len(raw) > self.max_bytes:
                        raise PlatformError(
                            f"the platform's {what} answered more than {self.max_bytes} bytes; titangrade reads no "
                            "more (TITANGRADE_LTI_SERVICE_MAX_BYTES)",
                            code="lti_platform_answer_too_large",
                        )
                status, headers = resp.status_code, resp.headers
        except httpx.HTTPError as exc:
            raise PlatformError(f"the platform's {what} could not be reached: {type(exc).__name__}: {exc}") from None
        if 300 <= status < 400:
            raise PlatformError(
                f"the platform's {what} answered a redirect (HTTP {status}); redirects are not followed"
            )
        try:
            data = json.loads(bytes(raw)) if raw else {}
        except (ValueError, RecursionError):  # RecursionError: nesting deep enough to exhaust the parser
            if 200 <= status < 300:
                raise PlatformError(f"the platform's {what} answered something that is not JSON") from None
            data = {"text": bytes(raw[:200]).decode("utf-8", "replace")}
        if not isinstance(data, dict | list):
            if 200 <= status < 300:
                raise PlatformError(f"the platform's {what} answered JSON that is neither an object nor an array")
            data = {}
        return status, data, headers

    def request(
        self,
        method: str,
        url: str,
        *,
        grant: Grant,
        scopes: tuple[str, ...],
        accept: str,
        what: str,
        params: dict | None = None,
        body: dict | None = None,
        content_type: str | None = None,
    ) -> Page:
        """A service call with a bearer token (renewed once on a 401); a non-2xx answer is a PlatformError."""
        for attempt in (1, 2):
            headers = {"accept": accept, "authorization": f"Bearer {self.token(grant, scopes)}"}
            kwargs: dict = {"headers": headers, "params": params}
            if body is not None:
                headers["content-type"] = content_type or "application/json"
                kwargs["content"] = json.dumps(body).encode()
            status, data, resp_headers = self.call(method, url, what=what, **kwargs)
            if status == 401 and attempt == 1:
                self._drop(grant, scopes)
                continue
            if not 200 <= status < 300:
                raise PlatformError(f"the platform's {what} answered HTTP {status}: {clip(data)}")
            return Page(data, _next_link(resp_headers, base=url))
        raise AssertionError("unreachable")

    def pages(
        self, url: str, *, grant: Grant, scopes: tuple[str, ...], accept: str, what: str, params: dict | None = None
    ) -> Iterator[Page]:
        """Every page of a paged GET, following `Link: rel="next"` within the first page's origin."""
        home, seen = origin_of(url), set()
        page_url: str | None = url
        for number in range(1, self.max_pages + 1):
            assert page_url is not None
            seen.add(page_url)
            page = self.request(
                "GET", page_url, grant=grant, scopes=scopes, accept=accept, what=what,
                params=params if number == 1 else None,
            )  # fmt: skip
            yield page
            page_url = page.next_url
            if page_url is None:
                return
            if page_url in seen:
                raise PlatformError(
                    f"the platform's {what} paging loops back to a page already read ({clip(page_url)})"
                )
            if origin_of(page_url) != home:
                raise PlatformError(
                    f"the platform's {what} points its next page to another origin ({clip(page_url)}); the token "
                    "is not sent there"
                )
        raise PlatformError(
            f"the platform's {what} has more than {self.max_pages} pages; titangrade reads no more "
            "(TITANGRADE_LTI_SERVICE_MAX_PAGES)",
            code="lti_platform_answer_too_large",
        )


def _next_link(headers: httpx.Headers, *, base: str) -> str | None:
    """The `rel="next"` target of the Link header(s), resolved against the page's URL; None if there is none."""
    for value in headers.get_list("link"):
        for part in value.split(","):
            target, _, params = part.strip().partition(">")
            rels = [p.strip() for p in params.split(";") if p.strip().lower().startswith("rel=")]
            if target.startswith("<") and any("next" in r[4:].strip("\"' ").lower().split() for r in rels):
                try:
                    return str(httpx.URL(base).join(target[1:].strip()))
                except (httpx.InvalidURL, ValueError):
                    raise PlatformError(f"the platform's next-page link {clip(target)} is not a URL") from None
    return None
