"""CredentialCache: the principals the authenticators vouched for, reused for a few seconds.

Looking a bearer token up costs an API request more than anything else it does (a thread hop, a read
transaction, a joined query, building the Principal: about 0.9 ms of the 2.4 ms an upload took), and a
learner sends many requests with the same token. So RequestGuard keeps what the authenticators answered,
keyed by a SHA-256 of the credential headers they read, for `auth_cache_s` seconds (0 turns it off):

- only good credentials are kept: an unknown, revoked or expired one is looked up every time, so a new
  token works at once and a bad one never becomes good;
- an entry never outlives the credential's own expiry (`Principal.expires_at`);
- a committed change to a token, an identity or a membership in this process (revoking a token, a new
  role, an LTI launch) empties every cache of the process at once (`install` hooks the session factory);
- a change made by another process (`titangrade tokens revoke`, a second API process) takes effect within
  `auth_cache_s`: the documented bound on how long a revoked token can still be used.

Bounded: at most `max_entries` principals; when full, the oldest half is dropped.
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence

from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from service.auth.models import Identity, Membership, Token
from service.auth.principal import Principal
from service.db import utcnow

MAX_ENTRIES = 10_000
_CHANGED = "tg_credentials_changed"  # session.info flag: this transaction wrote credentials
_caches: weakref.WeakSet[CredentialCache] = weakref.WeakSet()
_caches_lock = threading.Lock()


class CredentialCache:
    def __init__(
        self,
        *,
        ttl_s: float,
        header_names: Sequence[str] | None,
        max_entries: int = MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # None: some authenticator does not say which headers it reads, so no key would be safe
        self.ttl_s = ttl_s if header_names else 0.0
        self.header_names = tuple(dict.fromkeys(h.lower() for h in header_names or ()))
        self.max_entries = max_entries
        self.clock = clock
        self._entries: dict[bytes, tuple[Principal, float]] = {}  # key -> (principal, monotonic deadline)
        self._generation = 0  # bumped by clear(): a lookup that began before it must not store its answer
        self._lock = threading.Lock()  # put (event loop) against clear (any committing thread)
        with _caches_lock:
            _caches.add(self)

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0

    def key(self, headers: Mapping[str, str]) -> bytes | None:
        """The cache key of a request's credentials; None when it carries none of them."""
        values = [headers.get(name, "") for name in self.header_names]
        if not any(values):
            return None
        return hashlib.sha256("\0".join(values).encode("utf-8", "surrogateescape")).digest()

    def generation(self) -> int:
        return self._generation

    def get(self, key: bytes) -> Principal | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        principal, deadline = entry
        if self.clock() >= deadline:
            self._entries.pop(key, None)
            return None
        return principal

    def put(self, key: bytes, principal: Principal, *, generation: int) -> None:
        """Keep `principal` for `key`, unless the cache was cleared since the lookup began (`generation`)."""
        if not self.enabled or generation != self._generation:
            return
        deadline = self.clock() + self.ttl_s
        if principal.expires_at is not None:
            left_s = (principal.expires_at - utcnow()).total_seconds()
            if left_s <= 0:
                return
            deadline = min(deadline, self.clock() + left_s)
        with self._lock:
            if generation != self._generation:
                return
            if len(self._entries) >= self.max_entries:
                for old in list(self._entries)[: self.max_entries // 2]:  # dicts keep insertion order
                    del self._entries[old]
            self._entries[key] = (principal, deadline)

    def clear(self) -> None:
        with self._lock:
            self._generation += 1
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def for_authenticators(authenticators: Sequence, *, ttl_s: float) -> CredentialCache:
    """The cache for RequestGuard: keyed on every header the authenticators read (off if one does not say)."""
    names: list[str] | None = []
    for authenticator in authenticators:
        headers = getattr(authenticator, "credential_headers", None)
        if not headers or names is None:
            names = None
            continue
        names.extend(headers)
    return CredentialCache(ttl_s=ttl_s, header_names=names)


def clear_all() -> None:
    """Forget every cached principal of this process (a credential changed)."""
    with _caches_lock:
        caches = list(_caches)
    for cache in caches:
        cache.clear()


def install(factory: sessionmaker[Session]) -> None:
    """Hook a session factory: a committed write to a token, identity or membership clears the caches."""
    event.listen(factory, "after_flush", _after_flush)
    event.listen(factory, "after_commit", _after_commit)
    event.listen(factory, "after_rollback", _after_rollback)


def _after_flush(session: Session, _context) -> None:
    # A new token or identity changes no cached answer (only good credentials are kept); a new membership,
    # or any change to an existing row, may.
    changed = (Token, Identity, Membership)
    if any(isinstance(obj, Membership) for obj in session.new) or any(
        isinstance(obj, changed) for objs in (session.dirty, session.deleted) for obj in objs
    ):
        session.info[_CHANGED] = True


def _after_commit(session: Session) -> None:
    if session.in_nested_transaction():  # a savepoint's RELEASE fires this too: clear at the real commit only
        return
    if session.info.pop(_CHANGED, False):
        clear_all()


def _after_rollback(session: Session) -> None:
    if session.in_nested_transaction():  # a savepoint rolled back: the outer transaction's changes still stand
        return
    session.info.pop(_CHANGED, None)
