"""One owner for a job's columns: service.queue.models.job_row shapes the row of every path that files a job
(the intake's batch INSERT behind uploads, LTI and signed intake; `queue.enqueue` behind regrades)."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

from sqlalchemy import select

from service.db import transaction
from service.queue.models import Job, job_row, learner_key
from service.queue.service import SINGLE_REGRADE_PRIORITY
from service.states import JobStatus
from service.submissions import service as submissions
from service.submissions.models import Submission

SERVICE = Path(__file__).resolve().parents[3] / "service"
NOW = dt.datetime(2026, 1, 2, 3, 4, 5)
SHAPE = {"learner": "identity:7", "lane": "long", "priority": 0, "devices": 1, "world_size": 2, "max_attempts": 3}


def test_a_new_job_is_queued_and_claimable_now():
    row = job_row(submission_id="s1", now=NOW, **SHAPE)
    assert row["status"] == JobStatus.QUEUED and row["available_at"] == row["created_at"] == NOW
    assert (row["finished_at"], row["last_error"], row["learner"]) == (None, "", "identity:7")
    assert set(row) <= {c.name for c in Job.__table__.columns}


def test_a_job_superseded_within_its_batch_is_born_cancelled():
    row = job_row(submission_id="s1", superseded_by="s2", now=NOW, **SHAPE)
    assert (row["status"], row["finished_at"], row["last_error"]) == (JobStatus.CANCELLED, NOW, "superseded by s2")


def test_fair_share_counts_per_identity():
    assert learner_key(7) == "identity:7"


def test_an_upload_and_a_regrade_file_the_same_row(api, svc, test_catalogue):
    """Both paths' job rows agree on every column but the id, the times and the regrade's priority."""
    resp = api.post(
        "/api/v1/submissions",
        files={"notebook": ("s.ipynb", svc.notebook(), "application/x-ipynb+json")},
        headers=svc.auth(api.tokens["alice"]),
    )
    assert resp.status_code == 202, resp.text
    sid = resp.json()["id"]
    sessions, settings = api.app_state.sessions, api.app_state.settings
    with transaction(sessions) as s:
        first = s.scalars(select(Job).where(Job.submission_id == sid)).one()
        first.status = JobStatus.DONE  # as if graded: a pending job is not queued again
    with sessions() as s:
        sub = s.get_one(Submission, sid)
        queued, _ = submissions.regrade(
            s,
            subs=[sub],
            priority=SINGLE_REGRADE_PRIORITY,
            max_attempts=settings.max_attempts,
            catalogue=test_catalogue,
        )
    assert queued == [sid]
    with sessions() as s:
        upload, regrade = s.scalars(select(Job).where(Job.submission_id == sid).order_by(Job.id)).all()
        identity_id = s.get_one(Submission, sid).identity_id

    def columns(job: Job) -> dict:
        skip = {"id", "available_at", "created_at", "finished_at", "priority", "status"}
        return {c.name: getattr(job, c.name) for c in Job.__table__.columns if c.name not in skip}

    assert columns(upload) == columns(regrade)
    assert regrade.learner == learner_key(identity_id) and regrade.status == JobStatus.QUEUED
    assert (upload.priority, regrade.priority) == (0, SINGLE_REGRADE_PRIORITY)


def _shapes_a_job(node: ast.AST) -> bool:
    """`Job(...)` other than `Job(**job_row(...))`, or a dict literal with a job's own columns."""
    match node:
        case ast.Call(func=ast.Name(id="Job"), args=args, keywords=keywords):
            return bool(args) or not (
                len(keywords) == 1
                and keywords[0].arg is None
                and isinstance(call := keywords[0].value, ast.Call)
                and isinstance(call.func, ast.Name)
                and call.func.id == "job_row"
            )
        case ast.Dict(keys=keys):
            named = {k.value for k in keys if isinstance(k, ast.Constant)}
            return {"submission_id", "max_attempts"} <= named
    return False


def test_job_row_is_the_only_place_a_job_is_shaped():
    planted = ast.parse('jobs.append({"submission_id": i, "max_attempts": 3})\nsession.add(Job(submission_id=i))')
    assert sum(_shapes_a_job(n) for n in ast.walk(planted)) == 2
    found = [
        f"{path.relative_to(SERVICE.parent)}:{node.lineno}"
        for path in sorted(SERVICE.rglob("*.py"))
        if path != SERVICE / "queue" / "models.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if _shapes_a_job(node)
    ]
    assert not found, f"shape new jobs with service.queue.models.job_row: {found}"
