"""The deep-link answer page in a real browser (Debian's Chromium, headless, through Playwright): under its
own strict CSP (only its inline auto-submit script, by hash; form-action the platform's origin) it still
posts the signed LtiDeepLinkingResponse to the platform harness, with no CSP violation. The HTTP tests
cannot see this: they do not run the page's script."""
from __future__ import annotations

from pathlib import Path

import pytest
from lti_support import INSTRUCTOR

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]

SUBMIT = """([url, pick]) => {
  const form = document.createElement('form');
  form.method = 'post';
  form.action = url;
  for (const [name, value] of [['pick_token', pick], ['exercise_id', 'ch05.svc_sum']]) {
    const input = document.createElement('input');
    input.name = name;
    input.value = value;
    form.appendChild(input);
  }
  document.body.appendChild(form);
  form.submit();
}"""


def test_the_deep_link_page_auto_posts_to_the_platform_under_its_csp(lti):
    resp = lti.browser.launch(sub="t-chromium", roles=[INSTRUCTOR], message_type="LtiDeepLinkingRequest")
    assert resp.status_code == 200, resp.text
    pick, cookie = resp.json()["pick_token"], lti.browser.client.cookies.get("tg_lti_browser")
    assert cookie
    before = len(lti.platform.log()["deep_links"])
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            context = browser.new_context()
            context.add_cookies([{"name": "tg_lti_browser", "value": cookie, "domain": "127.0.0.1", "path": "/lti"}])
            page = context.new_page()
            errors: list[str] = []  # CSP violations are console errors; 404s are reported by URL below
            page.on("console", lambda m: m.type == "error" and "Failed to load resource" not in m.text
                    and errors.append(m.text))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("response", lambda r: r.status >= 400 and not r.url.endswith("/favicon.ico")
                    and errors.append(f"{r.status} {r.url}"))
            page.goto(lti.url + "/lti/config")  # a page of the tool's origin to post the instructor's pick from
            page.evaluate(SUBMIT, [lti.url + "/lti/deep-link", pick])
            page.wait_for_url(lti.platform.url + "/deeplink/return", timeout=20_000)
            assert '"id"' in page.content()  # the platform verified the signed response and answered
        finally:
            browser.close()
    assert len(lti.platform.log()["deep_links"]) == before + 1
    assert errors == [], errors
