"""The pages over real HTTP without a browser: sessions, cookie flags, CSRF, permissions, redirects."""

from __future__ import annotations

import re

import httpx
import pytest

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def sign_in(url: str, token: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    page = client.get("/login")
    resp = client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1), "next": "/exercises"})
    assert resp.status_code == 303 and resp.headers["location"] == "/exercises", resp.text
    return client


def csrf_of(client: httpx.Client, path: str = "/exercises") -> str:
    return CSRF.search(client.get(path).text).group(1)


def test_sign_in_sets_an_httponly_samesite_session_and_checks_the_login_form(live_api):
    client = httpx.Client(base_url=live_api.url, timeout=30)
    assert client.get("/exercises").headers["location"] == "/login?next=/exercises"
    page = client.get("/login")
    assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
    forged = client.post("/login", data={"token": live_api.tokens["alice"], "csrf": "guess"})
    assert forged.status_code == 303 and "error=bad_form" in forged.headers["location"]
    csrf = CSRF.search(page.text).group(1)
    wrong = client.post("/login", data={"token": "tg_nope", "csrf": csrf})
    assert "error=bad_token" in wrong.headers["location"]
    ok = client.post("/login", data={"token": live_api.tokens["alice"], "csrf": csrf, "next": "//evil.example/x"})
    assert ok.status_code == 303 and ok.headers["location"] == "/exercises"  # no open redirect
    cookie = next(h for h in ok.headers.get_list("set-cookie") if h.startswith("tg_session="))
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and live_api.tokens["alice"] not in cookie
    listing = client.get("/exercises")
    assert listing.status_code == 200 and "ch05.svc_sum" in listing.text and ">alice<" in listing.text


def test_a_tampered_cookie_or_a_revoked_token_ends_the_session(live_api):
    from service.auth.models import Token
    from service.auth.service import create_token, hash_token
    from service.db import transaction

    with transaction(live_api.app.state.sessions) as s:
        token = create_token(s, user="dora", role="learner", course="c1")
    client = sign_in(live_api.url, token)
    assert client.get("/exercises").status_code == 200
    good = client.cookies["tg_session"]
    client.cookies.set("tg_session", good.replace(".", ".9", 1))
    assert client.get("/exercises").status_code == 303
    client.cookies.set("tg_session", good)
    with transaction(live_api.app.state.sessions) as s:
        from sqlalchemy import select

        s.scalar(select(Token).where(Token.token_hash == hash_token(token))).revoked_at = __import__(
            "service.db", fromlist=["utcnow"]
        ).utcnow()
    assert client.get("/exercises").headers["location"].startswith("/login")


def test_every_form_needs_the_session_csrf_token(live_api, svc):
    teacher = sign_in(live_api.url, live_api.tokens["teacher"])
    alice = sign_in(live_api.url, live_api.tokens["alice"])
    files = {"notebook": ("nb.ipynb", svc.notebook(), "application/x-ipynb+json")}
    assert alice.post("/submit", data={"exercise_id": "ch05.svc_sum"}, files=files).status_code == 403
    made = alice.post("/submit", data={"exercise_id": "ch05.svc_sum", "csrf": csrf_of(alice)}, files=files)
    assert made.status_code == 303 and made.headers["location"].startswith("/submissions/")
    sid = made.headers["location"].rsplit("/", 1)[1]
    page = alice.get(f"/submissions/{sid}")
    assert page.status_code == 200 and 'data-events="/submissions/' in page.text
    for path, data in (
        (f"/teach/submissions/{sid}/override", {"score": "1", "reason": "forged"}),
        (f"/teach/submissions/{sid}/regrade", {}),
        ("/teach/exercises/ch05.svc_sum/regrade", {}),
        ("/logout", {}),
    ):
        refused = teacher.post(path, data={**data, "csrf": "x" * 64})
        assert refused.status_code == 403 and "reload the page" in refused.text, path
    # alice's token does not work as the teacher's CSRF token (it is bound to each session)
    assert (
        teacher.post(
            f"/teach/submissions/{sid}/override", data={"score": "1", "reason": "forged", "csrf": csrf_of(alice)}
        ).status_code
        == 403
    )
    teacher_csrf = csrf_of(teacher, f"/teach/submissions/{sid}")
    bad = teacher.post(
        f"/teach/submissions/{sid}/override", data={"score": "ten", "reason": "typo", "csrf": teacher_csrf}
    )
    assert bad.status_code == 400 and "must be a number" in bad.text
    done = teacher.post(
        f"/teach/submissions/{sid}/override", data={"score": "2", "reason": "reviewed", "csrf": teacher_csrf}
    )
    assert done.status_code == 303
    assert "reviewed" in teacher.get(f"/teach/submissions/{sid}").text
    assert teacher.post("/logout", data={"csrf": teacher_csrf}).headers["location"] == "/login"


def test_pages_apply_the_api_permissions(live_api, svc):
    alice = sign_in(live_api.url, live_api.tokens["alice"])
    bob = sign_in(live_api.url, live_api.tokens["bob"])
    carol = sign_in(live_api.url, live_api.tokens["carol"])
    files = {"notebook": ("nb.ipynb", svc.notebook(), "application/x-ipynb+json")}
    sid = (
        bob.post("/submit", data={"exercise_id": "ch05.svc_sum", "csrf": csrf_of(bob)}, files=files)
        .headers["location"]
        .rsplit("/", 1)[1]
    )
    other = alice.get(f"/submissions/{sid}")
    assert other.status_code == 404 and other.headers["content-type"].startswith("text/html")
    assert alice.get(f"/submissions/{sid}/events").status_code == 404
    for path in (
        "/teach",
        "/teach/courses/c1/gradebook",
        "/teach/courses/c1/gradebook.csv",
        "/teach/queue",
        "/teach/exercises/ch05.svc_sum",
    ):
        assert alice.get(path).status_code == 403, path
    assert alice.get(f"/teach/submissions/{sid}").status_code == 404  # someone else's: as if missing
    teacher = sign_in(live_api.url, live_api.tokens["teacher"])
    assert teacher.get("/teach/courses/c2/gradebook").status_code == 403  # not their course
    assert carol.get(f"/submissions/{sid}").status_code == 404
    junk = alice.post(
        "/submit",
        data={"exercise_id": "ch05.svc_sum", "csrf": csrf_of(alice)},
        files={"notebook": ("nb.ipynb", b"not json", "application/x-ipynb+json")},
    )
    assert junk.status_code in (400, 422) and 'id="error"' in junk.text
    assert alice.get("/exercises/ch05.svc_sum/notebook").json()["cells"]


def test_language_switch_and_the_web_session_hook(live_api):
    from service.web import sessions

    alice = sign_in(live_api.url, live_api.tokens["alice"])
    switched = alice.get("/lang/zh", params={"next": "https://evil.example/"})
    assert switched.headers["location"] == "/exercises"
    assert "练习" in alice.get("/exercises").text
    # The hook LTI calls: a session for an identity, limited to the launch's course.
    secret = live_api.app.state.settings.secret_key
    with live_api.app.state.sessions() as s:
        from sqlalchemy import select

        from service.auth.models import Identity

        teacher = s.scalar(select(Identity).where(Identity.subject == "teacher"))
        cookie = sessions.create_web_session(secret=secret, identity_id=teacher.id, scope="c2")
        ws = sessions.read_web_session(secret=secret, cookie=cookie)
        principal = sessions.principal_for_session(s, ws=ws)
        assert principal.scope == "c2" and principal.memberships == {} and not principal.is_staff
        assert sessions.read_web_session(secret="another secret" * 3, cookie=cookie) is None
        expired = sessions.create_web_session(secret=secret, identity_id=teacher.id, ttl_s=-1)
        assert sessions.read_web_session(secret=secret, cookie=expired) is None


@pytest.mark.parametrize("cookie", ["", "x", "1.2.3~abc", "~", "a" * 2000])
def test_malformed_cookies_are_no_session(cookie):
    from service.web import sessions

    assert sessions.read_web_session(secret="s" * 40, cookie=cookie) is None


def test_a_learner_in_two_courses_chooses_the_course_on_upload(live_api, svc):
    from service.auth.service import create_token, get_or_create_identity, set_membership
    from service.db import transaction

    with transaction(live_api.app.state.sessions) as s:
        token = create_token(s, user="eve", role="learner", course="c1")
        set_membership(
            s, identity=get_or_create_identity(s, issuer="titangrade", subject="eve"), course="c2", role="learner"
        )
        from sqlalchemy import select

        from service.auth.models import Token
        from service.auth.service import hash_token

        s.scalar(select(Token).where(Token.token_hash == hash_token(token))).course = None  # all memberships
    eve = sign_in(live_api.url, token)
    page = eve.get("/exercises").text
    assert '<option value="c2">' in page
    files = {"notebook": ("nb.ipynb", svc.notebook(), "application/x-ipynb+json")}
    made = eve.post("/submit", data={"exercise_id": "ch05.svc_sum", "course": "c2", "csrf": csrf_of(eve)}, files=files)
    assert made.status_code == 303
    sid = made.headers["location"].rsplit("/", 1)[1]
    with live_api.app.state.sessions() as s:
        from service.submissions.models import Submission

        assert s.get(Submission, sid).course == "c2"
    wrong = eve.post("/submit", data={"exercise_id": "ch05.svc_sum", "course": "c9", "csrf": csrf_of(eve)}, files=files)
    assert wrong.status_code == 403 and "not enrolled" in wrong.text
