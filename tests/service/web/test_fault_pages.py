"""Grader faults as the learner reads them: the page shows the catalogue's text in the page's language (that it
is not the learner's fault, not a zero, and what to do), never the stored detail with a host's set-up
instructions; the API keeps `message` as stored and names the text's key. Over real HTTP, both databases."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from service.grades import faults
from service.grades.service import record_grade
from service.states import SubmissionStatus
from service.web.i18n import t

SHORTAGE = (
    "no free sandbox user: all 2 are in use (0 by this process, 2 by other titangrade processes on this host); a "
    "host needs one user per grading slot: add users with TITANGRADE_SANDBOX_USERS=N scripts/install-system-deps.sh"
)
OPERATOR = re.compile(r"TITANGRADE_|install-system-deps|\.sh\b|sandbox user")
ENGLISH_SENTENCE = re.compile(r"[A-Za-z]{2,}(?:[ ,;:]+[A-Za-z]{2,}){3,}")  # four English words in a row
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def test_every_stored_fault_text_tells_its_kind():
    assert faults.message_key(SubmissionStatus.NOT_GRADABLE, faults.not_gradable_message(SHORTAGE)) == (
        "fault_not_gradable"
    )
    assert faults.message_key(SubmissionStatus.ERROR, faults.unstorable_message("value too long")) == "fault_unstorable"
    failed = faults.regrade_failed_message(faults.not_gradable_message(SHORTAGE))
    assert faults.message_key(SubmissionStatus.GRADED, failed) == "fault_regrade_failed"
    assert faults.message_key(SubmissionStatus.ERROR, "cell 3 raised ZeroDivisionError") is None  # the engine's
    assert faults.message_key(SubmissionStatus.GRADED, "") is None
    for key in ("fault_not_gradable", "fault_regrade_failed", "fault_unstorable", "fault_requeued"):
        assert not OPERATOR.search(t(key, "en")) and not OPERATOR.search(t(key, "zh"))
    assert "not counted as a zero" in t("fault_not_gradable", "en") and "不会记为零分" in t("fault_not_gradable", "zh")


def _sign_in(url: str, token: str, lang: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30, cookies={"tg_lang": lang})
    page = client.get("/login")
    client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1), "next": "/exercises"})
    return client


def _faulted(live_api, *, graded_first: bool = False) -> str:
    from service.auth.service import get_or_create_identity
    from service.db import transaction
    from service.submissions.models import Submission

    sid = uuid.uuid4().hex
    with transaction(live_api.app.state.sessions) as s:
        who = get_or_create_identity(s, issuer="titangrade", subject="alice")
        s.add(Submission(id=sid, identity_id=who.id, user="alice", course="c1", exercise_id="ch05.svc_sum",
                         attempt=1, notebook=b"{}", status="running", max_score=3.0, message=""))  # fmt: skip
        s.flush()
        if graded_first:
            s.get(Submission, sid).score, s.get(Submission, sid).result = 2.0, {"status": "graded", "checks": []}
        record_grade(s, submission_id=sid, result=None, fault=SHORTAGE)
    return sid


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_not_gradable_page_speaks_the_pages_language_without_set_up_instructions(live_api, lang):
    sid = _faulted(live_api)
    client = _sign_in(live_api.url, live_api.tokens["alice"], lang)
    html = client.get(f"/submissions/{sid}").text
    assert not OPERATOR.search(html), OPERATOR.search(html)
    message = re.search(r'<span id="sub-message" data-key="fault_not_gradable">([^<]*)</span>', html)
    assert message and message.group(1) == t("fault_not_gradable", lang).replace("'", "&#39;")
    main = re.sub(r"<[^>]+>", " ", re.split(r"<main[^>]*>", html)[1].split("</main>")[0])
    if lang == "zh":
        assert not ENGLISH_SENTENCE.search(main), ENGLISH_SENTENCE.search(main)
        assert "无法评分" in main and "不会记为零分" in main
    api = httpx.get(
        f"{live_api.url}/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {live_api.tokens['alice']}"}
    )
    body = api.json()
    assert body["status"] == "not_gradable" and body["message_key"] == "fault_not_gradable"
    assert body["message"] == faults.not_gradable_message(SHORTAGE)  # the API's message keeps its meaning


def test_a_failed_regrade_keeps_the_grade_and_says_so_in_chinese(live_api):
    sid = _faulted(live_api, graded_first=True)
    html = _sign_in(live_api.url, live_api.tokens["alice"], "zh").get(f"/submissions/{sid}").text
    assert 'data-key="fault_regrade_failed"' in html and "之前的成绩保持不变" in html and not OPERATOR.search(html)
    assert '<span id="score">2/3</span>' in html
