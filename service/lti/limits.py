"""Request limits for /lti/login and /lti/launch, per client IP and per platform issuer, checked before any
database work: anyone can ask for a login state or post a forged launch, so floods are cut off here.

Token buckets in this process (each API process counts on its own): `per_min` requests a minute, up to
`per_min` at once. The number of buckets is bounded; the least recently used are forgotten first.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict

from service.lti.errors import LtiError

MAX_KEYS = 20_000


class Buckets:
    def __init__(self, *, per_min: int, max_keys: int = MAX_KEYS) -> None:
        self.capacity, self.rate_per_s, self.max_keys = float(per_min), per_min / 60.0, max_keys
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0 when the request may go on, else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            tokens, at = self._buckets.pop(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - at) * self.rate_per_s)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / self.rate_per_s
            self._buckets[key] = (tokens - 1 if wait == 0 else tokens, now)
            while len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        return wait


class LtiLimits:
    """One pair of buckets (client IP, platform) per LTI endpoint."""

    def __init__(self, *, per_ip_per_min: int, per_platform_per_min: int) -> None:
        self.ip = {k: Buckets(per_min=per_ip_per_min) for k in ("login", "launch", "register")}
        self.platform = {k: Buckets(per_min=per_platform_per_min) for k in ("login", "launch", "register")}

    @classmethod
    def from_settings(cls, settings) -> LtiLimits:
        return cls(
            per_ip_per_min=settings.lti_rate_per_ip_per_min,
            per_platform_per_min=settings.lti_rate_per_platform_per_min,
        )

    def check(self, endpoint: str, *, client_ip: str, issuer: str | None) -> None:
        """Raise 429 `lti_rate_limited` (with Retry-After) when this IP or this platform is over its limit."""
        wait = self.ip[endpoint].take(client_ip)
        who = "this address"
        if wait == 0 and issuer:
            wait, who = self.platform[endpoint].take(issuer[:500]), "this platform"
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            raise LtiError(
                "lti_rate_limited",
                f"too many LTI {endpoint}s from {who}; wait {seconds} s and launch again from the LMS",
                status_code=429,
                headers={"Retry-After": str(seconds)},
            )
