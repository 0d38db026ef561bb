"""A browser's LTI launch (Accept: text/html) ends signed in on the web pages: the launch answers 303 to a
one-time ticket URL (no cookie on the cross-site POST), the ticket sets the SameSite=Lax session cookie and
lands on the exercise (learners) or the gradebook / exercise stats (instructors). Real app under uvicorn,
the platform harness in its own process, SQLite and PostgreSQL."""

from __future__ import annotations

import re
import time

import httpx
from lti_support import INSTRUCTOR, LEARNER

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
HTML = {"Accept": "text/html,application/xhtml+xml"}


def _browser_launch(lti, client: httpx.Client, **hint) -> httpx.Response:
    form = lti.browser.authorize(lti.browser.login(client=client, **hint))
    return client.post("/lti/launch", data={"id_token": form["id_token"], "state": form["state"]})


def test_a_learner_launch_lands_signed_in_on_the_exercise_and_can_upload(lti, svc, add_submission):
    client = httpx.Client(base_url=lti.url, headers=HTML, timeout=30)
    resp = _browser_launch(
        lti, client, sub="s-web", roles=[LEARNER], context="course-W", exercise_id="ch05.svc_sum", name="Web Learner"
    )
    assert resp.status_code == 303, resp.text
    assert "set-cookie" not in resp.headers  # nothing is set on the cross-site POST
    ticket_url = resp.headers["location"]
    assert ticket_url.startswith("/lti/enter?ticket=")

    framed = httpx.get(lti.url + ticket_url, headers={"Sec-Fetch-Dest": "iframe"}, timeout=30)
    assert framed.status_code == 200 and 'target="_blank"' in framed.text and "set-cookie" not in framed.headers

    entered = client.get(ticket_url)
    assert entered.status_code == 303 and entered.headers["location"] == "/exercises#ex-ch05.svc_sum"
    cookie = entered.headers["set-cookie"].lower()
    assert cookie.startswith("tg_session=") and "httponly" in cookie and "samesite=lax" in cookie

    page = client.get("/exercises")
    assert page.status_code == 200 and 'id="ex-ch05.svc_sum"' in page.text and "Web Learner" in page.text
    files = {"notebook": ("nb.ipynb", svc.notebook(), "application/x-ipynb+json")}
    made = client.post(
        "/submit", data={"exercise_id": "ch05.svc_sum", "csrf": CSRF.search(page.text).group(1)}, files=files
    )
    assert made.status_code == 303 and made.headers["location"].startswith("/submissions/"), made.text
    mine = client.get(made.headers["location"])
    assert mine.status_code == 200

    from service.auth.models import Identity
    from service.db import transaction
    from service.submissions.models import Submission

    with lti.app.state.sessions() as s:
        sub = s.get(Submission, made.headers["location"].rsplit("/", 1)[1])
        ident = s.get(Identity, sub.identity_id)
        assert (ident.issuer, ident.subject, sub.course) == (
            lti.platform.url,
            "s-web",
            f"lti{lti.platform_id}-course-W",
        )
    with transaction(lti.app.state.sessions) as s:
        other = add_submission(s, user="bob-web", course="c1")[0].id
    assert client.get(f"/submissions/{other}").status_code == 404  # another course's work stays hidden
    assert client.get("/teach/courses/c1/gradebook").status_code in (403, 404)

    again = client.get(ticket_url)  # the ticket is spent, even in the browser that launched
    assert again.status_code == 400 and "set-cookie" not in again.headers
    assert "already used" in again.text


def test_an_instructor_launch_lands_on_the_gradebook_or_the_exercise_stats(lti):
    client = httpx.Client(base_url=lti.url, headers=HTML, timeout=30, follow_redirects=True)
    book = _browser_launch(lti, client, sub="t-web", roles=[INSTRUCTOR], context="course-W")
    assert book.status_code == 200 and book.url.path == f"/teach/courses/lti{lti.platform_id}-course-W/gradebook"
    fresh = httpx.Client(base_url=lti.url, headers=HTML, timeout=30, follow_redirects=True)
    stats = _browser_launch(lti, fresh, sub="t-web", roles=[INSTRUCTOR], context="course-W", exercise_id="ch05.svc_sum")
    assert stats.status_code == 200 and stats.url.path == "/teach/exercises/ch05.svc_sum", stats.text


def test_a_bad_id_token_or_a_forged_ticket_sets_no_cookie(lti, counts):
    client = httpx.Client(base_url=lti.url, headers=HTML, timeout=30)
    login = lti.browser.login(sub="mallory", client=client)
    now = int(time.time())
    claims = {
        "iss": lti.platform.url,
        "aud": "someone-else",
        "sub": "mallory",
        "nonce": login["nonce"],
        "iat": now,
        "exp": now + 300,
        LTI + "message_type": "LtiResourceLinkRequest",
        LTI + "version": "1.3.0",
        LTI + "roles": [LEARNER],
        LTI + "context": {"id": "course-W"},
    }
    before = counts()
    bad = client.post("/lti/launch", data={"id_token": lti.platform.sign(claims), "state": login["state"]})
    assert bad.status_code == 400 and "set-cookie" not in bad.headers and "location" not in bad.headers
    assert bad.headers["content-type"].startswith("text/html") and "client id" in bad.text  # a page for a browser
    assert counts() == before and "tg_session" not in client.cookies
    for ticket in ("", "abc~def", "eyJrIjoiZW50ZXIteCJ9~" + "0" * 64):
        forged = client.get("/lti/enter", params={"ticket": ticket})
        assert forged.status_code == 400 and "set-cookie" not in forged.headers, forged.text
    assert client.get("/exercises").headers["location"].startswith("/login")
