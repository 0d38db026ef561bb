"""Intake integrations act only for their own namespace, over real HTTP (SQLite and PostgreSQL).

The attack of issue 25: an instructor of course `rival` registered an integration with issuer `titangrade`
(the local one), filed signed submissions for `alice`, enrolled her in `other`, and used up her rate and
attempt limits in her own course `c1`. Now the instructor cannot name an issuer (only an admin links one),
an integration's own issuer is `intake:<course>:<name>`, limits count per identity, course and exercise,
and integration names are a course's own (the 409 names no other course).
"""
from __future__ import annotations

import datetime as dt
import json
import uuid

import httpx
import pytest
from sqlalchemy import select
from standardwebhooks import Webhook

INTAKE = "/api/v1/intake/submissions"


@pytest.fixture(scope="module")
def server(module_db_url, test_catalogue, svc):
    """A live server with tight limits: 2 submissions a minute and 3 attempts per exercise."""
    from service.app import create_app
    from service.auth.service import create_token
    from service.db import transaction

    app = create_app(svc.settings(module_db_url, submissions_per_minute=2, max_attempts_per_exercise=3),
                     catalogue=test_catalogue)
    tokens = svc.tokens(app.state.sessions)
    with transaction(app.state.sessions) as s:
        tokens["mallory"] = create_token(s, user="mallory", role="instructor", course="rival")
        tokens["dave_c1"] = create_token(s, user="dave", role="learner", course="c1")
        tokens["dave_c2"] = create_token(s, user="dave", role="learner", course="c2")
    with svc.live_server(app) as live:
        live.tokens, live.notebook = tokens, svc.notebook()
        yield live
    app.state.engine.dispose()


def _auth(server, who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.tokens[who]}"}


def _register(server, who: str, course: str, body: dict) -> httpx.Response:
    return httpx.post(f"{server.url}/api/v1/courses/{course}/intake", json=body, headers=_auth(server, who), timeout=30)


def _signed_post(server, made: dict, *, subject: str, course: str | None = None, params: dict | None = None):
    raw = json.dumps({"learner": {"subject": subject}, "exercise_id": "ch05.svc_sum",
                      "notebook": json.loads(server.notebook)}).encode()
    msg_id, at = "msg_" + uuid.uuid4().hex, dt.datetime.now(dt.UTC)
    headers = {"webhook-id": msg_id, "webhook-timestamp": str(int(at.timestamp())),
               "webhook-signature": Webhook(made["secret"]).sign(msg_id, at, raw.decode()),
               "content-type": "application/json"}
    query = params if params is not None else {"course": course or made["course"], "integration": made["name"]}
    return httpx.post(f"{server.url}{INTAKE}", params=query, content=raw, headers=headers, timeout=30)


def _upload(server, who: str, course: str | None = None) -> httpx.Response:
    data = {"exercise_id": "ch05.svc_sum"} | ({"course": course} if course else {})
    return httpx.post(f"{server.url}/api/v1/submissions", files={"notebook": ("nb.ipynb", server.notebook)},
                      data=data, headers=_auth(server, who), timeout=30)


def _identity_of(server, submission_id: str) -> tuple[str, str]:
    from service.auth.models import Identity
    from service.submissions.models import Submission

    with server.app.state.sessions() as s:
        sub = s.get(Submission, submission_id)
        who = s.get(Identity, sub.identity_id)
        out = (who.issuer, who.subject)
        s.commit()
    return out


def _courses_of_local(server, subject: str) -> set[str]:
    from service.auth.models import Identity, Membership

    with server.app.state.sessions() as s:
        found = set(s.scalars(select(Membership.course).join(Identity, Identity.id == Membership.identity_id)
                              .where(Identity.issuer == "titangrade", Identity.subject == subject)))
        s.commit()
    return found


def test_an_instructor_cannot_name_the_local_issuer_and_acts_only_for_the_own_namespace(server):
    for issuer in ("titangrade", "https://canvas.example.edu", "intake:c1:lms"):
        refused = _register(server, "mallory", "rival", {"name": f"squat-{uuid.uuid4().hex[:6]}", "issuer": issuer})
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "issuer_link_requires_admin"
    made = _register(server, "mallory", "rival", {"name": "mal-lms"})
    assert made.status_code == 201, made.text
    made = made.json()
    assert made["issuer"] == "intake:rival:mal-lms" and made["issuer_kind"] == "own" and made["linked_by"] is None
    assert made["intake_url"] == "/api/v1/intake/submissions?course=rival&integration=mal-lms"
    # what the attacker files for "alice" is a learner of its own namespace, not the local alice
    for _ in range(2):
        filed = _signed_post(server, made, subject="alice")
        assert filed.status_code == 202, filed.text
        assert _identity_of(server, filed.json()["id"]) == ("intake:rival:mal-lms", "alice")
    limited = _signed_post(server, made, subject="alice")  # the namespace's alice has her own limits
    assert limited.status_code == 429, limited.text
    assert "rival" not in _courses_of_local(server, "alice")
    mine = _upload(server, "alice")
    assert mine.status_code == 202, mine.text
    assert _identity_of(server, mine.json()["id"]) == ("titangrade", "alice")


def test_an_admin_link_to_the_local_issuer_leaves_the_learners_limits_in_other_courses_alone(server):
    linked = _register(server, "root", "rival", {"name": "linked-local", "issuer": "titangrade"})
    assert linked.status_code == 201, linked.text
    linked = linked.json()
    assert (linked["issuer"], linked["issuer_kind"], linked["linked_by"]) == ("titangrade", "linked", "root")
    for _ in range(3):  # the rate limit (2 a minute) and the attempt limit (3), used up in course `rival`
        _signed_post(server, linked, subject="bob")
    assert "rival" in _courses_of_local(server, "bob")
    own = _upload(server, "bob")  # bob's own course c1: nothing of it was used
    assert own.status_code == 202, own.text
    assert own.json()["attempt"] == 1


def test_limits_count_per_course_and_exercise(server):
    """dave learns c1 and c2; what he sends in one course never uses up his submissions in the other."""
    for _ in range(2):
        assert _upload(server, "dave_c2").status_code == 202
    third = _upload(server, "dave_c2")
    assert third.status_code == 429 and third.json()["error"]["code"] == "rate_limited"
    assert third.headers["retry-after"].isdigit()
    other = _upload(server, "dave_c1")  # the same learner and exercise, course c1
    assert other.status_code == 202, other.text


def test_an_admin_cannot_link_an_integration_namespace(server):
    refused = _register(server, "root", "c1", {"name": "borrow", "issuer": "intake:rival:mal-lms"})
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "issuer_reserved"


def test_names_are_unique_per_course_and_the_conflict_names_no_other_course(server):
    name = f"lms-{uuid.uuid4().hex[:6]}"
    first = _register(server, "mallory", "rival", {"name": name})
    assert first.status_code == 201, first.text
    same_elsewhere = _register(server, "teacher", "c1", {"name": name})
    assert same_elsewhere.status_code == 201, same_elsewhere.text
    assert same_elsewhere.json()["issuer"] == f"intake:c1:{name}"
    again = _register(server, "teacher", "c1", {"name": name})
    assert again.status_code == 409, again.text
    assert "rival" not in again.json()["error"]["message"]
    fresh = _register(server, "teacher", "c1", {"name": f"fresh-{uuid.uuid4().hex[:6]}"})
    assert fresh.status_code == 201  # a name no course has: no 409
    # each URL reaches its own course's integration; the old course-less URL keeps reaching the oldest
    c1 = same_elsewhere.json()
    filed = _signed_post(server, c1, subject="s-9")
    assert filed.status_code == 202 and filed.json()["course"] == "c1"
    wrong = _signed_post(server, c1, subject="s-9", params={"integration": name})  # resolves to `other`'s
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "signature_invalid"
    legacy = _signed_post(server, first.json(), subject="s-9", params={"integration": name})
    assert legacy.status_code == 202 and legacy.json()["course"] == "rival"


def test_an_unconfirmed_issuer_is_refused_until_an_admin_confirms_it(server):
    """A row made before 0008 with a free-text issuer (the migration marks it unconfirmed)."""
    from service.db import transaction
    from service.intake.models import IntakeIntegration, IssuerKind

    made = _register(server, "teacher", "c1", {"name": f"old-{uuid.uuid4().hex[:6]}"}).json()
    with transaction(server.app.state.sessions) as s:
        row = s.get(IntakeIntegration, made["id"])
        row.issuer, row.issuer_kind = "https://moodle.example.edu", IssuerKind.UNCONFIRMED
    refused = _signed_post(server, made, subject="m-1")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "issuer_unconfirmed"
    confirm = f"{server.url}/api/v1/courses/c1/intake/{made['id']}/confirm-issuer"
    assert httpx.post(confirm, headers=_auth(server, "teacher"), timeout=30).status_code == 403
    ok = httpx.post(confirm, headers=_auth(server, "root"), timeout=30)
    assert ok.status_code == 200 and ok.json()["issuer_kind"] == "linked" and ok.json()["linked_by"] == "root"
    filed = _signed_post(server, made, subject="m-1")
    assert filed.status_code == 202, filed.text
    assert _identity_of(server, filed.json()["id"]) == ("https://moodle.example.edu", "m-1")


def test_a_namespace_too_long_for_an_issuer_is_a_422_naming_it(server):
    resp = _register(server, "root", "c" * 190, {"name": "n" * 20})
    assert resp.status_code == 422, resp.text
    assert "shorter name" in resp.json()["error"]["message"]


def test_a_name_with_a_colon_cannot_reach_another_courses_namespace(server):
    """intake:<course>:<name> parses only because names hold no ':'. The API's pattern said so, but the CLI
    (`titangrade intake add`, service.create) took any name: course `ns` name `b:c` got the issuer of
    course `ns:b`'s integration `c`, and so its learners."""
    from service.db import transaction
    from service.errors import ServiceError
    from service.intake import service

    made = _register(server, "root", "ns:b", {"name": "c"})
    assert made.status_code == 201 and made.json()["issuer"] == "intake:ns:b:c", made.text
    for name in ("b:c", "b c", "", "x" * 61):
        with pytest.raises(ServiceError) as refused, transaction(server.app.state.sessions) as s:
            service.create(s, name=name, course="ns", linked_by="cli", by="cli")
        assert refused.value.status_code == 422 and refused.value.code == "invalid_request", name
    with server.app.state.sessions() as s:
        from service.intake.models import IntakeIntegration

        holders = s.scalars(select(IntakeIntegration.course).where(IntakeIntegration.issuer == "intake:ns:b:c"))
        assert list(holders) == ["ns:b"]
        s.commit()
