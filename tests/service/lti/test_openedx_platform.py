"""Open edX's own LTI 1.3 consumer (lti-consumer-xblock 11.4.4: `LtiAdvantageConsumer`, its deep-linking
and AGS classes and its DRF serializers, in its own process under .lms-venv) as the platform of a live
`titangrade serve` with a real kernel, registered with the CLI: login initiation -> the tool's authorization
request validated by Open edX -> a deep-linking launch -> the picker's answer checked by Open edX's
`check_and_decode_deep_linking_token` and serializers -> the deep-linked item launched by a learner ->
submit -> graded -> a token granted by Open edX's `access_token` -> the score accepted by Open edX's
`check_token`, `LineItemScoreParser` and `LtiAgsScoreSerializer`. And Open edX refusing what it must: an
authorization request with another redirect_uri, a tampered deep-linking answer, a score without a token.
What of Open edX's flow cannot run outside Open edX is in docs/lms.md ("Verified against Open edX's
consumer")."""

from __future__ import annotations

import html
import re
import signal
import subprocess
import time
from pathlib import Path

import httpx
import jwt
import pytest
from lti_support import free_port

REPO = Path(__file__).resolve().parents[3]
LMS_PYTHON = REPO / ".lms-venv" / "bin" / "python"
PLATFORM = Path(__file__).with_name("openedx_platform.py")
CLIENT_ID, DEPLOYMENT = "openedx-client-1", "openedx-deployment-1"
ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
]


class OpenEdx:
    """openedx_platform.py under the .lms-venv python, in its own process."""

    def __init__(self, tool_url: str, log: Path) -> None:
        # never skipped: CI must run Open edX's side (scripts/install.sh makes it)
        assert LMS_PYTHON.exists(), "no .lms-venv with lti-consumer-xblock: run scripts/install.sh"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._err = log.open("w")
        self.proc = subprocess.Popen(
            [str(LMS_PYTHON), str(PLATFORM), str(self.port), tool_url, CLIENT_ID, DEPLOYMENT],
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
        )
        assert self.proc.stdout.readline().strip() == "ready", log.read_text()

    def start(self, **body) -> str:
        resp = httpx.post(self.url + "/_start", json=body, timeout=30)
        assert resp.status_code == 200, resp.text
        return resp.json()["url"]

    def log(self) -> dict:
        return httpx.get(self.url + "/_log", timeout=10).json()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self._err.close()


def _launch(tool: str, edx: OpenEdx, client: httpx.Client, **start) -> httpx.Response:
    """The browser's part: Open edX's preflight URL -> the tool's redirect -> Open edX's form -> the tool."""
    login = client.get(edx.start(**start), follow_redirects=False)
    assert login.status_code == 302, login.text
    location = login.headers["location"]
    assert location.startswith(edx.url + "/authorize?"), location
    form = httpx.get(location, timeout=30)
    assert form.status_code == 200, form.text  # Open edX's _validate_preflight_response passed
    body = form.json()
    assert body["action"] == tool + "/lti/launch"
    return client.post(body["action"], data={"id_token": body["id_token"], "state": body["state"]})


def test_open_edx_drives_login_launch_deep_link_and_score_against_titangrade_serve(module_db_url, e2e, svc, tmp_path):
    port = e2e.free_port()
    tool = f"http://127.0.0.1:{port}"
    env = e2e.service_env(
        module_db_url,
        e2e.CATALOGUE_DIR,
        TITANGRADE_WEBHOOK_POLL_S="0.1",
        TITANGRADE_LTI_TOOL_URL=tool,
        TITANGRADE_LTI_KEY_DIR=str(tmp_path / "keys"),
    )
    server = e2e.Proc(["serve", "--port", str(port), "--workers", "1"], env, tmp_path / "serve.log")
    edx = None
    try:
        e2e.wait_for(lambda: _up(tool), 60, "serve to start", server)
        edx = OpenEdx(tool, tmp_path / "openedx.log")
        added = subprocess.run(
            [
                *e2e.CLI,
                "lti",
                "platforms",
                "add",
                "--name",
                "Open edX",
                "--issuer",
                edx.url,
                "--client-id",
                CLIENT_ID,
                "--auth-login-url",
                edx.url + "/authorize",
                "--auth-token-url",
                edx.url + "/token",
                "--keyset-url",
                edx.url + "/jwks",
                "--deployment-id",
                DEPLOYMENT,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert added.returncode == 0, added.stdout + added.stderr

        # A course instructor (Open edX role "instructor": context Administrator) adds an exercise by deep linking.
        teacher = httpx.Client(timeout=30)
        picked = _launch(
            tool,
            edx,
            teacher,
            kind="deep_link",
            user_id="edx-instructor-1",
            role="instructor",
            resource_link_id="block-v1:edX+T+2026+type@lti_consumer+block@dl",
        )
        assert picked.status_code == 200, picked.text
        answer = picked.json()
        assert answer["accept"]["multiple"] is True and answer["accept"]["lineitem"] is True
        page = teacher.post(
            tool + "/lti/deep-link", data={"pick_token": answer["pick_token"], "exercise_id": "ch05.svc_sum"}
        )
        assert page.status_code == 200, page.text
        action = html.unescape(re.search(r'action="([^"]+)"', page.text).group(1))
        token = html.unescape(re.search(r'name="JWT" value="([^"]+)"', page.text).group(1))
        assert action == edx.url + "/deep_link_return"
        tampered = _tamper(token)
        refused = httpx.post(action, data={"JWT": tampered}, timeout=30)
        assert refused.status_code == 400 and "Signature" in refused.json()["error"], refused.text
        back = httpx.post(action, data={"JWT": token}, timeout=30)
        assert back.status_code == 200, back.text  # check_and_decode_deep_linking_token + its serializer
        (item,) = back.json()["content_items"]
        assert item["type"] == "ltiResourceLink" and item["custom"]["exercise_id"] == "ch05.svc_sum"
        assert item["lineItem"]["resourceId"] == "ch05.svc_sum" and item["lineItem"]["scoreMaximum"] > 0

        # Open edX refuses an authorization request that names another redirect_uri.
        login = httpx.Client(timeout=30).get(
            edx.start(kind="resource_link", user_id="edx-learner-1", role="student", resource_link_id="block-v1:x"),
            follow_redirects=False,
        )
        evil = re.sub(
            r"redirect_uri=[^&]+", "redirect_uri=https%3A%2F%2Fevil.example%2Flaunch", login.headers["location"]
        )
        bad = httpx.get(evil, timeout=30)
        assert bad.status_code == 400 and bad.json()["error"] == "PreflightRequestValidationFailure", bad.text

        # Open edX lets only instructors and staff deep-link (launch_gate_endpoint's role check).
        student_dl = httpx.Client(timeout=30).get(
            edx.start(kind="deep_link", user_id="edx-learner-1", role="student", resource_link_id="block-v1:y"),
            follow_redirects=False,
        )
        assert student_dl.status_code == 302, student_dl.text
        denied = httpx.get(student_dl.headers["location"], timeout=30)
        assert denied.status_code == 403 and "instructors and staff" in denied.json()["detail"], denied.text

        # A learner launches the deep-linked item (its url and custom parameters), submits, is graded.
        learner = _launch(
            tool,
            edx,
            httpx.Client(timeout=30),
            kind="resource_link",
            user_id="edx-learner-1",
            role="student",
            resource_link_id="block-v1:edX+T+2026+type@lti_consumer+block@sum",
            item=0,
        )
        assert learner.status_code == 200, learner.text
        sid = e2e.submit(tool, learner.json()["token"], svc.notebook())
        graded = e2e.final(tool, learner.json()["token"], sid, proc=server)
        assert (graded["status"], graded["score"]) == ("graded", 3.0)
        e2e.wait_for(
            lambda: any(s["gradingProgress"] == "FullyGraded" for s in edx.log()["scores"]),
            60,
            "the score at Open edX's line item",
            server,
        )
        scores = edx.log()["scores"]
        no_token = httpx.post(
            edx.url + "/lti-ags/1/scores",
            json=scores[-1],
            timeout=30,
            headers={"content-type": "application/vnd.ims.lis.v1.score+json"},
        )
        log = edx.log()
    finally:
        server.kill(signal.SIGTERM)
        if edx is not None:
            edx.stop()
    # the upload's Pending, when the loop sent it before the grade was stored (else it was dropped), went
    # first and passed Open edX's serializer, which also holds each score to be newer than the one it keeps
    *pending, score = scores
    assert [(p["activityProgress"], p["gradingProgress"], "scoreGiven" in p) for p in pending] in (
        [],
        [("Submitted", "Pending", False)],
    )
    assert (score["userId"], score["scoreGiven"], score["gradingProgress"]) == ("edx-learner-1", 3.0, "FullyGraded")
    assert score["validated"]["user_id"] == "edx-learner-1" and score["validated"]["score_given"] == "3.0"
    assert len(log["tokens"]) == 1 and "https://purl.imsglobal.org/spec/lti-ags/scope/score" in log["tokens"][0]
    assert no_token.status_code == 401
    assert [r["status"] for r in log["refused"]] == [400, 400, 403, 401]  # tampered, redirect_uri, role, no token
    assert [m["message_type"] for m in log["launches"]] == ["LtiDeepLinkingRequest", "LtiResourceLinkRequest"]
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["aud"] == edx.url and claims[LTI + "deployment_id"] == DEPLOYMENT


def _tamper(token: str) -> str:
    """The same header and signature over other content items: Open edX must refuse it."""
    import base64
    import json

    head, body, sig = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims[ITEMS][0]["custom"]["exercise_id"] = "ch05.svc_long"
    raw = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return ".".join((head, raw, sig))


def _up(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        time.sleep(0.2)
        return False
