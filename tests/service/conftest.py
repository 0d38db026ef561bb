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
    from service import bootstrap

    return bootstrap.sessions(db_engine)


@pytest.fixture
def add_submission():
    """Factory: a submission row plus its job, as the intake would write them."""
    return _add_submission


def _add_submission(session, *, user="alice", course="c1", exercise_id="ch05.svc_sum", lane="short",
                   priority=0, devices=0, max_attempts=3, notebook=b"{}", max_score=3.0, issuer="titangrade"):
    from service.auth.service import get_or_create_identity, set_membership
    from service.queue import service as queue
    from service.submissions.models import Submission

    identity = get_or_create_identity(session, issuer=issuer, subject=user)
    set_membership(session, identity=identity, course=course, role="learner")
    sub = Submission(id=uuid.uuid4().hex, identity_id=identity.id, user=user, course=course,
                     exercise_id=exercise_id, lang="en",
                     attempt=1, notebook=notebook, status="queued", max_score=max_score, message="")
    session.add(sub)
    session.flush()
    job = queue.enqueue(session, submission_id=sub.id, lane=lane, priority=priority, devices=devices,
                        world_size=1, max_attempts=max_attempts)
    session.flush()
    return sub, job


def make_tokens(sessions) -> dict[str, str]:
    """Bearer tokens for two learners and an instructor of course c1, a learner of c2, and an admin."""
    from service.auth.service import create_token
    from service.db import transaction

    spec = {"alice": ("learner", "c1"), "bob": ("learner", "c1"), "carol": ("learner", "c2"),
            "teacher": ("instructor", "c1"), "root": ("admin", None)}
    with transaction(sessions) as s:
        return {user: create_token(s, user=user, role=role, course=course) for user, (role, course) in spec.items()}


def notebook_bytes(exercise_id: str = "ch05.svc_sum", *, solved: bool = True, slow_s: float = 0.0,
                   wrong_word: bool = False) -> bytes:
    """A submission for a test-catalogue exercise: the solution, the template, or variants."""
    import nbformat

    name = exercise_id.split(".")[1]
    path = (CATALOGUE_DIR / "reference" / exercise_id / "solution.ipynb" if solved
            else CATALOGUE_DIR / "exercises" / exercise_id[:4] / name / f"{name}.ipynb")
    nb = nbformat.read(path, as_version=4)
    if slow_s:
        nb.cells.insert(0, nbformat.v4.new_code_cell(f"import time\ntime.sleep({slow_s})"))
    if wrong_word:
        nb.cells[-1].source = "word = 'slate'"
    return nbformat.writes(nb).encode()


@pytest.fixture
def api(db_url, test_catalogue):
    """The real app over the test database (TestClient drives it in-process) plus tokens."""
    from fastapi.testclient import TestClient

    from service.app import create_app

    app = create_app(service_settings(db_url), catalogue=test_catalogue)
    tokens = make_tokens(app.state.sessions)
    with TestClient(app) as client:
        client.tokens = tokens
        client.app_state = app.state
        yield client
    app.state.engine.dispose()


def auth(token: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **extra}


@pytest.fixture(scope="session")
def svc():
    """The helpers above, for test modules (conftest modules are not importable by name)."""
    from types import SimpleNamespace

    return SimpleNamespace(settings=service_settings, tokens=make_tokens, notebook=notebook_bytes, auth=auth,
                           catalogue_dir=CATALOGUE_DIR, live_server=lambda app: LiveServer(app))


@pytest.fixture(scope="session")
def e2e():
    """tests/service/e2e_support.py: subprocess server/worker helpers for the end-to-end tests."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tg_e2e_support", Path(__file__).with_name("e2e_support.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class LiveServer:
    """The real app under uvicorn on a free port, in a thread (real sockets, real HTTP parsing)."""

    def __init__(self, app) -> None:
        import socket
        import threading

        import uvicorn

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = app
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, name="tg-live-api", daemon=True)

    def __enter__(self) -> LiveServer:
        import time

        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the live test server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *_exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def live_api(module_db_url, test_catalogue):
    """A module's real HTTP server over its own database, with `tokens` as in `api`."""
    from service.app import create_app

    app = create_app(service_settings(module_db_url), catalogue=test_catalogue)
    tokens = make_tokens(app.state.sessions)
    with LiveServer(app) as live:
        live.tokens = tokens
        yield live
    app.state.engine.dispose()
