"""URLs a platform hands the tool, checked before they reach a page: the deep-linking return URL becomes a
form's action in titangrade's origin, so anything but an absolute https URL (http in dev) is refused
(javascript:, data:, vbscript:, relative and scheme-relative URLs, user-info tricks, control characters)."""

from __future__ import annotations

import re

import httpx

from service.errors import clip
from service.lti.errors import LtiError
from service.lti.models import PlatformRef

MAX_URL_CHARS = 2000


def _refuse(value: object, why: str) -> LtiError:
    return LtiError(
        "lti_return_url_invalid",
        f"the deep-linking return URL {clip(value)!r} is refused: {why}; the platform must send an absolute "
        "https URL (its deep-linking return endpoint)",
    )


def return_url(value: object, *, allow_http: bool) -> str:
    """The return URL as a parser reads it, or LtiError: https only (http too when `allow_http`, dev mode),
    a host, no user info; the string given must be the URL the parser read (no parser differentials)."""
    if not isinstance(value, str) or not value or len(value) > MAX_URL_CHARS:
        raise _refuse(value, f"it must be a URL of at most {MAX_URL_CHARS} characters")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in value) or "\\" in value:
        raise _refuse(value, "it contains whitespace, control characters or a backslash")
    try:
        url = httpx.URL(value)
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise _refuse(value, "it is not a valid URL") from exc
    schemes = ("https", "http") if allow_http else ("https",)
    if url.scheme not in schemes:
        raise _refuse(value, f"its scheme must be {' or '.join(schemes)}, not {clip(url.scheme or 'none')!r}")
    if not value.lower().startswith(url.scheme + "://") or not url.host:
        raise _refuse(value, "it is not an absolute URL with a host")
    if url.userinfo or "@" in value.split("//", 1)[1].split("/", 1)[0]:
        raise _refuse(value, "it carries user info (user@host)")
    if not _PLAIN_HOST.match(_host(url)):  # %-escapes: the browser would post elsewhere than the CSP names
        raise _refuse(value, "its host must be a plain name or address, without %-escapes")
    if url.port is not None and not 0 < url.port < 65536:
        raise _refuse(value, "its port is out of range")
    return str(url)


_PLAIN_HOST = re.compile(r"^(?:[a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$")


def _host(url: httpx.URL) -> str:
    """The host as a CSP source names it: ASCII (IDNA), lower case, an IPv6 address in brackets."""
    host = url.raw_host.decode("ascii").lower()
    return f"[{host}]" if ":" in host else host


def origin(url: str) -> str:
    """scheme://host[:port] of a URL already checked by `return_url` (a CSP source expression)."""
    parsed = httpx.URL(url)
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{_host(parsed)}{port}"


def frame_origins(platform: PlatformRef, *, allow_http: bool, extra: str = "") -> str:
    """The CSP frame-ancestors of the pages a platform shows in its own frame (the deep-link answer, the
    framed sign-in link): the origins of its registered issuer and login URL, and `extra` (the
    LTI_FRAME_ANCESTORS setting, origins checked at start-up); `'none'` if there are none."""
    found = extra.split()
    for value in (platform.issuer, platform.auth_login_url):
        try:
            found.append(origin(return_url(value, allow_http=allow_http)))
        except LtiError:
            continue
    return " ".join(dict.fromkeys(found)) or "'none'"
