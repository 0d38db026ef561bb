"""Queue health and the learner's live status in a real browser (Playwright, Debian's Chromium), in English
and Chinese, 1280 and 390 px wide, each page checked with axe-core. The server is the real app over real
HTTP with no worker, so the test plays the worker's part through the queue's own functions: an outage
(a sandbox-user shortage, a worker that died), then one learner's run queued, claimed, running cell 3 of
3, requeued, with a late cell of the lost attempt after the requeue, and graded."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import httpx
import pytest
from axe_support import assert_accessible
from browser_support import signed_in
from sqlalchemy import update

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("module_db_url", ["sqlite"], indirect=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]
SHOTS = os.environ.get("TITANGRADE_WEB_SCREENSHOTS")  # a folder: save the two pages as PNG (docs/img)
WORDS = {
    "en": {
        "sandbox": "no free sandbox user",
        "lost": "worker lost or stopped",
        "queued": "queued",
        "cell": "running cell 3 of 3",
        "position": re.compile(r"number (\d+) in the queue"),
        "eta": "expected to finish in about",
        "notice": "put back in the queue because the grader stopped while running it; it does not count against you",
        "graded": "graded",
    },
    "zh": {
        "sandbox": "没有空闲的沙箱用户",
        "lost": "评分节点失联或停止",
        "queued": "排队中",
        "cell": "正在运行第 3 / 3 个单元",
        "position": re.compile(r"队列中第 (\d+) 位"),
        "eta": "预计约",
        "notice": "由于评分系统在运行时停止，你的提交已重新排队；这不计入你的提交次数。",
        "graded": "已评分",
    },
}
CASES = [(lang, width) for lang in ("en", "zh") for width in (1280, 390)]


def _submit(url: str, token: str, svc) -> str:
    resp = httpx.post(
        url + "/api/v1/submissions",
        files={"notebook": ("nb.ipynb", svc.notebook())},
        headers={"Authorization": f"Bearer {token}", "X-Exercise-Id": "ch05.svc_sum"},
        timeout=30,
    )
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


@pytest.fixture(scope="module")
def site(live_api, svc):
    """An outage behind the queue page: one learner's run handed back for want of a sandbox user, a second's
    given up after its worker (heartbeat ten minutes old) died, a third's waiting for 20 minutes."""
    from service.auth.service import create_token
    from service.db import transaction, utcnow
    from service.grades.service import record_grade
    from service.queue import service as queue
    from service.queue.models import Job, WorkerBeat
    from service.submissions.models import Submission

    sessions = live_api.app.state.sessions
    with transaction(sessions) as s:
        learners = {f"qb{i}": create_token(s, user=f"qb{i}", role="learner", course="c1") for i in range(3)}
    ids = [_submit(live_api.url, learners[f"qb{i}"], svc) for i in range(3)]
    with transaction(sessions) as s:
        queue.beat(s, worker_id="wdead", host="grader-7", pid=4242, slots=2, devices=0, device_kind="cpu")
        s.flush()
        s.execute(update(WorkerBeat).values(heartbeat_at=utcnow() - dt.timedelta(minutes=10)))
        s.execute(
            update(Job)
            .where(Job.submission_id == ids[2])
            .values(created_at=utcnow() - dt.timedelta(minutes=20), available_at=utcnow() + dt.timedelta(hours=2))
        )
    for _ in range(2):
        with transaction(sessions) as s:
            job = queue.claim(s, worker_id="wdead", lanes=("short",), free_devices=0, max_world_size=1, lease_s=600)
            if job.submission_id == ids[0]:
                queue.release(
                    s,
                    job=job,
                    after_s=7200,
                    reason="not started: sandbox user busy: no free sandbox "
                    "user: all 6 are in use (6 by this process, 0 by other titangrade processes on this host)",
                )
            else:
                s.execute(update(Job).where(Job.id == job.job_id).values(max_attempts=1))
                s.flush()
                reason = "lease expired on worker wdead (attempt 1)"
                assert queue.fault(s, job=job, error=reason, retryable=True, backoff_s=0) == "failed"
                record_grade(s, submission_id=job.submission_id, result=None, fault=reason)
    with transaction(sessions) as s:  # history for the estimate: one earlier run of the exercise took 40 s
        past = s.get_one(Submission, ids[1])
        s.add(Submission(id="qb" + "0" * 30, identity_id=past.identity_id, user="qb1", course="c1",
                         exercise_id="ch05.svc_sum", attempt=9, notebook=b"{}", status="graded", score=3.0,
                         max_score=3.0, grading_s=40.0, graded_at=utcnow()))  # fmt: skip
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield {"url": live_api.url, "tokens": live_api.tokens, "sessions": sessions, "browser": browser, "outage": ids}
        browser.close()


def _page(site, token: str, lang: str, width: int):
    return signed_in(site["browser"], site["url"], token, lang=lang, width=width)


def _fits(page) -> list[str]:
    """What in the page's main part reaches past the window, outside the tables' own scroll boxes (the
    header's layout on phones is base.html's, not checked here)."""
    return page.evaluate("""() => [...document.querySelectorAll('main *')].filter(e =>
        e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.matrix'))
        .map(e => e.tagName + '#' + e.id)""")


@pytest.mark.parametrize(("lang", "width"), CASES)
def test_the_queue_page_shows_causes_dead_workers_and_the_oldest_job(site, lang, width):
    words = WORDS[lang]
    ctx, page, errors = _page(site, site["tokens"]["teacher"], lang, width)
    page.goto(site["url"] + "/teach/queue")
    sandbox = page.locator("#causes tr[data-cause='sandbox_users_exhausted']")
    assert words["sandbox"] in sandbox.inner_text() and sandbox.locator(".retrying").inner_text() == "1"
    lost = page.locator("#causes tr[data-cause='worker_lost']")
    assert words["lost"] in lost.inner_text() and lost.locator(".failed").inner_text() == "1"
    assert "lease expired on worker wdead" in lost.locator(".example").inner_text()
    dead = page.locator("#dead-workers tr[data-worker='wdead']")
    assert "grader-7" in dead.inner_text() and dead.locator(".reaped").inner_text() == "1"
    assert page.locator("#workers tr[data-worker='wdead']").count() == 0
    short = page.locator("#depth tr[data-lane='short']")
    assert (
        int(short.locator(".oldest").get_attribute("data-age-s")) >= 1190
        and short.locator(".queued").inner_text() == "2"
    )
    failed = page.locator(f"#not-gradable tr[data-submission='{site['outage'][1]}']")
    assert failed.get_attribute("data-cause") == "worker_lost" and words["lost"] in failed.inner_text()
    assert _fits(page) == []
    assert_accessible(page)
    if SHOTS and (lang, width) == ("en", 1280):
        page.screenshot(path=str(Path(SHOTS) / "web-queue-health.png"), full_page=True)
    ctx.close()
    assert errors == []


@pytest.mark.parametrize(("lang", "width"), CASES)
def test_the_live_status_follows_queueing_a_requeue_and_odd_event_orders(site, svc, lang, width):
    from grading.progress import Cell, Started
    from grading.result import GradeResult, Status
    from service.db import transaction, utcnow
    from service.grades.service import record_grade
    from service.queue import service as queue
    from service.queue.models import WorkerBeat
    from service.submissions import events

    words, sessions = WORDS[lang], site["sessions"]
    sid = _submit(site["url"], site["tokens"]["alice"], svc)
    with transaction(sessions) as s:  # a worker is live (far-off heartbeat: it stays live for the whole test)
        queue.beat(s, worker_id="wlive", host="grader-1", pid=1, slots=1, devices=0, device_kind="cpu")
        s.flush()
        s.execute(
            update(WorkerBeat).where(WorkerBeat.id == "wlive").values(heartbeat_at=utcnow() + dt.timedelta(hours=1))
        )
    ctx, page, errors = _page(site, site["tokens"]["alice"], lang, width)
    page.add_init_script("""window.__seen = []; document.addEventListener('DOMContentLoaded', () => {
        const p = document.getElementById('progress'); if (!p) return;
        new MutationObserver(() => window.__seen.push(p.innerText)).observe(p, {subtree: true, childList: true,
            characterData: true, attributes: true}); });""")
    page.goto(f"{site['url']}/submissions/{sid}")
    page.wait_for_function("() => document.getElementById('progress-detail').textContent.length > 0")
    detail = page.inner_text("#progress-detail")
    expected = httpx.get(
        f"{site['url']}/api/v1/submissions/{sid}",
        timeout=30,
        headers={"Authorization": f"Bearer {site['tokens']['alice']}"},
    ).json()["queue"]
    assert int(words["position"].search(detail).group(1)) == expected["position"]
    assert words["eta"] in detail and page.inner_text("#progress-text") == words["queued"]
    assert_accessible(page)

    def worker_claims():
        with transaction(sessions) as s:
            job = queue.claim(s, worker_id="wlive", lanes=("short",), free_devices=0, max_world_size=1, lease_s=600)
        assert job is not None and job.submission_id == sid
        with transaction(sessions) as s:
            events.add(s, submission_id=sid, event=Started(exercise_id="ch05.svc_sum"))
            events.add(s, submission_id=sid, event=Cell(index=2, total=3))
        return job

    job = worker_claims()
    page.wait_for_function(f"() => document.getElementById('progress-text').textContent === {words['cell']!r}")
    assert page.inner_text("#progress-detail") == "" and words["queued"] not in page.inner_text("#progress")
    with transaction(sessions) as s:  # the grading process died: requeued, then a late cell of that attempt
        assert (
            queue.fault(s, job=job, error="grading process 77 died: BrokenProcessPool", retryable=True, backoff_s=0)
            == "queued"
        )
        events.add(s, submission_id=sid, event=Cell(index=2, total=3))
    page.wait_for_selector("#progress-notice:not([hidden])")
    assert words["notice"] in page.inner_text("#progress-notice")
    page.wait_for_function("() => document.getElementById('progress-detail').textContent.length > 0")
    assert page.inner_text("#progress-text") == words["queued"] and words["cell"] not in page.inner_text("#progress")
    assert _fits(page) == []
    assert_accessible(page)
    if SHOTS and (lang, width) == ("en", 390):
        page.screenshot(path=str(Path(SHOTS) / "web-live-requeued.png"), full_page=True)
    seen = page.evaluate("() => window.__seen")  # every state the status line showed, before the reload
    assert seen and not [t for t in seen if words["queued"] in t and words["cell"] in t], seen
    assert any(words["cell"] in t for t in seen)
    job = worker_claims()  # the next attempt runs and is graded: the page reloads with the result
    with transaction(sessions) as s:
        assert queue.complete(s, job=job)
        record_grade(
            s,
            submission_id=sid,
            result=GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0),
        )
    page.wait_for_selector(f"#status:has-text('{words['graded']}')")
    assert page.locator("#progress").count() == 0
    ctx.close()
    assert errors == []
