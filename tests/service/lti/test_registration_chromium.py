"""The dynamic-registration answer in a real browser (Debian's Chromium, headless, through Playwright): framed
by the LMS's page (the platform harness's origin, which the page's frame-ancestors allows), its inline
script runs under its own CSP (by hash) and posts {subject: "org.imsglobal.lti.close"} to the LMS window,
as the spec asks; an error page shows its message in the same frame and posts nothing. The page passes
axe-core. The HTTP tests cannot see this: they do not run the page's script or enforce its CSP."""
from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from axe_support import assert_accessible

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]


def test_the_registration_page_posts_the_close_message_to_the_lms_frame(lti):
    good = lti.url + "/lti/register?" + urlencode({"openid_configuration": lti.platform.openid_configuration_url(),
                                                    "registration_token": lti.platform.registration_token()})
    bad = lti.url + "/lti/register?" + urlencode(
        {"openid_configuration": lti.platform.openid_configuration_url("wrong-issuer")})
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("console", lambda m: m.type == "error" and "Failed to load resource" not in m.text
                    and errors.append(m.text))
            page.goto(lti.platform.url + "/_lms_frame?src=" + quote(good, safe=""))
            page.wait_for_function("() => window.received.length > 0", timeout=20_000)
            received = page.evaluate("() => window.received")
            assert received == [{"origin": lti.url, "data": {"subject": "org.imsglobal.lti.close"}}]
            frame = page.frames[1]
            assert "titangrade is registered" in frame.content()
            assert errors == [], errors  # no CSP violation: the script ran by its hash, the frame was allowed

            page.goto(lti.platform.url + "/_lms_frame?src=" + quote(bad, safe=""))
            page.wait_for_load_state("load")
            assert "lti_registration_issuer_mismatch" in page.frames[1].content()
            page.wait_for_timeout(500)
            assert page.evaluate("() => window.received") == []

            alone = browser.new_page()
            alone.goto(bad)
            assert_accessible(alone)
        finally:
            browser.close()
