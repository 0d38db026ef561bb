"""Fixtures for the service tests: the tiny test catalogue, settings, sessions and row factories."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from grading.exercise import Catalogue

REPO = Path(__file__).resolve().parents[2]
CATALOGUE_DIR = REPO / "tests" / "fixtures" / "service_catalogue"


@pytest.fixture(scope="session")
def test_catalogue() -> Catalogue:
    return Catalogue(CATALOGUE_DIR / "exercises", CATALOGUE_DIR / "reference")


def service_settings(db_url: str, **overrides):
    """Settings for tests: the test catalogue, unsafe-local kernels, short leases."""
    from service.config import Settings

    values = dict(mode="dev", database_url=db_url, secret_key="t" * 40, sandbox="unsafe-local",
                  exercises_root=CATALOGUE_DIR / "exercises", reference_root=CATALOGUE_DIR / "reference",
                  lease_s=4.0, heartbeat_s=0.5, poll_s=0.1, retry_backoff_s=0.0, worker_slots=2,
                  submissions_per_minute=1000)
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def sessions(db_engine):
    from service.db import make_sessionmaker

    return make_sessionmaker(db_engine)


@pytest.fixture
def add_submission():
    """Factory: a submission row plus its job, as the intake would write them."""
    return _add_submission


def _add_submission(session, *, user="alice", course="c1", exercise_id="ch05.svc_sum", lane="short",
                   priority=0, devices=0, max_attempts=3, notebook=b"{}", max_score=3.0):
    from service.queue import service as queue
    from service.submissions.models import Submission

    sub = Submission(id=uuid.uuid4().hex, user=user, course=course, exercise_id=exercise_id, lang="en",
                     attempt=1, notebook=notebook, status="queued", max_score=max_score, message="")
    session.add(sub)
    session.flush()
    job = queue.enqueue(session, submission_id=sub.id, lane=lane, priority=priority, devices=devices,
                        world_size=1, max_attempts=max_attempts)
    session.flush()
    return sub, job
