"""The request pages over real HTTP (both databases): a learner asks on their submission page (CSRF, errors
shown on the page in its language), staff find it in the course's list and answer it on the submission page,
the learner reads the answer; nobody else can; an overridden score shows its reason, who and when."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
XSS = "<script>window.__x=1</script>"
RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00"


def _sign_in(url: str, token: str, lang: str = "en") -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30, cookies={"tg_lang": lang})
    page = client.get("/login")
    done = client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1), "next": "/exercises"})
    assert done.status_code == 303
    return client


def _csrf(client: httpx.Client, path: str) -> str:
    return CSRF.search(client.get(path).text).group(1)


def _graded(live_api, user: str = "alice", course: str = "c1") -> str:
    from service.auth.service import get_or_create_identity
    from service.db import transaction
    from service.submissions.models import Submission

    sid = uuid.uuid4().hex
    with transaction(live_api.app.state.sessions) as s:
        who = get_or_create_identity(s, issuer="titangrade", subject=user)
        s.add(Submission(id=sid, identity_id=who.id, user=user, course=course, exercise_id="ch05.svc_sum", attempt=1,
                         notebook=b"{}", status="graded", score=1.0, max_score=3.0, message=""))  # fmt: skip
    return sid


@pytest.fixture(scope="module")
def other_teacher(live_api) -> str:
    from service.auth.service import create_token
    from service.db import transaction

    with transaction(live_api.app.state.sessions) as s:
        return create_token(s, user="tc2", role="instructor", course="c2")


def test_a_learner_asks_on_the_page_and_reads_the_answer(live_api):
    sid = _graded(live_api)
    alice = _sign_in(live_api.url, live_api.tokens["alice"])
    page = f"/submissions/{sid}"
    assert 'id="request-form"' in alice.get(page).text
    form = {"kind": "regrade", "text": f"check 2 {XSS}"}
    assert alice.post(f"{page}/requests", data={**form, "csrf": "x" * 64}).status_code == 403
    empty = alice.post(f"{page}/requests", data={"kind": "regrade", "text": "  ", "csrf": _csrf(alice, page)})
    assert empty.status_code == 422 and 'id="request-error"' in empty.text and "1 to 2000 characters" in empty.text
    made = alice.post(f"{page}/requests", data={**form, "csrf": _csrf(alice, page)})
    assert made.status_code == 303 and made.headers["location"] == f"{page}#requests"
    html = alice.get(page).text
    assert XSS not in html and "check 2 &lt;script&gt;" in html
    assert 'data-status="open"' in html and 'id="request-waiting"' in html and 'id="request-form"' not in html
    assert "/teach/requests/" not in html  # no answer form for the learner
    zh = _sign_in(live_api.url, live_api.tokens["alice"], "zh")
    again = zh.post(f"{page}/requests", data={**form, "csrf": _csrf(zh, page)})
    assert again.status_code == 409 and "已有一个待处理的请求" in again.text

    teacher = _sign_in(live_api.url, live_api.tokens["teacher"])
    teach = teacher.get("/teach").text
    assert 'href="/teach/courses/c1/requests"' in teach and re.search(r"Requests \(\d+ open\)", teach)
    listing = teacher.get("/teach/courses/c1/requests").text
    rid = re.search(rf'href="/teach/submissions/{sid}#request-(\d+)"', listing).group(1)
    assert XSS not in listing
    assert f'data-request="{rid}"' not in teacher.get("/teach/courses/c1/requests?status=answered").text
    assert f'data-request="{rid}"' in teacher.get("/teach/courses/c1/requests?status=bogus&kind=regrade").text
    staff_page = f"/teach/submissions/{sid}"
    assert f'action="/teach/requests/{rid}/answer"' in teacher.get(staff_page).text
    assert teacher.post(f"/teach/requests/{rid}/answer", data={"answer": "x", "csrf": "y" * 64}).status_code == 403
    answered = teacher.post(
        f"/teach/requests/{rid}/answer",
        data={
            "answer": "check 2 is right; see its feedback",
            "next": "//evil.example/",
            "csrf": _csrf(teacher, staff_page),
        },
    )
    assert answered.status_code == 303 and answered.headers["location"] == f"{staff_page}#request-{rid}"
    html = alice.get(page).text
    assert "check 2 is right; see its feedback" in html and re.search(f"answered by teacher at {RFC3339}", html)
    assert 'id="request-form"' in html  # answered: the learner may ask again
    twice = teacher.post(f"/teach/requests/{rid}/answer", data={"answer": "x", "csrf": _csrf(teacher, staff_page)})
    assert twice.status_code == 409 and "only an open request can be answered" in twice.text
    closed = teacher.post(f"/teach/requests/{rid}/close", data={"next": page, "csrf": _csrf(teacher, staff_page)})
    assert closed.status_code == 303 and closed.headers["location"] == f"{page}#request-{rid}"
    assert re.search(f"closed by teacher at {RFC3339}", alice.get(page).text)


def test_nobody_else_reaches_a_request_from_the_pages(live_api, other_teacher):
    sid = _graded(live_api)
    alice = _sign_in(live_api.url, live_api.tokens["alice"])
    page = f"/submissions/{sid}"
    alice.post(f"{page}/requests", data={"kind": "problem", "text": "wrong check", "csrf": _csrf(alice, page)})
    bob = _sign_in(live_api.url, live_api.tokens["bob"])
    bob_csrf = _csrf(bob, "/exercises")
    assert bob.post(f"{page}/requests", data={"kind": "problem", "text": "x", "csrf": bob_csrf}).status_code == 404
    assert bob.get("/teach/courses/c1/requests").status_code == 403
    teacher = _sign_in(live_api.url, live_api.tokens["teacher"])
    rid = re.search(r"#request-(\d+)", teacher.get("/teach/courses/c1/requests?status=open").text).group(1)
    for who in (bob, _sign_in(live_api.url, other_teacher)):
        csrf = _csrf(who, "/exercises")
        assert who.post(f"/teach/requests/{rid}/answer", data={"answer": "no", "csrf": csrf}).status_code == 404
        assert who.post(f"/teach/requests/{rid}/close", data={"csrf": csrf}).status_code == 404
    elsewhere = _sign_in(live_api.url, other_teacher)
    assert elsewhere.get("/teach/courses/c1/requests").status_code == 403
    assert elsewhere.get("/teach/courses/c2/requests").status_code == 200
    staff_ask = teacher.post(f"{page}/requests", data={"kind": "regrade", "text": "x", "csrf": _csrf(teacher, page)})
    assert staff_ask.status_code == 403  # only its learner asks


def test_the_learner_page_shows_who_set_the_score_and_why(live_api):
    sid = _graded(live_api)
    teacher = _sign_in(live_api.url, live_api.tokens["teacher"])
    staff_page = f"/teach/submissions/{sid}"
    done = teacher.post(
        f"{staff_page}/override", data={"score": "2.5", "reason": f"partial {XSS}", "csrf": _csrf(teacher, staff_page)}
    )
    assert done.status_code == 303
    for lang, words in (("en", "set by teacher at "), ("zh", "由 teacher 于 ")):
        html = _sign_in(live_api.url, live_api.tokens["alice"], lang).get(f"/submissions/{sid}").text
        assert '<span id="score">2.5/3</span>' in html and words in html and re.search(RFC3339, html)
        reason = re.search(r'<p id="override-reason">(.*?)</p>', html).group(1)
        assert "partial &lt;script&gt;" in reason and XSS not in html
