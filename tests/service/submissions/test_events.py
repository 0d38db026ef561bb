"""Server-sent events follow the current grading run: they end after its done, a reconnect after done gets
204 (EventSource stops), a regrade streams the new run only, and every stream has a time limit."""
from __future__ import annotations

import json
import time

from grading.progress import Done

URL = "/api/v1/submissions"


def _frames(api, svc, sid, token, **headers):
    frames = []
    with api.stream("GET", f"{URL}/{sid}/events", headers=svc.auth(token, **headers)) as resp:
        if resp.status_code != 200:
            return resp.status_code, []
        for line in resp.iter_lines():  # fastapi.sse writes a frame's data before its id
            if line.startswith("data: "):
                frames.append([None, json.loads(line[6:])])
            elif line.startswith("id: "):
                frames[-1][0] = int(line[4:])
    return 200, [f for f in frames if f[0] is not None]  # not the estimates: they have no id


def _grade(api, score: float) -> None:
    from service.db import transaction
    from grading.result import GradeResult, Status
    from service.grades.service import record_grade
    from service.queue import service as queue

    with transaction(api.app_state.sessions) as s:
        job = queue.claim(s, worker_id="w", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)
    with transaction(api.app_state.sessions) as s:
        assert queue.complete(s, job=job)
        record_grade(s, submission_id=job.submission_id,
                     result=GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=score, max_score=3.0))


def test_reconnect_after_done_gets_204_at_once(api, svc):
    token = api.tokens["alice"]
    sid = api.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}, headers=svc.auth(token)).json()["id"]
    _grade(api, 3.0)
    status, frames = _frames(api, svc, sid, token)
    assert status == 200 and frames[-1][1]["event"] == "done"
    started = time.monotonic()
    status, _ = _frames(api, svc, sid, token, **{"Last-Event-ID": str(frames[-1][0])})
    assert status == 204 and time.monotonic() - started < 2


def test_after_a_regrade_the_stream_follows_the_new_run(api, svc):
    token, teacher = api.tokens["alice"], api.tokens["teacher"]
    sid = api.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}, headers=svc.auth(token)).json()["id"]
    _grade(api, 1.0)
    _, first = _frames(api, svc, sid, token)
    old_done = first[-1][0]
    again = api.post(f"{URL}/{sid}/regrade", headers=svc.auth(teacher))
    assert again.status_code == 202 and again.json()["submission_ids"] == [sid]
    noop = api.post(f"{URL}/{sid}/regrade", headers=svc.auth(teacher))
    assert noop.status_code == 200 and noop.json()["queued"] == 0
    assert noop.json()["skipped"][0]["reason"] == "already_pending" and "still queued" in noop.json()["message"]
    # run 2 is queued: a reconnect with run 1's done id streams run 2 and does not replay run 1's done
    api.app_state.settings = api.app_state.settings.model_copy(update={"events_max_s": 1.0, "events_poll_s": 0.1})
    started = time.monotonic()
    status, waiting = _frames(api, svc, sid, token, **{"Last-Event-ID": str(old_done)})
    assert status == 200 and [(f[1]["event"], f[1]["run"]) for f in waiting] == [("queued", 2)]
    assert 0.9 < time.monotonic() - started < 5  # ended by the stream time limit, not by a done
    _grade(api, 3.0)
    status, second = _frames(api, svc, sid, token, **{"Last-Event-ID": str(waiting[-1][0])})
    assert [f[1]["event"] for f in second] == ["claimed", "done"]
    assert second[-1][1] == {"event": "done", "status": "graded", "score": 3.0, "max_score": 3.0, "run": 2}
    status, fresh = _frames(api, svc, sid, token)  # a new client sees the current run from its start
    assert [f[1]["event"] for f in fresh] == ["queued", "claimed", "done"] and all(f[1]["run"] == 2 for f in fresh)
    assert api.get(f"{URL}/{sid}", headers=svc.auth(token)).json()["run"] == 2


def test_odd_last_event_ids_replay_or_end_but_never_fail(api, svc):
    token = api.tokens["alice"]
    sid = api.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}, headers=svc.auth(token)).json()["id"]
    _grade(api, 2.0)
    status, _ = _frames(api, svc, sid, token, **{"Last-Event-ID": "9" * 40})  # past the done: nothing more
    assert status == 204
    for odd in ("\u00b2".encode("latin-1"), b"-1", b"abc"):  # not a plain number: replay the run
        status, frames = _frames(api, svc, sid, token, **{"Last-Event-ID": odd})
        assert status == 200 and [f[1]["event"] for f in frames] == ["queued", "claimed", "done"]


def test_cli_client_resumes_a_timed_out_stream_until_done(live_api, svc):
    """`titangrade submit` follows through stream time limits (Last-Event-ID) and stops at done or 204."""
    import threading

    import httpx

    from service.client import _follow

    state = live_api.app.state
    saved = state.settings
    state.settings = saved.model_copy(update={"events_max_s": 0.5, "events_poll_s": 0.1})
    try:
        headers = {"Authorization": f"Bearer {live_api.tokens['bob']}"}
        with httpx.Client(base_url=live_api.url, headers=headers, timeout=30) as client:
            sid = client.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}).json()["id"]
            grader = threading.Timer(2.0, _grade, args=(type("A", (), {"app_state": state})(), 3.0))
            grader.start()
            started = time.monotonic()
            _follow(client, sid)
            took = time.monotonic() - started
            grader.join()
            assert 1.9 < took < 15 and client.get(f"{URL}/{sid}").json()["status"] == "graded"
            started = time.monotonic()
            _follow(client, sid)  # already done: replays the run and returns at once
            assert time.monotonic() - started < 3
    finally:
        state.settings = saved


def test_an_open_stream_outlives_a_database_outage(tmp_path, sqlite_template, add_submission):
    """The database file goes away mid-stream ("unable to open database file") and comes back: the stream
    keeps its connection and ends with the run's `done` instead of failing."""
    import asyncio
    import shutil
    import threading

    from sqlalchemy import create_engine
    from sqlalchemy.orm import sessionmaker
    from sqlalchemy.pool import NullPool

    from service.db import transaction
    from service.submissions import events

    home = tmp_path / "db"
    home.mkdir()
    shutil.copyfile(sqlite_template, home / "tg.db")
    engine = create_engine(f"sqlite:///{home / 'tg.db'}", poolclass=NullPool)  # the file is opened per fetch
    factory = sessionmaker(engine, expire_on_commit=False)
    with transaction(factory) as s:
        sub, _ = add_submission(s)

    async def follow() -> list[str]:
        seen = []
        async for frame in events.stream(factory, submission_id=sub.id, start=events.StreamPlan(1, 0),
                                         poll_s=0.05, max_s=30):
            seen += [frame.event] if frame.event else []
            if seen == ["queued"]:
                threading.Thread(target=outage).start()  # while the stream polls on
        return seen

    def outage() -> None:
        home.rename(tmp_path / "away")  # the database is gone
        time.sleep(0.5)  # several polls fail meanwhile
        (tmp_path / "away").rename(home)
        with transaction(factory) as s:
            events.add(s, submission_id=sub.id, event=Done(status="graded", score=None))

    assert asyncio.run(follow()) == ["queued", "done"]


def _raw(client, sid, **headers):
    """(status, content type, the body's lines) of one event-stream request, read to its end."""
    with client.stream("GET", f"{URL}/{sid}/events", headers=headers) as resp:
        return resp.status_code, resp.headers.get("content-type", ""), list(resp.iter_lines())


def _blocks(lines):
    """The body's frames (blank-line separated) as {field: value} dicts; comments under ':'."""
    blocks, block = [], {}
    for line in lines:
        if not line:
            if block:
                blocks.append(block)
            block = {}
            continue
        name, _, value = line.partition(": ")
        block[name] = value
    return blocks + ([block] if block else [])


def test_the_wire_over_a_real_server_ends_after_done_and_a_reconnect_gets_204(live_api, svc):
    """What EventSource relies on, through uvicorn: a retry first, an id on every stored event, the body
    ends right after `done` (not at the time limit), and reconnecting with done's id is 204 with no body."""
    import httpx

    state = live_api.app.state
    saved = state.settings
    state.settings = saved.model_copy(update={"events_max_s": 60.0, "events_poll_s": 0.1})
    try:
        headers = {"Authorization": f"Bearer {live_api.tokens['bob']}"}
        with httpx.Client(base_url=live_api.url, headers=headers, timeout=30) as client:
            sid = client.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}).json()["id"]
            _grade(type("A", (), {"app_state": state})(), 3.0)
            started = time.monotonic()
            status, kind, lines = _raw(client, sid)
            assert time.monotonic() - started < 10  # ended by done, far from the 60 s limit
            assert status == 200 and kind.startswith("text/event-stream")
            blocks = _blocks(lines)
            assert blocks[0] == {"retry": "3000"}
            stored = blocks[1:]
            assert [b["event"] for b in stored] == ["queued", "claimed", "done"]
            assert all(json.loads(b["data"])["event"] == b["event"] and b["id"].isdigit() for b in stored)
            assert json.loads(stored[-1]["data"]) == {
                "event": "done", "status": "graded", "score": 3.0, "max_score": 3.0, "run": 1
            }
            status, _, body = _raw(client, sid, **{"Last-Event-ID": stored[-1]["id"]})
            assert status == 204 and body == []
            status, _, again = _raw(client, sid, **{"Last-Event-ID": stored[0]["id"]})  # resume mid-run
            assert [b.get("event") for b in _blocks(again)[1:]] == ["claimed", "done"]
    finally:
        state.settings = saved


def test_an_idle_stream_sends_keep_alives_then_ends_at_its_time_limit(live_api, svc, monkeypatch):
    import httpx

    from service.submissions import events

    monkeypatch.setattr(events, "KEEPALIVE_S", 0.2)
    state = live_api.app.state
    saved = state.settings
    state.settings = saved.model_copy(update={"events_max_s": 1.0, "events_poll_s": 0.1})
    try:
        headers = {"Authorization": f"Bearer {live_api.tokens['bob']}"}
        with httpx.Client(base_url=live_api.url, headers=headers, timeout=30) as client:
            sid = client.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}).json()["id"]
            status, _, lines = _raw(client, sid)  # queued, never graded: nothing but keep-alives after it
    finally:
        state.settings = saved
    assert status == 200
    comments = [b[""] for b in _blocks(lines) if "" in b]
    assert comments.count("keep-alive") >= 2
    assert comments[-1] == "stream time limit reached; reconnect with Last-Event-ID"


def test_a_requeued_event_carries_its_cause_key_and_a_stale_cell_after_it_stays_in_order(api, svc):
    from grading.progress import Cell
    from service.db import transaction
    from service.queue import service as queue
    from service.submissions import events

    token = api.tokens["alice"]
    sid = api.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}, headers=svc.auth(token)).json()["id"]
    with transaction(api.app_state.sessions) as s:
        job = queue.claim(s, worker_id="w", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)
    with transaction(api.app_state.sessions) as s:
        queue.release(s, job=job, reason="not started: sandbox user busy: no free sandbox user: all 3 are in use")
        events.add(s, submission_id=sid, event=Cell(index=2, total=3))  # a late event of the attempt handed back
    _grade(api, 3.0)
    _, frames = _frames(api, svc, sid, token)
    kinds = [f[1]["event"] for f in frames]
    assert kinds[:4] == ["queued", "claimed", "requeued", "cell"] and kinds[-1] == "done"
    requeued = frames[2][1]
    assert requeued["cause"] == "sandbox_users_exhausted" and requeued["reason"].startswith("not started")
    assert "cause" not in frames[3][1]
