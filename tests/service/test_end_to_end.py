"""End to end over real HTTP: `titangrade serve` (uvicorn + local workers), real kernels, SQLite and
PostgreSQL. Crash recovery (killed worker, killed server) is in workers/test_crash_recovery.py."""
from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess

import httpx
import pytest
from sqlalchemy import select

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(module_db_url, tmp_path_factory, e2e):
    """One server with two local worker slots for the module, plus tokens."""
    from service.auth.service import create_token
    from service.db import transaction

    log_dir = tmp_path_factory.mktemp("e2e")
    server = e2e.Server(e2e.service_env(module_db_url, e2e.CATALOGUE_DIR), log_dir / "server.log", workers=2)
    sessions = e2e.sessions_for(module_db_url)
    with transaction(sessions) as s:
        tokens = {u: create_token(s, user=u, role=r, course="c1") for u, r in
                  (("alice", "learner"), ("bob", "learner"), ("teacher", "instructor"))}
    yield {"server": server, "url": server.url, "tokens": tokens, "sessions": sessions}
    server.kill(signal.SIGTERM)
    sessions.kw["bind"].dispose()


def test_solution_full_marks_template_zero_privacy_and_gradebook(served, svc, e2e):
    url, tok = served["url"], served["tokens"]
    alice = e2e.submit(url, tok["alice"], svc.notebook(), **{"Accept-Language": "zh"})
    bob = e2e.submit(url, tok["bob"], svc.notebook(solved=False))
    events = []
    with httpx.stream("GET", f"{url}/api/v1/submissions/{alice}/events",
                      headers={"Authorization": f"Bearer {tok['alice']}"}, timeout=90) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    kinds = [e["event"] for e in events]
    assert kinds[0] == "queued" and kinds[-1] == "done" and "started" in kinds and "checks" in kinds
    assert [e for e in events if e["event"] == "cell"][-1] == {"event": "cell", "index": 1, "total": 2, "run": 1}
    a = e2e.get(url, tok["alice"], alice)
    assert (a["status"], a["score"], a["max_score"], a["lang"]) == ("graded", 3.0, 3.0, "zh")
    assert all(c["passed"] for c in a["checks"]) and a["graded_at"] and a["attempt"] == 1
    b = e2e.final(url, tok["bob"], bob, proc=served["server"])
    assert (b["status"], b["score"]) == ("graded", 0.0)
    assert any("crane" in c["feedback"] for c in b["checks"])  # the hint, in English by default
    denied = httpx.get(f"{url}/api/v1/submissions/{bob}", headers={"Authorization": f"Bearer {tok['alice']}"})
    assert denied.status_code == 404 and denied.json()["error"]["code"] == "not_found"
    teacher = {"Authorization": f"Bearer {tok['teacher']}"}
    book = httpx.get(f"{url}/api/v1/courses/c1/gradebook", headers=teacher).json()["rows"]
    assert {(r["user"], r["score"]) for r in book if r["exercise_id"] == "ch05.svc_sum"} >= {("alice", 3.0), ("bob", 0.0)}
    sheet = httpx.get(f"{url}/api/v1/courses/c1/gradebook?format=csv", headers=teacher)
    assert sheet.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(sheet.text)))
    assert {(r["user"], float(r["score"])) for r in rows if r["score"]} >= {("alice", 3.0), ("bob", 0.0)}
    stats = httpx.get(f"{url}/api/v1/exercises/ch05.svc_sum/stats", headers=teacher).json()
    assert stats["submissions"] >= 2 and stats["check_pass_rates"]["total_value"] < 1.0
    assert stats["median_grading_s"] > 0
    assert "titangrade_grading_latency_seconds_count" in httpx.get(url + "/metrics").text
    assert httpx.get(url + "/readyz").json()["status"] == "ready"


def test_regrade_and_best_vs_latest_policy(served, svc, e2e):
    from service.queue.models import Job

    url, tok = served["url"], served["tokens"]
    teacher = {"Authorization": f"Bearer {tok['teacher']}"}
    first = e2e.submit(url, tok["alice"], svc.notebook("ch05.svc_long"))
    e2e.final(url, tok["alice"], first, proc=served["server"])
    second = e2e.submit(url, tok["alice"], svc.notebook("ch05.svc_long", wrong_word=True))
    e2e.final(url, tok["alice"], second, proc=served["server"])
    best = httpx.get(f"{url}/api/v1/courses/c1/gradebook?policy=best", headers=teacher).json()["rows"]
    latest = httpx.get(f"{url}/api/v1/courses/c1/gradebook?policy=latest", headers=teacher).json()["rows"]

    def pick(rows):
        return next(r for r in rows if r["user"] == "alice" and r["exercise_id"] == "ch05.svc_long")

    assert (pick(best)["score"], pick(latest)["score"], pick(best)["attempts"]) == (3.0, 2.0, 2)
    bulk = httpx.post(f"{url}/api/v1/exercises/ch05.svc_long/regrade", headers=teacher)
    assert bulk.status_code == 202 and set(bulk.json()["submission_ids"]) == {first, second}
    for sid in (first, second):
        e2e.final(url, tok["alice"], sid, proc=served["server"])
    with served["sessions"]() as s:
        jobs = s.scalars(select(Job).where(Job.submission_id == first).order_by(Job.id)).all()
        assert [(j.priority, j.status) for j in jobs] == [(0, "done"), (100, "done")]


def test_cli_submit_follows_progress_and_prints_the_result(served, svc, e2e, tmp_path):
    path = tmp_path / "mine.ipynb"
    path.write_bytes(svc.notebook(wrong_word=True))
    done = subprocess.run(e2e.CLI + ["submit", str(path), "--exercise", "ch05.svc_sum"], capture_output=True,
                          text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(e2e.REPO), TITANGRADE_URL=served["url"],
                                   TITANGRADE_TOKEN=served["tokens"]["alice"]))
    assert done.returncode == 0, done.stderr  # graded (exit 1 only for error / not_gradable)
    assert "score 2.0 / 3.0" in done.stdout and "[FAIL] word_value" in done.stdout
    assert "running cell 2 of 2" in done.stderr


def test_cli_shows_a_queued_submissions_place_and_estimate(served, svc, e2e, tmp_path):
    url, tok = served["url"], served["tokens"]
    e2e.final(url, tok["bob"], e2e.submit(url, tok["bob"], svc.notebook()), proc=served["server"])  # history
    busy = [e2e.submit(url, tok["bob"], svc.notebook(slow_s=8)) for _ in range(2)]  # both slots
    e2e.wait_for(lambda: all(e2e.get(url, tok["bob"], sid)["status"] == "running" for sid in busy), 30,
                 "both slots to be busy", served["server"])
    path = tmp_path / "mine.ipynb"
    path.write_bytes(svc.notebook())
    done = subprocess.run(e2e.CLI + ["submit", str(path)], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(e2e.REPO), TITANGRADE_URL=url,
                                   TITANGRADE_TOKEN=tok["alice"]))
    assert done.returncode == 0, done.stderr
    assert "queued: position 1, starts in about" in done.stderr and "(2 slot(s);" in done.stderr, done.stderr
    assert done.stderr.index("queued: position 1") < done.stderr.index("picked up by a worker")
