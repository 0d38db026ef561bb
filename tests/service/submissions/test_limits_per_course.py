"""The intake's rate and attempt limits count per identity, course and exercise (service/submissions/batch.py):
what a learner sends in one course, or what an integration files for them there, never uses up their
submissions in another course; a course's staff are exempt in that course only."""

from __future__ import annotations

from service.auth.principal import Principal
from service.auth.service import get_or_create_identity, set_membership
from service.errors import ServiceError
from service.submissions import batch


def _person(sessions, subject: str, memberships: dict[str, str]) -> Principal:
    with sessions() as s:
        identity = get_or_create_identity(s, issuer="titangrade", subject=subject)
        for course, role in memberships.items():
            set_membership(s, identity=identity, course=course, role=role)
        s.commit()
        return Principal(identity_id=identity.id, issuer="titangrade", subject=subject, name=subject,
                         memberships=memberships)


def _items(person, test_catalogue, course: str, n: int, exercise: str = "ch05.svc_sum") -> list[batch.Upload]:
    return [batch.Upload(user=person, exercise=test_catalogue.get(exercise), course=course, notebook=b"{}",
                         lang="en", idempotency_key=None, fingerprint="") for _ in range(n)]


def test_attempts_in_one_course_leave_the_other_course_alone(sessions, svc, db_url, test_catalogue):
    settings = svc.settings(db_url, submissions_per_minute=100, max_attempts_per_exercise=2)
    alice = _person(sessions, "alice", {"c1": "learner", "c2": "learner"})
    with sessions() as s:
        in_c2 = batch.write(s, _items(alice, test_catalogue, "c2", 3), settings=settings)
    assert [getattr(o, "attempt", None) for o in in_c2[:2]] == [1, 2]
    assert isinstance(in_c2[2], ServiceError) and in_c2[2].code == "attempt_limit"
    with sessions() as s:  # a later transaction: the stored rows of c2 are counted, and only for c2
        in_c1 = batch.write(s, _items(alice, test_catalogue, "c1", 2), settings=settings)
    assert [getattr(o, "attempt", None) for o in in_c1] == [1, 2]


def test_the_rate_limit_counts_per_course_and_exercise(sessions, svc, db_url, test_catalogue):
    settings = svc.settings(db_url, submissions_per_minute=2)
    bob = _person(sessions, "bob", {"c1": "learner", "c2": "learner"})
    with sessions() as s:
        batch.write(s, _items(bob, test_catalogue, "c2", 2), settings=settings)
    with sessions() as s:
        outcomes = batch.write(s, _items(bob, test_catalogue, "c2", 1) + _items(bob, test_catalogue, "c1", 2)
                               + _items(bob, test_catalogue, "c1", 1, exercise="ch05.svc_long"), settings=settings)
    assert isinstance(outcomes[0], ServiceError) and outcomes[0].status_code == 429
    assert all(isinstance(o, batch.Accepted) for o in outcomes[1:]), outcomes


def test_staff_of_one_course_are_limited_as_learners_of_another(sessions, svc, db_url, test_catalogue):
    settings = svc.settings(db_url, submissions_per_minute=100, max_attempts_per_exercise=1)
    tess = _person(sessions, "tess", {"c1": "learner", "c2": "instructor"})
    with sessions() as s:
        outcomes = batch.write(s, _items(tess, test_catalogue, "c2", 2) + _items(tess, test_catalogue, "c1", 2),
                               settings=settings)
    assert [type(o) for o in outcomes[:3]] == [batch.Accepted] * 3
    assert isinstance(outcomes[3], ServiceError) and outcomes[3].code == "attempt_limit"
