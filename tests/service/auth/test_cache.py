"""The credential cache (service/auth/cache.py): a good token's principal is reused without a lookup for
`auth_cache_s`; revocations and role changes made in the process apply at once, one made elsewhere within
the bound; bad credentials are never kept; an entry never outlives its token."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import event, text

from service.auth import cache as credential_cache
from service.auth.cache import CredentialCache
from service.auth.principal import Principal
from service.db import utcnow

ME = "/api/v1/me"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _principal(**extra) -> Principal:
    return Principal(identity_id=1, issuer="titangrade", subject="a", name="a", memberships={"c1": "learner"}, **extra)


def _token_lookups(engine):
    """A list that grows by one for each token lookup the engine runs."""
    seen: list[str] = []

    def count(conn, cursor, statement, *args):
        if "FROM tokens JOIN identities" in statement:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    return seen, lambda: event.remove(engine, "before_cursor_execute", count)


def test_an_entry_lasts_its_ttl_and_never_past_the_token_s_expiry():
    clock = Clock()
    c = CredentialCache(ttl_s=5, header_names=["Authorization"], clock=clock)
    key = c.key({"authorization": "Bearer x"})
    c.put(key, _principal(), generation=c.generation())
    clock.now += 4.9
    assert c.get(key) is not None
    clock.now += 0.2
    assert c.get(key) is None and len(c) == 0

    soon = _principal(expires_at=utcnow() + dt.timedelta(seconds=1))
    c.put(key, soon, generation=c.generation())
    clock.now += 1.5  # inside the TTL, past the token's own expiry
    assert c.get(key) is None
    c.put(key, _principal(expires_at=utcnow() - dt.timedelta(seconds=1)), generation=c.generation())
    assert len(c) == 0  # already expired: not kept at all


def test_a_lookup_that_began_before_a_clear_is_not_stored():
    c = CredentialCache(ttl_s=5, header_names=["authorization"])
    key = c.key({"authorization": "Bearer x"})
    began = c.generation()
    credential_cache.clear_all()  # e.g. a revocation committed while the lookup ran
    c.put(key, _principal(), generation=began)
    assert c.get(key) is None


def test_keys_cover_every_header_read_and_the_cache_is_off_when_unknown():
    c = CredentialCache(ttl_s=5, header_names=["authorization", "cookie"])
    assert c.key({}) is None
    assert c.key({"authorization": "Bearer x"}) != c.key({"authorization": "Bearer x", "cookie": "s=1"})

    class Opaque:  # says nothing of the headers it reads
        name, challenge = "opaque", "Opaque"

    class Bearer:
        name, challenge, credential_headers = "token", "Bearer", ("authorization",)

    assert not credential_cache.for_authenticators([Bearer(), Opaque()], ttl_s=5).enabled
    assert credential_cache.for_authenticators([Bearer()], ttl_s=5).enabled
    assert not credential_cache.for_authenticators([Bearer()], ttl_s=0).enabled


def test_a_full_cache_drops_its_oldest_half():
    c = CredentialCache(ttl_s=5, header_names=["authorization"], max_entries=4)
    keys = [c.key({"authorization": f"Bearer {i}"}) for i in range(5)]
    for k in keys:
        c.put(k, _principal(), generation=c.generation())
    assert len(c) == 3 and c.get(keys[0]) is None and c.get(keys[4]) is not None


def test_a_cached_token_is_not_looked_up_again(api, svc):
    seen, stop = _token_lookups(api.app_state.engine)
    try:
        for _ in range(3):
            assert api.get(ME, headers=svc.auth(api.tokens["alice"])).status_code == 200
    finally:
        stop()
    assert len(seen) == 1


def test_a_bad_token_is_looked_up_every_time(api, svc):
    seen, stop = _token_lookups(api.app_state.engine)
    try:
        for _ in range(3):
            assert api.get(ME, headers=svc.auth("tg_nope")).status_code == 401
    finally:
        stop()
    assert len(seen) == 3


def test_a_revocation_through_the_api_applies_at_once(api, svc):
    alice, root = svc.auth(api.tokens["alice"]), svc.auth(api.tokens["root"])
    assert api.get(ME, headers=alice).status_code == 200  # now cached
    token_id = next(t["id"] for t in api.get("/api/v1/tokens", headers=alice).json()["items"])
    assert api.delete(f"/api/v1/tokens/{token_id}", headers=root).status_code == 200
    answer = api.get(ME, headers=alice)
    assert answer.status_code == 401 and 'error="invalid_token"' in answer.headers["www-authenticate"]


def test_a_new_role_committed_in_the_process_applies_at_once(api, svc):
    from service.auth.models import Identity
    from service.auth.service import set_membership
    from service.db import transaction

    alice = svc.auth(api.tokens["alice"])
    assert api.get(ME, headers=alice).json()["memberships"] == {"c1": "learner"}
    with transaction(api.app_state.sessions) as s:
        identity = s.query(Identity).filter_by(subject="alice").one()
        set_membership(s, identity=identity, course="c1", role="instructor")
    assert api.get(ME, headers=alice).json()["memberships"] == {"c1": "instructor"}


def test_a_role_changed_in_a_savepoint_applies_at_the_outer_commit(api, svc):
    """SQLAlchemy fires after_commit at a savepoint's RELEASE too: the change flag was spent there, before the
    row was visible, so a request in between re-cached the old principal and the real commit cleared nothing."""
    from service.auth.models import Identity
    from service.auth.service import set_membership
    from service.db import transaction

    alice = svc.auth(api.tokens["alice"])
    assert api.get(ME, headers=alice).json()["memberships"] == {"c1": "learner"}
    with transaction(api.app_state.sessions) as s:
        with s.begin_nested():
            identity = s.query(Identity).filter_by(subject="alice").one()
            set_membership(s, identity=identity, course="c1", role="instructor")
        # meanwhile another request reads the committed (old) role and caches it
        assert api.get(ME, headers=alice).json()["memberships"] == {"c1": "learner"}
    assert api.get(ME, headers=alice).json()["memberships"] == {"c1": "instructor"}


@pytest.mark.parametrize("ttl_s", [0.0, 30.0])
def test_a_revocation_made_by_another_process_applies_within_the_bound(db_url, test_catalogue, svc, ttl_s):
    """A plain UPDATE on its own connection is what `titangrade tokens revoke` in another process does: no
    hook of this process sees it. With the cache off it applies at once; with it on, once the entry's time
    is up (the clock is moved, not waited for)."""
    from fastapi.testclient import TestClient

    from service.app import create_app

    app = create_app(svc.settings(db_url, auth_cache_s=ttl_s), catalogue=test_catalogue)
    tokens = svc.tokens(app.state.sessions)
    clock = Clock()
    app.state.credential_cache.clock = clock
    alice = svc.auth(tokens["alice"])
    try:
        with TestClient(app) as client:
            assert client.get(ME, headers=alice).status_code == 200
            with app.state.engine.begin() as conn:
                conn.execute(text("UPDATE tokens SET revoked_at = :now"), {"now": utcnow()})
            if ttl_s:
                assert client.get(ME, headers=alice).status_code == 200  # still inside the documented bound
                clock.now += ttl_s + 0.1
            assert client.get(ME, headers=alice).status_code == 401
    finally:
        app.state.engine.dispose()
