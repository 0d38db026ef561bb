"""The whole LTI loop over real HTTP with `titangrade serve` (its own process, real kernel) and the platform
harness (its own process): login -> launch -> submit -> graded -> score received at the line item; then an
instructor's override -> the new score received. The tool's JWKS, the platform's JWKS, the token grant and
the score POSTs all cross real sockets."""
from __future__ import annotations

import datetime as dt
import signal
import time

import httpx
import pytest
from lti_support import INSTRUCTOR, LEARNER, Browser, Platform, free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_launch_submit_grade_and_override_reach_the_platform(module_db_url, e2e, svc, tmp_path):
    from service.db import transaction
    from service.lti import service as lti_service

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = e2e.service_env(module_db_url, e2e.CATALOGUE_DIR, TITANGRADE_WEBHOOK_POLL_S="0.1",
                          TITANGRADE_LTI_TOOL_URL=url, TITANGRADE_LTI_KEY_DIR=str(tmp_path / "keys"))
    server = e2e.Proc(["serve", "--port", str(port), "--workers", "1"], env, tmp_path / "serve.log")
    platform = None
    sessions = e2e.sessions_for(module_db_url)
    try:
        e2e.wait_for(lambda: _up(url), 60, "serve to start", server)
        platform = Platform(tool_url=url)
        with transaction(sessions) as s:
            lti_service.create(s, **platform.registration("e2e"))
        browser = Browser(url, platform)
        learner = browser.launch(sub="s-e2e", roles=[LEARNER], context="course-E2E", exercise_id="ch05.svc_sum",
                                 lineitem="li-e2e")
        assert learner.status_code == 200, learner.text
        token = learner.json()["token"]
        sid = e2e.submit(url, token, svc.notebook())
        graded = e2e.final(url, token, sid, proc=server)
        assert (graded["status"], graded["score"]) == ("graded", 3.0)
        first = e2e.wait_for(lambda: _graded(platform), 30, "the score at the line item", server)
        teacher = browser.launch(sub="t-e2e", roles=[INSTRUCTOR], context="course-E2E").json()["token"]
        over = httpx.post(f"{url}/api/v1/submissions/{sid}/override", headers=svc.auth(teacher),
                          json={"score": 1.5, "reason": "regraded by hand"}, timeout=30)
        assert over.status_code == 200, over.text
        scores = e2e.wait_for(lambda: len(_graded(platform)) >= 2 and _graded(platform), 30,
                              "the overridden score at the line item", server)
        log = platform.log()
    finally:
        server.kill(signal.SIGTERM)
        if platform is not None:
            platform.stop()
        sessions.kw["bind"].dispose()
    assert (first[0]["userId"], first[0]["scoreGiven"], first[0]["gradingProgress"]) == ("s-e2e", 3.0, "FullyGraded")
    assert [s["scoreGiven"] for s in scores] == [3.0, 1.5] and scores[1]["kept"]
    assert "checks passed" in scores[0]["comment"] and "regraded by hand" in scores[1]["comment"]
    assert len(log["tokens"]) == 1 and not log["refused"]
    # the upload's Pending, if the loop sent it before the grade was stored (else it was dropped): first, older
    pending = [s for s in log["scores"] if s["gradingProgress"] == "Pending"]
    assert len(pending) <= 1 and len(log["scores"]) == len(pending) + 2
    if pending:
        assert log["scores"][0] == pending[0] and "scoreGiven" not in pending[0]
        assert dt.datetime.fromisoformat(pending[0]["timestamp"]) < dt.datetime.fromisoformat(first[0]["timestamp"])


def _graded(platform) -> list[dict]:
    return [s for s in platform.log()["scores"] if s["gradingProgress"] != "Pending"]


def _up(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        time.sleep(0.2)
        return False
