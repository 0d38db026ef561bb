"""The intake's group commit (service/submissions/writer.py, batch.py): uploads handed over together are
stored in one transaction, each counted against the limits after the ones before it, one refusal or one
bad row fails only its own request, a database error stores nothing, and a closing writer drains."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from sqlalchemy import event, func, select
from sqlalchemy.exc import OperationalError

from service.auth.service import principal_for_token
from service.errors import ServiceError
from service.queue.models import Job
from service.submissions import batch
from service.submissions.models import ProgressEvent, Submission
from service.submissions.writer import UploadUnavailable, UploadWriter

URL = "/api/v1/submissions"


@pytest.fixture
def people(sessions, svc):
    tokens = svc.tokens(sessions)
    with sessions() as s:
        return {user: principal_for_token(s, token=token) for user, token in tokens.items()}


def _item(people, test_catalogue, user="alice", *, key=None, notebook=b"{}", exercise="ch05.svc_sum"):
    return batch.Upload(user=people[user], exercise=test_catalogue.get(exercise), course="c1" if user != "carol"
                        else "c2", notebook=notebook, lang="en", idempotency_key=key,
                        fingerprint=notebook.hex())


def _counts(sessions):
    with sessions() as s:
        return tuple(s.scalar(select(func.count()).select_from(m)) for m in (Submission, Job, ProgressEvent))


def _submit_together(writer: UploadWriter, items) -> list:
    """Hand every item over before the writer may take any (it waits on the condition we hold), so they
    form one batch; returns each request's outcome (an Accepted or the exception it raised)."""

    async def main():
        with writer._cond:  # an RLock: the submits below, on this thread, still append
            tasks = [asyncio.ensure_future(writer.submit(i)) for i in items]
            for _ in range(3):
                await asyncio.sleep(0)
        return await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)  # a dead writer fails

    return asyncio.run(main())


def test_uploads_handed_over_together_are_stored_in_one_transaction(sessions, svc, db_url, people, test_catalogue):
    writer = UploadWriter(sessions, lambda: svc.settings(db_url))
    items = [_item(people, test_catalogue, user) for user in ("alice", "bob", "alice", "teacher") * 2]
    outcomes = _submit_together(writer, items)
    writer.close()
    assert all(isinstance(o, batch.Accepted) and o.created and o.status == "queued" for o in outcomes), outcomes
    assert (writer.batches, writer.stored) == (1, 8)
    assert [o.attempt for o, i in zip(outcomes, items, strict=True) if i.user.name == "alice"] == [1, 2, 3, 4]
    assert _counts(sessions) == (8, 8, 8)  # each with its job and its "queued" event
    with sessions() as s:
        learners = {j.learner for j in s.scalars(select(Job))}
    assert learners == {f"identity:{people[u].identity_id}" for u in ("alice", "bob", "teacher")}


def test_limits_count_the_uploads_before_them_in_the_same_batch(sessions, svc, db_url, people, test_catalogue):
    settings = svc.settings(db_url, submissions_per_minute=3, max_attempts_per_exercise=2)
    items = [_item(people, test_catalogue, u) for u in ("alice", "alice", "bob", "alice", "alice", "teacher")]
    with sessions() as s:
        outcomes = batch.write(s, items, settings=settings)
    assert [o.attempt for o in outcomes[:3]] == [1, 2, 1]
    assert isinstance(outcomes[3], ServiceError) and outcomes[3].code == "attempt_limit"  # a quota: 2 used
    assert isinstance(outcomes[4], ServiceError) and outcomes[4].code == "attempt_limit"
    assert isinstance(outcomes[5], batch.Accepted)  # staff are not limited
    assert _counts(sessions)[0] == 4
    settings = svc.settings(db_url, submissions_per_minute=3)
    items = [_item(people, test_catalogue, "bob") for _ in range(3)]
    with sessions() as s:
        outcomes = batch.write(s, items, settings=settings)
    assert [type(o) for o in outcomes] == [batch.Accepted, batch.Accepted, type(outcomes[2])]
    assert outcomes[2].status_code == 429 and 1 <= int(outcomes[2].headers["Retry-After"]) <= 61  # 1 stored + 2


def test_an_idempotency_key_repeated_in_a_batch_returns_the_first(sessions, svc, db_url, people, test_catalogue):
    items = [
        _item(people, test_catalogue, key="k1", notebook=b"{1}"),
        _item(people, test_catalogue, key="k1", notebook=b"{1}"),  # a retry: the same submission
        _item(people, test_catalogue, key="k1", notebook=b"{2}"),  # the key on another request: 422
        _item(people, test_catalogue, "bob", key="k1", notebook=b"{2}"),  # keys are per learner
    ]
    with sessions() as s:
        first, again, other, bobs = batch.write(s, items, settings=svc.settings(db_url))
    assert first.created and not again.created and again.id == first.id
    assert isinstance(other, ServiceError) and other.code == "idempotency_key_reused" and first.id in other.message
    assert bobs.created and bobs.id != first.id
    with sessions() as s:  # and in a later batch, from the database
        (later,) = batch.write(s, items[:1], settings=svc.settings(db_url))
    assert (later.id, later.created) == (first.id, False)
    assert _counts(sessions) == (2, 2, 2)


def test_a_later_attempt_in_the_batch_supersedes_the_earlier(sessions, svc, db_url, people, test_catalogue):
    settings = svc.settings(db_url, supersede_queued="all")
    with sessions() as s:
        (stored,) = batch.write(s, [_item(people, test_catalogue)], settings=settings)
    with sessions() as s:
        a, b = batch.write(s, [_item(people, test_catalogue), _item(people, test_catalogue)], settings=settings)
    with sessions() as s:
        subs = {x.id: x for x in s.scalars(select(Submission))}
        jobs = {j.submission_id: j.status for j in s.scalars(select(Job))}
        done = {e.submission_id for e in s.scalars(select(ProgressEvent).where(ProgressEvent.event == "done"))}
    assert (subs[stored.id].status, subs[stored.id].superseded_by) == ("superseded", a.id)
    assert (subs[a.id].status, subs[a.id].superseded_by, a.status) == ("superseded", b.id, "superseded")
    assert "superseded by your attempt 3" in subs[a.id].message
    assert (subs[b.id].status, b.attempt) == ("queued", 3)
    assert jobs == {stored.id: "cancelled", a.id: "cancelled", b.id: "queued"}
    assert done == {stored.id, a.id}


def test_a_row_the_database_refuses_fails_alone(sessions, svc, db_url, people, test_catalogue):
    """A batch the database refuses is stored again one upload per transaction: only the bad one fails."""
    from dataclasses import replace

    ghost = replace(people["bob"], identity_id=999_999)  # no such identity: the foreign key refuses the row
    writer = UploadWriter(sessions, lambda: svc.settings(db_url))
    items = [_item(people, test_catalogue), _item(people, test_catalogue, "bob"), _item(people, test_catalogue)]
    items[1] = replace(items[1], user=ghost)
    good, bad, good2 = _submit_together(writer, items)
    writer.close()
    assert isinstance(good, batch.Accepted) and isinstance(good2, batch.Accepted)
    assert isinstance(bad, UploadUnavailable) and bad.status_code == 503 and bad.code == "intake_unavailable"
    assert _counts(sessions) == (2, 2, 2)


def test_a_database_error_mid_batch_stores_nothing_and_says_so(sessions, svc, db_url, people, test_catalogue):
    engine = sessions.kw["bind"]

    def fail_jobs(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("INSERT INTO JOBS"):
            raise OperationalError(statement, None, RuntimeError("disk I/O error"))

    event.listen(engine, "before_cursor_execute", fail_jobs)
    try:
        writer = UploadWriter(sessions, lambda: svc.settings(db_url))
        outcomes = _submit_together(writer, [_item(people, test_catalogue, u) for u in ("alice", "bob")])
        writer.close()
    finally:
        event.remove(engine, "before_cursor_execute", fail_jobs)
    assert all(isinstance(o, UploadUnavailable) for o in outcomes), outcomes
    assert "nothing was kept" in outcomes[0].message and outcomes[0].headers["Retry-After"] == "5"
    assert _counts(sessions) == (0, 0, 0)  # the submission rows went with the failed transaction


def test_closing_stores_what_was_handed_over_then_refuses(sessions, svc, db_url, people, test_catalogue):
    writer = UploadWriter(sessions, lambda: svc.settings(db_url))

    async def main():
        with writer._cond:
            tasks = [asyncio.ensure_future(writer.submit(_item(people, test_catalogue))) for _ in range(3)]
            await asyncio.sleep(0)
            closing = threading.Thread(target=writer.close)
            closing.start()  # waits for the condition we hold, then for the drain
        stored = await asyncio.gather(*tasks)
        await asyncio.to_thread(closing.join)
        with pytest.raises(UploadUnavailable) as refused:
            await writer.submit(_item(people, test_catalogue))
        return stored, refused.value

    stored, refused = asyncio.run(main())
    assert [s.attempt for s in stored] == [1, 2, 3]
    assert refused.status_code == 503 and "shutting down" in refused.message
    assert _counts(sessions) == (3, 3, 3)


def test_the_endpoint_answers_503_when_the_database_fails(api, svc):
    engine = api.app_state.engine

    def fail(conn, cursor, statement, *args):
        if statement.lstrip().upper().startswith("INSERT INTO SUBMISSIONS"):
            raise OperationalError(statement, None, RuntimeError("database is locked"))

    event.listen(engine, "before_cursor_execute", fail)
    try:
        resp = api.post(URL, files={"notebook": ("s.ipynb", svc.notebook())}, headers=svc.auth(api.tokens["alice"]))
    finally:
        event.remove(engine, "before_cursor_execute", fail)
    assert resp.status_code == 503, resp.text
    assert resp.json()["error"]["code"] == "intake_unavailable" and resp.headers["Retry-After"] == "5"
    assert api.get(URL, headers=svc.auth(api.tokens["alice"])).json()["items"] == []
    assert api.post(URL, files={"notebook": ("s.ipynb", svc.notebook())},
                    headers=svc.auth(api.tokens["alice"])).status_code == 202


def test_an_upload_whose_client_went_away_is_stored_and_the_writer_lives_on(sessions, svc, db_url, people,
                                                                              test_catalogue):
    """The request is cancelled and its event loop closed before the writer answers: the row is stored
    all the same (it was handed over), and the writer goes on serving the next upload."""
    writer = UploadWriter(sessions, lambda: svc.settings(db_url))

    async def hand_over_and_leave():
        asyncio.ensure_future(writer.submit(_item(people, test_catalogue)))
        await asyncio.sleep(0)  # handed over; asyncio.run then cancels the request and closes its loop

    with writer._cond:
        asyncio.run(hand_over_and_leave())
    (second,) = _submit_together(writer, [_item(people, test_catalogue)])
    writer.close()
    assert isinstance(second, batch.Accepted) and second.attempt == 2
    assert _counts(sessions) == (2, 2, 2)


def test_an_error_postgresql_reports_at_the_pipeline_s_sync_is_a_database_error(
    sessions, svc, db_url, people, test_catalogue, monkeypatch
):
    """On PostgreSQL the INSERTs and the NOTIFY wait in one pipeline; a statement whose error only comes
    back at its sync (here a NOTIFY that divides by zero) must still be a database error (503, nothing
    kept, the writer lives on), not a bug of the writer (500)."""
    if not db_url.startswith("postgresql"):
        pytest.skip("the pipeline is PostgreSQL's")
    from sqlalchemy import text

    from service import signals

    def failing_notify(session, found):
        session.connection().execute(text("select 1 / (select count(*) - count(*) from jobs)"))

    monkeypatch.setattr(signals, "written", failing_notify)
    writer = UploadWriter(sessions, lambda: svc.settings(db_url))
    (outcome,) = _submit_together(writer, [_item(people, test_catalogue)])
    monkeypatch.undo()
    (after,) = _submit_together(writer, [_item(people, test_catalogue)])
    writer.close()
    assert isinstance(outcome, UploadUnavailable) and outcome.status_code == 503, outcome
    assert isinstance(after, batch.Accepted) and after.attempt == 1
    assert _counts(sessions) == (1, 1, 1)


def test_the_writer_keeps_its_connection_while_busy_and_gives_it_back_when_idle(
    sessions, svc, db_url, people, test_catalogue, monkeypatch
):
    from service.submissions import writer as writer_module

    monkeypatch.setattr(writer_module, "IDLE_RELEASE_S", 0.3)
    pool = sessions.kw["bind"].pool
    writer = UploadWriter(sessions, lambda: svc.settings(db_url))
    first = writer._conn
    _submit_together(writer, [_item(people, test_catalogue)])
    held = writer._conn
    _submit_together(writer, [_item(people, test_catalogue)])
    assert first is None and held is not None and writer._conn is held  # the same one, batch after batch
    assert pool.checkedout() >= 1
    deadline = time.monotonic() + 5
    while writer._conn is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert writer._conn is None and pool.checkedout() == 0  # idle: back to the pool
    (again,) = _submit_together(writer, [_item(people, test_catalogue)])
    writer.close()
    assert isinstance(again, batch.Accepted) and again.attempt == 3 and writer._conn is None


def test_a_held_connection_the_server_dropped_is_replaced_without_failing_the_upload(
    sessions, svc, db_url, people, test_catalogue
):
    """PostgreSQL ends the writer's backend between two batches (a restart or an idle timeout would): the
    next upload is stored on a fresh connection, not answered 503."""
    if not db_url.startswith("postgresql"):
        pytest.skip("only a server can drop the connection")
    from sqlalchemy import text

    writer = UploadWriter(sessions, lambda: svc.settings(db_url))
    (one,) = _submit_together(writer, [_item(people, test_catalogue)])
    pid = writer._conn.connection.dbapi_connection.info.backend_pid
    with sessions.kw["bind"].connect() as conn:
        assert conn.execute(text("select pg_terminate_backend(:p)"), {"p": pid}).scalar() is True
    (two,) = _submit_together(writer, [_item(people, test_catalogue)])
    writer.close()
    assert isinstance(one, batch.Accepted) and isinstance(two, batch.Accepted), two
    assert two.attempt == 2 and _counts(sessions) == (2, 2, 2)


def test_an_idle_writer_gives_its_connection_back_without_holding_the_hand_over_lock(
    sessions, svc, db_url, people, test_catalogue, monkeypatch
):
    """Closing a connection can wait on a slow server; a request handing over its upload (on the event
    loop) must not wait with it."""
    from service.submissions import writer as writer_module

    monkeypatch.setattr(writer_module, "IDLE_RELEASE_S", 0.2)
    writer = UploadWriter(sessions, lambda: svc.settings(db_url))
    _submit_together(writer, [_item(people, test_catalogue)])
    releasing, done = threading.Event(), threading.Event()
    release = writer._release

    def slow_release():
        releasing.set()
        done.wait(10)  # a server that takes its time
        release()

    writer._release = slow_release
    try:
        assert releasing.wait(5), "the idle writer never gave its connection back"
        got = writer._cond.acquire(timeout=1)
        if got:
            writer._cond.release()
    finally:
        done.set()
    writer.close()
    assert got, "the hand-over lock was held while the connection was being closed"
