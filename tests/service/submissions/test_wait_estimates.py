"""Waiting times where learners see them: GET /submissions/{id} (`queue`), the SSE `estimate` frame, the CLI."""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

from service.db import transaction, utcnow
from service.queue import service as queue
from service.submissions import events
from service.submissions.models import Submission

URL = "/api/v1/submissions"


def _setup(api, svc, *, n=3):
    with transaction(api.app_state.sessions) as s:
        for i, took in enumerate((4.0, 5.0, 6.0)):
            s.add(
                Submission(
                    id=uuid.uuid4().hex,
                    user=f"past{i}",
                    course="c1",
                    exercise_id="ch05.svc_sum",
                    lang="en",
                    attempt=1,
                    notebook=b"{}",
                    status="graded",
                    max_score=3.0,
                    message="",
                    grading_s=took,
                    graded_at=utcnow() - dt.timedelta(minutes=i),
                )
            )
        queue.beat(s, worker_id="w", host="h", pid=1, slots=1, devices=0, device_kind="cpu", long_slots=1)
    ids = []
    for _ in range(n):
        resp = api.post(
            URL,
            files={"notebook": ("s.ipynb", svc.notebook(), "application/x-ipynb+json")},
            headers=svc.auth(api.tokens["alice"]),
        )
        ids.append(resp.json()["id"])
    return ids


def test_a_queued_submission_reports_position_and_estimates(api, svc):
    ids = _setup(api, svc)
    body = api.get(f"{URL}/{ids[2]}", headers=svc.auth(api.tokens["alice"])).json()
    q = body["queue"]
    assert (q["position"], q["worker_slots"], q["typical_s"], q["basis_runs"]) == (3, 1, 5.0, 3)
    assert (q["start_in_s"], q["finish_in_s"]) == (10.0, 15.0)  # two 5 s jobs ahead on one slot
    assert q["finish_at"] > q["start_at"]
    with transaction(api.app_state.sessions) as s:
        queue.claim(s, worker_id="w", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)
    moved = api.get(f"{URL}/{ids[2]}", headers=svc.auth(api.tokens["alice"])).json()["queue"]
    assert moved["position"] == 2 and 5.0 <= moved["start_in_s"] <= 10.0
    running = api.get(f"{URL}/{ids[0]}", headers=svc.auth(api.tokens["alice"])).json()
    assert running["status"] == "running" and running["queue"] is None


def test_the_event_stream_sends_an_estimate_while_queued(api, svc):
    ids = _setup(api, svc, n=2)
    state = api.app_state
    estimate = events.estimator(state.sessions, submission_id=ids[1], settings=state.settings)

    async def first_frames():
        frames = []
        gen = events.stream(state.sessions, submission_id=ids[1], start=events.StreamPlan(1, 0), poll_s=0.25,
                            max_s=30, estimate=estimate)
        async for frame in gen:
            if frame.retry is not None:  # the stream's first frame: EventSource's reconnect delay
                continue
            frames.append(frame)
            if frame.event == "estimate":
                break
        await gen.aclose()
        return frames

    frames = asyncio.run(asyncio.wait_for(first_frames(), timeout=20))
    assert frames[0].id is not None and frames[0].event == "queued"
    data = frames[-1].data
    assert (data["event"], data["position"], data["start_in_s"]) == ("estimate", 2, 5.0)
    assert frames[-1].id is None  # not replayed after a reconnect: it is recomputed instead


def test_estimate_frames_are_sent_when_they_change():
    base = {"position": 3, "worker_slots": 1, "finish_in_s": 100.0, "finish_at": "2026-01-01T00:01:40Z"}
    assert events._worth_sending(base, None)
    assert not events._worth_sending({**base, "finish_at": "2026-01-01T00:01:43Z"}, base)
    assert events._worth_sending({**base, "finish_at": "2026-01-01T00:02:00Z"}, base)
    assert events._worth_sending({**base, "position": 2}, base)


def test_cli_lines_for_estimates_and_superseded_attempts():
    from service.client import _describe

    line = _describe(
        {
            "event": "estimate",
            "position": 4,
            "worker_slots": 2,
            "typical_s": 20.0,
            "start_in_s": 45.0,
            "finish_in_s": 130.0,
        }
    )
    assert line == (
        "  queued: position 4, starts in about 45 s, result in about 2 min (2 slot(s); this "
        "exercise usually takes 20 s)"
    )
    assert "no worker" in _describe({"event": "estimate", "position": 1, "worker_slots": 0, "start_in_s": None})
    assert "superseded by your newer attempt abc" in _describe(
        {"event": "done", "status": "superseded", "superseded_by": "abc"}
    )
