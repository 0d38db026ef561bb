"""The submissions API without workers: intake, validation (each malformed request's 4xx), access rules."""
from __future__ import annotations

import json

import pytest

from grading.progress import Cell

URL = "/api/v1/submissions"


def _post(api, svc, token, nb=None, *, data=None, headers=None, filename="sub.ipynb"):
    files = None if nb is None else {"notebook": (filename, nb, "application/x-ipynb+json")}
    return api.post(URL, files=files, data=data or {}, headers=svc.auth(token, **(headers or {})))


def _error(resp, status, code):
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["error"]["code"] == code, body
    assert len(body["error"]["message"]) > 10
    return body["error"]["message"]


def test_accepts_a_notebook_and_reports_it_queued(api, svc):
    resp = _post(api, svc, api.tokens["alice"], svc.notebook(), headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    assert resp.status_code == 202, resp.text
    body = resp.json()
    assert body["status"] == "queued" and body["exercise_id"] == "ch05.svc_sum" and body["attempt"] == 1
    got = api.get(f"{URL}/{body['id']}", headers=svc.auth(api.tokens["alice"])).json()
    assert (got["status"], got["lang"], got["max_score"], got["score"]) == ("queued", "zh", 3.0, None)
    second = _post(api, svc, api.tokens["alice"], svc.notebook(), data={"exercise_id": "ch05.svc_sum"})
    assert second.json()["attempt"] == 2


def test_idempotency_key_returns_the_same_submission(api, svc):
    first = _post(api, svc, api.tokens["alice"], svc.notebook(), headers={"Idempotency-Key": "k-1"})
    again = _post(api, svc, api.tokens["alice"], svc.notebook(), headers={"Idempotency-Key": "k-1"})
    assert first.status_code == 202 and again.status_code == 200
    assert first.json()["id"] == again.json()["id"]
    listed = api.get(URL, headers=svc.auth(api.tokens["alice"])).json()["items"]
    assert len(listed) == 1


@pytest.mark.parametrize("case,status,code", [
    ("no_token", 401, "not_authenticated"),
    ("bad_token", 401, "not_authenticated"),
    ("missing_file", 422, "missing_notebook"),
    ("not_json", 422, "invalid_json"),
    ("not_a_notebook", 422, "not_a_notebook"),
    ("unknown_exercise", 404, "unknown_exercise"),
    ("no_exercise_id", 422, "missing_exercise"),
    ("wrong_exercise", 422, "exercise_mismatch"),
    ("too_large_header", 413, "too_large"),
    ("too_large_body", 413, "too_large"),
    ("needs_devices", 422, "resources_unavailable"),
    ("no_boundary", 400, "malformed_multipart"),
    ("text_not_file", 422, "invalid_request"),
    ("deep_brackets", 422, "invalid_json"),
    ("deep_list", 422, "invalid_json"),
    ("too_many_cells", 422, "too_many_cells"),
])
def test_malformed_submissions_get_documented_4xx(api, svc, case, status, code):
    token = api.tokens["alice"]
    nb = svc.notebook()
    bare = json.loads(nb)
    bare["metadata"].pop("titangrade")
    limit = api.app_state.settings.max_upload_bytes
    if case == "no_token":
        resp = api.post(URL, files={"notebook": ("a.ipynb", nb)})
    elif case == "bad_token":
        resp = _post(api, svc, "tg_not-a-real-token", nb)
    elif case == "missing_file":
        resp = _post(api, svc, token, None, data={"exercise_id": "ch05.svc_sum"})
    elif case == "not_json":
        resp = _post(api, svc, token, b"\x89PNG not a notebook")
    elif case == "not_a_notebook":
        resp = _post(api, svc, token, b'{"hello": "world"}', data={"exercise_id": "ch05.svc_sum"})
    elif case == "unknown_exercise":
        resp = _post(api, svc, token, json.dumps(bare).encode(), data={"exercise_id": "ch05.nope"})
    elif case == "no_exercise_id":
        resp = _post(api, svc, token, json.dumps(bare).encode())
    elif case == "wrong_exercise":
        resp = _post(api, svc, token, nb, data={"exercise_id": "ch05.svc_long"})
    elif case == "too_large_header":
        resp = _post(api, svc, token, b" " * (limit + 200_000))
    elif case == "too_large_body":  # under the header check's slack, over the file limit
        resp = _post(api, svc, token, nb + b" " * (limit - len(nb) + 10))
    elif case == "no_boundary":
        resp = api.post(URL, content=b"abc", headers=svc.auth(token, **{"Content-Type": "multipart/form-data"}))
    elif case == "text_not_file":
        resp = api.post(URL, data={"notebook": nb.decode()}, headers=svc.auth(token))
    elif case == "deep_brackets":
        resp = _post(api, svc, token, b"[" * 200_000)
    elif case == "deep_list":
        deep = json.loads(nb)
        deep["metadata"]["deep"] = "@@DEEP@@"
        resp = _post(api, svc, token, json.dumps(deep).replace('"@@DEEP@@"', "[" * 5000 + "]" * 5000).encode())
    elif case == "too_many_cells":
        many = json.loads(nb)
        many["cells"] = [{"cell_type": "code", "metadata": {}, "source": "1", "outputs": [], "execution_count": None,
                          "id": f"c{i}"} for i in range(301)]
        resp = _post(api, svc, token, json.dumps(many).encode())
    else:
        resp = _post(api, svc, token, svc.notebook("ch05.svc_gpu"))
    _error(resp, status, code)
    listed = api.get(URL, headers=svc.auth(api.tokens["root"])).json()["items"]
    assert listed == []  # nothing was stored


def test_learners_see_only_their_own_submissions(api, svc):
    alice = _post(api, svc, api.tokens["alice"], svc.notebook()).json()["id"]
    bob = _post(api, svc, api.tokens["bob"], svc.notebook()).json()["id"]
    _error(api.get(f"{URL}/{bob}", headers=svc.auth(api.tokens["alice"])), 404, "not_found")
    _error(api.get(f"{URL}/{bob}/events", headers=svc.auth(api.tokens["alice"])), 404, "not_found")
    mine = api.get(URL, headers=svc.auth(api.tokens["alice"])).json()["items"]
    assert [s["id"] for s in mine] == [alice]
    course = api.get(URL, headers=svc.auth(api.tokens["teacher"])).json()["items"]
    assert {s["id"] for s in course} == {alice, bob}
    other = _post(api, svc, api.tokens["carol"], svc.notebook()).json()["id"]
    _error(api.get(f"{URL}/{other}", headers=svc.auth(api.tokens["teacher"])), 404, "not_found")


@pytest.mark.parametrize("method,path", [
    ("get", "/api/v1/courses/c1/gradebook"), ("get", "/api/v1/exercises/ch05.svc_sum/stats"),
    ("post", "/api/v1/exercises/ch05.svc_sum/regrade"), ("post", "/api/v1/submissions/{sid}/regrade"),
    ("post", "/api/v1/submissions/{sid}/override"),
])
def test_instructor_endpoints_refuse_learners(api, svc, method, path):
    sid = _post(api, svc, api.tokens["alice"], svc.notebook()).json()["id"]
    kwargs = {"json": {"score": 3, "reason": "because"}} if path.endswith("override") else {}
    resp = getattr(api, method)(path.format(sid=sid), headers=svc.auth(api.tokens["alice"]), **kwargs)
    _error(resp, 403, "forbidden")


def test_rate_and_attempt_limits(api, svc):
    api.app_state.settings = api.app_state.settings.model_copy(update={"submissions_per_minute": 2,
                                                                       "max_attempts_per_exercise": 3})
    for _ in range(2):
        assert _post(api, svc, api.tokens["alice"], svc.notebook()).status_code == 202
    limited = _post(api, svc, api.tokens["alice"], svc.notebook())
    _error(limited, 429, "rate_limited")
    assert 1 <= int(limited.headers["Retry-After"]) <= 61
    api.app_state.settings = api.app_state.settings.model_copy(update={"submissions_per_minute": 100})
    assert _post(api, svc, api.tokens["alice"], svc.notebook()).status_code == 202
    _error(_post(api, svc, api.tokens["alice"], svc.notebook()), 403, "attempt_limit")  # a quota, not a rate
    assert _post(api, svc, api.tokens["bob"], svc.notebook()).status_code == 202  # per learner


def test_override_keeps_an_audit_trail_and_an_outbox_row(api, svc):
    from sqlalchemy import select

    from service.outbox.models import OutboxEvent

    sid = _post(api, svc, api.tokens["alice"], svc.notebook()).json()["id"]
    teacher = svc.auth(api.tokens["teacher"])
    _error(api.post(f"{URL}/{sid}/override", json={"score": 99, "reason": "typo"}, headers=teacher),
           422, "score_out_of_range")
    _error(api.post(f"{URL}/{sid}/override", json={"score": 2}, headers=teacher), 422, "invalid_request")
    resp = api.post(f"{URL}/{sid}/override", json={"score": 2.5, "reason": "late penalty waived"}, headers=teacher)
    assert resp.status_code == 200 and resp.json()["score"] == 2.5 and resp.json()["manual_score"] == 2.5
    trail = api.get(f"{URL}/{sid}/overrides", headers=teacher).json()
    assert [(t["new_score"], t["reason"], t["by"]) for t in trail] == [(2.5, "late penalty waived", "teacher")]
    with api.app_state.sessions() as s:
        kinds = [o.kind for o in s.scalars(select(OutboxEvent))]
    assert kinds == ["grade.overridden"]



def test_health_metrics_and_openapi(api, svc):
    assert api.get("/healthz").json() == {"status": "ok"}
    ready = api.get("/readyz")
    assert ready.status_code == 503 and ready.json()["status"] == "no_workers"  # no worker heartbeat yet
    _post(api, svc, api.tokens["alice"], svc.notebook())
    metrics = api.get("/metrics").text
    assert 'titangrade_queue_depth{lane="short"} 1.0' in metrics
    assert "titangrade_grading_latency_seconds_bucket" in metrics
    paths = api.get("/api/v1/openapi.json").json()["paths"]
    assert "/api/v1/submissions/{submission_id}/events" in paths and "/api/v1/courses/{course}/gradebook" in paths


def test_event_stream_replays_progress_and_resumes_after_last_event_id(api, svc):
    from service.db import transaction
    from grading.result import GradeResult, Status
    from service.grades.service import record_grade
    from service.queue import service as queue
    from service.submissions import events

    sid = _post(api, svc, api.tokens["alice"], svc.notebook()).json()["id"]
    sessions = api.app_state.sessions
    with transaction(sessions) as s:
        job = queue.claim(s, worker_id="w", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)
    with transaction(sessions) as s:
        events.add(s, submission_id=sid, event=Cell(index=0, total=2))
    with transaction(sessions) as s:
        assert queue.complete(s, job=job)
        record_grade(s, submission_id=sid, result=GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0))

    def stream(**headers):
        frames = []
        with api.stream("GET", f"{URL}/{sid}/events", headers=svc.auth(api.tokens["alice"], **headers)) as resp:
            assert resp.headers["content-type"].startswith("text/event-stream")
            for line in resp.iter_lines():  # fastapi.sse writes a frame's data before its id
                if line.startswith("data: "):
                    frames.append([None, json.loads(line[6:])])
                elif line.startswith("id: "):
                    frames[-1][0] = int(line[4:])
        return frames

    full = stream()
    assert [f[1]["event"] for f in full] == ["queued", "claimed", "cell", "done"]
    assert full[-1][1] == {"event": "done", "status": "graded", "score": 3.0, "max_score": 3.0, "run": 1}
    resumed = stream(**{"Last-Event-ID": str(full[1][0])})
    assert [f[1]["event"] for f in resumed] == ["cell", "done"]


@pytest.mark.parametrize("change", ["notebook", "exercise"])
def test_idempotency_key_is_bound_to_the_request(api, svc, change):
    first = _post(api, svc, api.tokens["alice"], svc.notebook(), headers={"Idempotency-Key": "k-2"})
    assert first.status_code == 202
    if change == "notebook":
        other = _post(api, svc, api.tokens["alice"], svc.notebook(wrong_word=True), headers={"Idempotency-Key": "k-2"})
    else:
        other = _post(api, svc, api.tokens["alice"], svc.notebook(), data={"exercise_id": "ch05.svc_long"},
                      headers={"Idempotency-Key": "k-2"})
    assert first.json()["id"] in _error(other, 422, "idempotency_key_reused")
    same = _post(api, svc, api.tokens["alice"], svc.notebook(), headers={"Idempotency-Key": "k-2"})
    assert same.status_code == 200 and same.json()["id"] == first.json()["id"]
    # keys belong to one identity: bob may use the same key for his own submission
    assert _post(api, svc, api.tokens["bob"], svc.notebook(), headers={"Idempotency-Key": "k-2"}).status_code == 202
