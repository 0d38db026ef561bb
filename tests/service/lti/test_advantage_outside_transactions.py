"""No network call inside a database transaction when the tool calls a platform's services either: a roster
sync (token grant, membership container) and a line item's find-or-create (token, container GET, POST) go
to a real server on loopback (lti_probe.ProbeServer) that checks, while it is called, that no connection
of the engine is checked out and (SQLite) that another writer gets the lock at once. SQLite and PostgreSQL."""
from __future__ import annotations


def test_roster_sync_and_line_item_creation_hold_no_connection_while_they_call(db_url, db_engine, sessions, svc,
                                                                              tmp_path):
    from lti_probe import CheckoutCounter, ProbeServer
    from sqlalchemy import select

    from service.auth.models import Identity, Membership
    from service.db import transaction
    from service.lti import lineitems, nrps
    from service.lti import service as lti_service
    from service.lti.calls import Grant, PlatformCalls
    from service.lti.models import LtiContext, LtiLineItem

    settings = svc.settings(db_url, lti_key_dir=tmp_path / "keys")
    counter = CheckoutCounter(db_engine)
    probe = ProbeServer(counter=counter, sqlite_path=db_url.removeprefix("sqlite:///") if "sqlite" in db_url else None)
    calls = PlatformCalls.from_settings(settings)
    try:
        with transaction(sessions) as s:
            platform = lti_service.create(s, name="p", issuer="https://lms.example", client_id="c1",
                                          auth_login_url=probe.url + "/auth", auth_token_url=probe.url + "/token",
                                          keyset_url=probe.url + "/jwks", deployment_ids=["d1"])
            ctx = LtiContext(platform_id=platform.id, context_id="ctx", course="lti-probe",
                             memberships_url=probe.url + "/memberships/ctx")
            s.add(ctx)
            s.flush()
            platform_id, context_id = platform.id, ctx.id
        outcome = nrps.sync_context(sessions, calls=calls, context_id=context_id, max_members=10)
        assert (outcome.members, outcome.added) == (1, 1)
        job = lineitems.LineItemJob(platform_id=platform_id, grant=Grant(token_url=probe.url + "/token",
                                                                         client_id="c1"),
                                    container=probe.url + "/contexts/ctx/lineitems", course="lti-probe",
                                    exercise_id="ch05.svc_sum", resource_link_id="rl", label="Sum",
                                    score_maximum=3.0, may_create=True)
        lineitems.ensure_in_background(sessions, calls=calls, job=job)
        with sessions() as s:
            assert s.scalar(select(Membership.role).join(Identity, Identity.id == Membership.identity_id)
                            .where(Identity.subject == "s-probe", Membership.course == "lti-probe")) == "learner"
            assert s.scalar(select(LtiLineItem.url).where(LtiLineItem.course == "lti-probe")).endswith("/made-1")
        seen = [(path.split("?")[0], out, free) for path, out, free in probe.seen]
        assert {"/token", "/memberships/ctx", "/contexts/ctx/lineitems"} <= {p for p, _, _ in seen}, seen
        assert all(out == 0 for _, out, _ in seen), f"connections checked out while calling the platform: {seen}"
        assert all(free is not False for _, _, free in seen), f"SQLite writer lock held: {seen}"
    finally:
        probe.stop()
        counter.close()
