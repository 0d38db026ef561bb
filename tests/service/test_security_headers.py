"""Every HTML answer carries the pages' security headers (CSP, framing, nosniff, Referrer-Policy), not only
those made by service/web/core.py:render: /lti/ pages and error pages, any route's HTMLResponse, and a 500
(the headers are added outside Starlette's error middleware). Every answer gets nosniff."""
from __future__ import annotations

import pytest
from fastapi.responses import HTMLResponse

HTML = {"Accept": "text/html"}


@pytest.fixture
def client(db_url, test_catalogue, svc, tmp_path):
    from fastapi.testclient import TestClient

    from service.app import create_app

    app = create_app(svc.settings(db_url, lti_key_dir=tmp_path / "keys"), catalogue=test_catalogue)

    @app.get("/probe/page")
    def page() -> HTMLResponse:
        return HTMLResponse("<p>a page made without render()</p>")

    @app.get("/probe/own-csp")
    def own_csp() -> HTMLResponse:
        return HTMLResponse("<p>framed by one origin</p>",
                            headers={"Content-Security-Policy": "frame-ancestors https://lms.example"})

    @app.get("/probe/boom")
    def boom() -> HTMLResponse:
        raise RuntimeError("a bug")

    with TestClient(app, raise_server_exceptions=False) as c:
        yield c
    app.state.engine.dispose()


def _page_headers_ok(resp) -> None:
    from service.middleware import PAGE_CSP

    assert resp.headers["content-security-policy"] == PAGE_CSP
    assert "frame-ancestors 'none'" in PAGE_CSP and "script-src 'self'" in PAGE_CSP
    assert resp.headers["x-frame-options"] == "DENY"
    assert resp.headers["x-content-type-options"] == "nosniff"
    assert resp.headers["referrer-policy"] == "same-origin"


def test_any_html_answer_gets_the_page_headers(client):
    resp = client.get("/probe/page")
    assert resp.status_code == 200
    _page_headers_ok(resp)


@pytest.mark.parametrize("method, path, status", [
    ("POST", "/lti/launch", 400),  # an LTI error shown as a page to a browser
    ("GET", "/lti/enter", 400),
    ("GET", "/lti/enter?ticket=forged~00", 400),
    ("GET", "/login", 200),
])
def test_lti_and_error_pages_get_the_page_headers(client, method, path, status):
    resp = client.request(method, path, headers=HTML, follow_redirects=False)
    assert resp.status_code == status and resp.headers["content-type"].startswith("text/html"), resp.text
    _page_headers_ok(resp)


def test_a_route_with_its_own_csp_keeps_it_and_decides_its_framing(client):
    resp = client.get("/probe/own-csp")
    assert resp.headers["content-security-policy"] == "frame-ancestors https://lms.example"
    assert "x-frame-options" not in resp.headers and resp.headers["x-content-type-options"] == "nosniff"


def test_json_answers_and_a_500_get_nosniff(client):
    boom = client.get("/probe/boom")
    assert boom.status_code == 500 and boom.json()["error"]["code"] == "internal_error"
    assert boom.headers["x-content-type-options"] == "nosniff"
    missing = client.get("/api/v1/nothing-here", headers={"Authorization": "Bearer x"})
    assert missing.status_code in (401, 404) and missing.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" not in missing.headers
