"""Errors on page paths, over real HTTP: a browser (Accept: text/html, outside /api/) gets a page in its
language with a way back, never an API error body; the API and clients that do not ask for HTML keep JSON."""

from __future__ import annotations

import re

import httpx
import pytest

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
SUB = "e77" + "0" * 29


@pytest.fixture(scope="module")
def site(live_api, svc):
    from service.auth.service import get_or_create_identity
    from service.db import transaction
    from service.submissions.models import Submission

    with transaction(live_api.app.state.sessions) as s:
        alice = get_or_create_identity(s, issuer="titangrade", subject="alice")
        s.add(Submission(id=SUB, identity_id=alice.id, user="alice", course="c1", exercise_id="ch05.svc_sum",
                         attempt=1, notebook=svc.notebook(), status="graded", score=3.0, max_score=3.0))  # fmt: skip
    return live_api


def browser(site, token: str | None = None, lang: str = "en") -> httpx.Client:
    client = httpx.Client(base_url=site.url, timeout=30, headers=BROWSER, cookies={"tg_lang": lang})
    if token:
        page = client.get("/login")
        client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1), "next": "/exercises"})
        assert "tg_session" in client.cookies
    return client


def is_page(resp: httpx.Response, status: int, lang: str = "en") -> str:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("text/html"), resp.text
    assert f'<html lang="{"zh-CN" if lang == "zh" else "en"}">' in resp.text
    assert '<a href="/exercises" id="back">' in resp.text and '<a class="skip" id="skip" href="#main">' in resp.text
    assert "default-src 'self'" in resp.headers["content-security-policy"]  # the pages' headers, error or not
    return re.search(r'<p class="error" id="message">(.*?)</p>', resp.text, re.S).group(1)


def is_json(resp: httpx.Response, status: int, code: str) -> str:
    assert resp.status_code == status and resp.headers["content-type"] == "application/json", resp.text
    assert resp.json()["error"]["code"] == code
    return resp.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/no/such/page", "/teach/nothing", "/exercises/extra/parts/here", "/static/x.css"])
def test_an_unknown_path_is_a_page_for_a_browser_in_its_language(site, path):
    assert "no page at this address" in is_page(browser(site).get(path), 404)
    assert "此地址没有页面" in is_page(browser(site, lang="zh").get(path), 404, "zh")
    zh_header = httpx.get(site.url + path, headers={**BROWSER, "Accept-Language": "zh-CN,zh;q=0.9"})
    assert "此地址没有页面" in is_page(zh_header, 404, "zh")  # no cookie: the browser's own language
    assert "no such endpoint" in is_json(httpx.get(site.url + path), 404, "not_found")  # curl keeps JSON


def test_the_api_keeps_json_whatever_the_accept_header(site):
    api = httpx.Client(base_url=site.url, headers=BROWSER, timeout=30)
    is_json(api.get("/api/v1/no/such/endpoint", headers={"Authorization": f"Bearer {site.tokens['alice']}"}),
            404, "not_found")  # fmt: skip
    is_json(api.delete("/api/v1/exercises", headers={"Authorization": f"Bearer {site.tokens['alice']}"}),
            405, "method_not_allowed")  # fmt: skip


def test_a_signed_in_error_page_keeps_the_navigation_and_sign_out(site):
    alice = browser(site, site.tokens["alice"], lang="zh")
    resp = alice.get("/no/such/page")
    is_page(resp, 404, "zh")
    assert 'id="sign-out"' in resp.text and 'id="lang-en"' in resp.text and '<nav aria-label="主导航">' in resp.text
    assert "未找到" in resp.text  # the heading
    forbidden = alice.get("/teach")  # a service error (a learner on the staff pages): a page the same way
    assert 'id="sign-out"' in forbidden.text and "无权访问" in is_page(forbidden, 403, "zh") + forbidden.text


def test_a_get_on_a_form_address_goes_to_the_page_it_belongs_to(site):
    """A reload or language switch after a form's answer (GET on a POST-only path) shows the page."""
    teacher = browser(site, site.tokens["teacher"])
    for path, page in (
        (f"/teach/submissions/{SUB}/override", f"/teach/submissions/{SUB}"),
        (f"/teach/submissions/{SUB}/regrade", f"/teach/submissions/{SUB}"),
        ("/logout", "/"),
    ):
        resp = teacher.get(path)
        assert resp.status_code == 303 and resp.headers["location"] == page, (path, resp.text)
        assert teacher.get(path, follow_redirects=True).status_code == 200
    back = teacher.get(f"/lang/zh?next=/teach/submissions/{SUB}/override", follow_redirects=True)
    assert back.status_code == 200 and str(back.url).endswith(f"/teach/submissions/{SUB}") and "分数" in back.text
    assert "POST" in is_json(httpx.get(site.url + "/logout"), 405, "method_not_allowed")  # curl keeps JSON


def test_another_wrong_method_is_a_page_naming_what_the_address_takes(site):
    alice = browser(site, site.tokens["alice"])
    resp = alice.post("/exercises", data={"csrf": "x"})
    assert "it takes GET" in is_page(resp, 405) and resp.headers["allow"] == "GET"
    assert "支持 GET" in is_page(browser(site, lang="zh").put("/login"), 405, "zh")
    assert is_json(httpx.post(site.url + "/exercises"), 405, "method_not_allowed")


def test_a_bad_query_value_is_a_page_naming_the_field(site):
    teacher = browser(site, site.tokens["teacher"])
    long = "x" * 65
    message = is_page(teacher.get(f"/submissions/{SUB}/compare?other={long}"), 422)
    assert "other" in message and "/api/v1/docs" not in message
    assert "other" in is_page(teacher.get(f"/submissions/{SUB}/compare?other={long}"), 422)
    plain = httpx.get(f"{site.url}/submissions/{SUB}/compare?other={long}", cookies=teacher.cookies)
    assert "other" in is_json(plain, 422, "invalid_request")


def test_an_unexpected_error_is_a_page_and_is_logged(site, monkeypatch, caplog):
    from service.web import learner

    def broken(*_a, **_kw):
        raise RuntimeError("a bug")

    monkeypatch.setattr(learner, "_exercise_rows", broken)
    alice = browser(site, site.tokens["alice"])
    assert "RuntimeError" in is_page(alice.get("/exercises"), 500)
    assert "unexpected error on page GET /exercises" in caplog.text
    plain = httpx.get(site.url + "/exercises", cookies=alice.cookies)
    assert is_json(plain, 500, "internal_error")


def test_a_too_large_upload_from_the_form_comes_back_to_the_exercises_page(site):
    from service.middleware import MULTIPART_SLACK

    alice = browser(site, site.tokens["alice"], lang="zh")
    csrf = CSRF.search(alice.get("/exercises").text).group(1)
    big = b"x" * (site.app.state.settings.max_upload_bytes + MULTIPART_SLACK + 1)
    sent = alice.post(
        "/submit", data={"csrf": csrf, "exercise_id": "ch05.svc_sum"}, files={"notebook": ("a.ipynb", big)}
    )
    assert sent.status_code == 303 and sent.headers["location"] == "/exercises?error=too_large"
    shown = alice.get(sent.headers["location"])
    assert shown.status_code == 200 and "文件超过上传大小上限" in shown.text and 'id="error"' in shown.text

    def chunks():  # no Content-Length: the cap counts the stream, and the error is still a page
        yield b'--b\r\nContent-Disposition: form-data; name="notebook"; filename="a.ipynb"\r\n\r\n'
        yield big

    streamed = alice.post("/submit", content=chunks(), headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert "请求体超过" in is_page(streamed, 413, "zh")
    plain = httpx.post(site.url + "/submit", cookies=alice.cookies, files={"notebook": ("a.ipynb", big)})
    assert is_json(plain, 413, "too_large")  # not a browser: the API's answer
