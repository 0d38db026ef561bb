"""The intake writes a "submission received" outbox row (service/submissions/received.py) in the batch's own
transaction, and only where someone listens: a line item of the course and exercise on the learner's own
platform, or a live webhook endpoint of the course subscribed to `submission.received`. Everything else
(plain token uploads, endpoints of the grade events only, removed endpoints, other courses) writes none."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from service.auth.principal import Principal
from service.auth.service import principal_for_token
from service.submissions import batch

ISSUER = "https://lms.example.edu"


@pytest.fixture
def people(sessions, svc):
    tokens = svc.tokens(sessions)
    with sessions() as s:
        return {user: principal_for_token(s, token=token) for user, token in tokens.items()}


def _item(user: Principal, test_catalogue, course: str, exercise: str = "ch05.svc_sum") -> batch.Upload:
    return batch.Upload(
        user=user,
        exercise=test_catalogue.get(exercise),
        course=course,
        notebook=b"{}",
        lang="en",
        idempotency_key=None,
        fingerprint="",
    )


def _write(sessions, settings, items) -> list[str]:
    from service.wiring import upload_receivers

    with sessions() as s:
        outcomes = batch.write(s, items, settings=settings, receivers=upload_receivers())
    assert all(isinstance(o, batch.Accepted) for o in outcomes), outcomes
    return [o.id for o in outcomes]


def _received(sessions) -> dict[str, dict]:
    from service.outbox.models import OutboxEvent

    with sessions() as s:
        return {e.submission_id: e.payload for e in s.scalars(select(OutboxEvent)) if e.kind == "submission.received"}


def _endpoint(sessions, *, course: str, types: list[str]) -> int:
    from service.db import transaction
    from service.outbox.ssrf import AddressPolicy
    from service.webhooks import service as webhooks

    with transaction(sessions) as s:
        return webhooks.create(
            s, course=course, url="https://hooks.example.edu/h", event_types=types, policy=AddressPolicy(enforce=False)
        ).id


def _lms_learner(sessions, *, subject: str, course: str) -> Principal:
    """A learner whose identity comes from the platform ISSUER, as an LTI launch makes one."""
    from service.auth.service import get_or_create_identity, set_membership
    from service.db import transaction

    with transaction(sessions) as s:
        identity = get_or_create_identity(s, issuer=ISSUER, subject=subject)
        set_membership(s, identity=identity, course=course, role="learner")
        ident = (identity.id, identity.issuer, identity.subject)
    return Principal(
        identity_id=ident[0], issuer=ident[1], subject=ident[2], name=subject, memberships={course: "learner"}
    )


def _line_item(sessions, *, course: str, exercise_id: str = "ch05.svc_sum", issuer: str = ISSUER) -> None:
    from service.db import transaction
    from service.lti.models import LtiLineItem, LtiPlatform

    with transaction(sessions) as s:
        platform = LtiPlatform(
            name="lms",
            issuer=issuer,
            client_id="c",
            auth_login_url=issuer + "/auth",
            auth_token_url=issuer + "/token",
            keyset_url=issuer + "/jwks",
            deployment_ids=["d"],
        )
        s.add(platform)
        s.flush()
        s.add(
            LtiLineItem(
                platform_id=platform.id,
                url=f"{issuer}/lineitems/{course}-{exercise_id}",
                course=course,
                exercise_id=exercise_id,
            )
        )


def test_plain_uploads_write_no_received_row(sessions, svc, db_url, people, test_catalogue):
    """Token learners, a course with an endpoint of the grade events only, and one whose subscribed endpoint
    was removed: the batch is stored and no outbox row is written."""
    from service.db import transaction
    from service.webhooks.models import WebhookEndpoint

    _endpoint(sessions, course="c1", types=["grade.stored", "grade.changed", "submission.not_gradable"])
    gone = _endpoint(sessions, course="c2", types=["submission.received"])
    with transaction(sessions) as s:
        from service.db import utcnow

        s.get(WebhookEndpoint, gone).removed_at = utcnow()
    ids = _write(
        sessions,
        svc.settings(db_url),
        [
            _item(people["alice"], test_catalogue, "c1"),
            _item(people["bob"], test_catalogue, "c1"),
            _item(people["carol"], test_catalogue, "c2"),
        ],
    )
    assert len(ids) == 3 and _received(sessions) == {}


def test_a_subscribed_endpoint_gets_rows_for_its_course_only(sessions, svc, db_url, people, test_catalogue):
    from service.submissions.models import Submission
    from service.timefmt import rfc3339

    _endpoint(sessions, course="c1", types=["grade.stored", "submission.received"])
    in_c1, other, in_c2 = _write(
        sessions,
        svc.settings(db_url),
        [
            _item(people["alice"], test_catalogue, "c1"),
            _item(people["bob"], test_catalogue, "c1"),
            _item(people["carol"], test_catalogue, "c2"),
        ],
    )
    rows = _received(sessions)
    assert set(rows) == {in_c1, other} and in_c2 not in rows
    with sessions() as s:
        sub = s.get(Submission, in_c1)
        assert rows[in_c1] == {
            "submission_id": in_c1,
            "user": "alice",
            "course": "c1",
            "exercise_id": "ch05.svc_sum",
            "status": "queued",
            "max_score": sub.max_score,
            "attempt": 1,
            "timestamp": rfc3339(sub.created_at),
            "submitted_at": rfc3339(sub.created_at),
            "late": False,
            "late_by_s": 0,
            "penalty_percent": 0,
        }


def test_a_line_item_of_the_learners_own_platform_and_exercise_gets_a_row(
    sessions, svc, db_url, people, test_catalogue
):
    """The same course and exercise from another issuer (a token learner), another exercise, and a line item
    of another platform in another course: none."""
    course = "lti-1-ctx"
    lms = _lms_learner(sessions, subject="u-1", course=course)
    local = _lms_learner(sessions, subject="u-2", course="c-other")
    _line_item(sessions, course=course)
    _line_item(sessions, course="c-other", issuer="https://other-lms.example.edu")
    with sessions() as s:
        from service.auth.service import create_token

        token = create_token(s, user="tok-in-lti", role="learner", course=course)
        s.commit()
        tok = principal_for_token(s, token=token)
    settings = svc.settings(db_url)
    wanted, wrong_exercise, wrong_issuer, other_platform = _write(
        settings=settings,
        sessions=sessions,
        items=[
            _item(lms, test_catalogue, course),
            _item(lms, test_catalogue, course, "ch05.svc_long"),
            _item(tok, test_catalogue, course),
            _item(local, test_catalogue, "c-other"),
        ],
    )
    assert set(_received(sessions)) == {wanted}
    assert not {wrong_exercise, wrong_issuer, other_platform} & set(_received(sessions))


def test_a_row_superseded_in_its_own_batch_gets_none(sessions, svc, db_url, people, test_catalogue):
    """Two queued attempts at a long-lane exercise in one batch: the first is stored superseded, and only the
    second (the one that will be graded) gets a received row."""
    _endpoint(sessions, course="c1", types=["submission.received"])
    first, second = _write(
        sessions,
        svc.settings(db_url),
        [
            _item(people["alice"], test_catalogue, "c1", "ch05.svc_long"),
            _item(people["alice"], test_catalogue, "c1", "ch05.svc_long"),
        ],
    )
    assert set(_received(sessions)) == {second} and first != second


def test_without_receivers_nothing_is_asked_or_written(sessions, svc, db_url, people, test_catalogue):
    from service.outbox.receivers import Receivers

    _endpoint(sessions, course="c1", types=["submission.received"])
    assert Receivers([], event_type="submission.received").statement is None
    with sessions() as s:
        (stored,) = batch.write(s, [_item(people["alice"], test_catalogue, "c1")], settings=svc.settings(db_url))
    assert isinstance(stored, batch.Accepted) and _received(sessions) == {}
