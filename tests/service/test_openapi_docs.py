"""/api/v1/docs serves Swagger UI from the service itself (service/web/static/swagger-ui), under a CSP that
runs only this origin's scripts, and refuses to be framed. Real HTTP, and Debian's Chromium where installed."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

CHROMIUM = Path("/usr/bin/chromium")


def test_the_docs_page_names_only_its_own_assets_and_forbids_framing(live_api):
    page = httpx.get(live_api.url + "/api/v1/docs", timeout=30)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
    refs = [ref for ref in re.findall(r'(?:src|href)="([^"]+)"', page.text) if ref != "data:,"]  # no favicon
    assert refs and all(ref.startswith("/") and not ref.startswith("//") for ref in refs), refs
    assert "<script>" not in page.text  # no inline script: the CSP would refuse it
    for ref in refs:
        asset = httpx.get(live_api.url + ref, timeout=30)
        assert asset.status_code == 200 and len(asset.content) > 100, ref
    bundle = httpx.get(live_api.url + "/static/swagger-ui/swagger-ui-bundle.js", timeout=30)
    assert "SwaggerUIBundle" in bundle.text


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)")
def test_swagger_ui_renders_in_chromium_with_no_request_leaving_the_service(live_api):
    playwright_api = pytest.importorskip("playwright.sync_api")
    requests: list[str] = []
    errors: list[str] = []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("response", lambda r: r.status >= 400 and errors.append(f"{r.status} {r.url}"))
            page.on("console", lambda m: m.type == "error" and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(live_api.url + "/api/v1/docs")
            page.wait_for_selector(".swagger-ui .information-container .title", timeout=30_000)
            page.wait_for_selector(".opblock", timeout=30_000)
            title = page.inner_text(".swagger-ui .information-container .title")
            operations = page.locator(".opblock").count()
        finally:
            browser.close()
    assert title.startswith("titangrade") and operations > 10
    origin = urlsplit(live_api.url).netloc
    assert requests and all(urlsplit(url).netloc == origin for url in requests if not url.startswith("data:")), requests
    assert errors == []  # a refused script or style (CSP) or a failed load would be reported here


def test_no_dead_public_path_under_the_api(live_api):
    """Swagger UI's oauth2-redirect route is not served (the docs use no OAuth), so it is not public either:
    unauthenticated, it is a 401 like any path under /api/v1 (it was a public 404)."""
    from service.app import PUBLIC_PATHS

    resp = httpx.get(live_api.url + "/api/v1/docs/oauth2-redirect", timeout=30)
    assert resp.status_code == 401 and resp.json()["error"]["code"] == "not_authenticated", resp.text
    for path in PUBLIC_PATHS:  # every public path is a route that answers without a token
        answer = httpx.request("POST" if path.endswith("/submissions") else "GET", live_api.url + path, timeout=30)
        assert answer.status_code != 404, (path, answer.text)
        assert answer.status_code != 401 or answer.json()["error"]["code"] != "not_authenticated", (path, answer.text)
