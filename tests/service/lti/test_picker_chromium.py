"""The content picker in a real browser (Debian's Chromium, headless, through Playwright), inside an iframe
of an LMS page on another origin (the platform harness): the whole deep-linking flow runs in the frame
(login -> the platform's auto-posting form -> the picker -> the auto-posting answer), an instructor picks
two exercises, and the platform receives both as resource links; the picker passes axe-core; a page
outside /lti/ (/exercises) refuses to be framed there. An unbound graded link in the frame: the learner
sees the message, the instructor the bind picker (axe-checked), and after the binding the learner's launch
goes on to the sign-in hand-off. HTTP tests cannot see framing or the pages' CSP."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from lti_support import CLIENT_ID, DEPLOYMENT, INSTRUCTOR, LEARNER

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))  # axe_support lives with the page tests
from axe_support import assert_accessible

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]


def _framed(lti, src: str) -> str:
    return lti.platform.url + "/_frame?" + urlencode({"src": src})


def _login_url(lti, sub: str = "t-chromium-picker", **hint) -> str:
    return lti.url + "/lti/login?" + urlencode({
        "iss": lti.platform.url, "login_hint": sub, "target_link_uri": lti.url + "/lti/launch",
        "client_id": CLIENT_ID, "lti_deployment_id": DEPLOYMENT, "lti_message_hint": json.dumps(hint)})


def _wait_for(check, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    return None


def test_an_instructor_picks_two_exercises_in_the_lms_frame(lti):
    before = len(lti.platform.log()["deep_links"])
    hint = {"roles": [INSTRUCTOR], "message_type": "LtiDeepLinkingRequest", "accept_multiple": True,
            "accept_presentation_document_targets": ["iframe", "window"], "autopost": True, "dl_data": "dl-chromium"}
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_context().new_page()
            messages: list[str] = []
            page.on("console", lambda m: messages.append(m.text))
            page.goto(_framed(lti, _login_url(lti, **hint)))
            frame_ = page.frame_locator("#lms")
            frame_.locator("#picker").wait_for(timeout=20_000)  # framing allowed: the platform's origin
            frame = next(f for f in page.frames if f.url.startswith(lti.url + "/lti/launch"))
            assert frame.locator("h1").inner_text() == "Add titangrade exercises"
            assert_accessible(frame, where="the picker in the LMS frame")
            frame.check('input[name="exercise_id"][value="ch05.svc_sum"]')
            frame.check('input[name="exercise_id"][value="ch05.svc_long"]')
            frame.fill('input[name="points.ch05.svc_long"]', "7.5")
            frame.select_option("#target", "iframe")
            frame.click("#add")
            got = _wait_for(lambda: len(lti.platform.log()["deep_links"]) > before)
            assert got, messages
            refused = [m for m in messages if "Refused" in m or "Content Security Policy" in m]
            assert refused == [], refused

            other = browser.new_context().new_page()
            blocked: list[str] = []
            other.on("console", lambda m: blocked.append(m.text))
            other.goto(_framed(lti, lti.url + "/exercises"))
            assert _wait_for(lambda: any("frame-ancestors" in m or "X-Frame-Options" in m for m in blocked)), blocked
            framed = other.frames[1]
            assert "titangrade" not in framed.content()  # the browser refused to show it in the LMS's frame
        finally:
            browser.close()
    answer = lti.platform.log()["deep_links"][-1]
    items = answer[ITEMS]
    assert [i["custom"]["exercise_id"] for i in items] == ["ch05.svc_long", "ch05.svc_sum"] or [
        i["custom"]["exercise_id"] for i in items] == ["ch05.svc_sum", "ch05.svc_long"]
    points = {i["custom"]["exercise_id"]: i["lineItem"]["scoreMaximum"] for i in items}
    assert points["ch05.svc_long"] == 7.5 and all("iframe" in i for i in items)
    assert not lti.platform.log()["refused"], lti.platform.log()["refused"]


def test_unbound_links_in_the_lms_frame_bind_picker_for_the_instructor_message_for_the_learner(lti):
    link = {"context": "course-CB", "resource_link": "rl-chromium", "lineitem": "li-chromium", "autopost": True}
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            learner = browser.new_context().new_page()
            learner.goto(_framed(lti, _login_url(lti, "s-chromium", roles=[LEARNER], **link)))
            message = learner.frame_locator("#lms").locator("#message")
            message.wait_for(timeout=20_000)  # the refusal is shown inside the LMS frame, not "refused to connect"
            assert "ask your instructor" in message.inner_text()
            assert_accessible(next(f for f in learner.frames if f.url.startswith(lti.url)), where="unbound message")

            page = browser.new_context().new_page()
            page.goto(_framed(lti, _login_url(lti, roles=[INSTRUCTOR], **link)))
            picker = page.frame_locator("#lms")
            picker.locator("#picker").wait_for(timeout=20_000)
            frame = next(f for f in page.frames if f.url.startswith(lti.url + "/lti/launch"))
            assert frame.locator("h1").inner_text() == "Choose the exercise of this link"
            assert_accessible(frame, where="the bind picker in the LMS frame")
            frame.check('input[name="exercise_id"][value="ch05.svc_long"]')
            frame.click("#add")
            # bound; the sign-in continues in a new tab (the pages refuse framing): the framed hand-off link
            picker.locator('a[target="_blank"]').wait_for(timeout=20_000)

            again = browser.new_context().new_page()
            again.goto(_framed(lti, _login_url(lti, "s-chromium", roles=[LEARNER], **link)))
            again.frame_locator("#lms").locator('a[target="_blank"]').wait_for(timeout=20_000)  # now it resolves
        finally:
            browser.close()


def test_without_the_tools_cookies_the_framed_picker_is_bound_through_the_platforms_storage(lti):
    """A browser that keeps no cookie of the tool's frame (simulated: the cookies are cleared when the login
    goes on to the platform, so the launch and the pick carry none): the login stores the binding in the
    platform's storage (postMessage), the launch reads it back, and the pick still works; on a platform page
    whose storage holds nothing for the login, the launch goes no further."""
    before = len(lti.platform.log()["deep_links"])
    hint = {"roles": [INSTRUCTOR], "message_type": "LtiDeepLinkingRequest", "autopost": True, "storage": "_parent",
            "dl_data": "dl-storage"}
    url = _login_url(lti, "t-storage", **hint) + "&lti_storage_target=_parent"
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            context = browser.new_context()

            def forget_cookies(route):  # as a browser that keeps no cookie of the tool's frame would
                context.clear_cookies()
                route.continue_()

            context.route(lti.platform.url + "/auth?*", forget_cookies)  # after the login, before the launch
            page = context.new_page()
            seen: list[str] = []
            page.on("console", lambda m: seen.append(m.text))
            page.on("response", lambda r: seen.append(f"{r.status} {r.request.method} {r.url[:80]}"))
            page.goto(_framed(lti, url))
            frame_ = page.frame_locator("#lms")
            try:
                frame_.locator("#picker").wait_for(timeout=20_000)
            except playwright_api.TimeoutError as exc:
                raise AssertionError("\n".join(seen + [f.url + " " + f.content()[:1500] for f in page.frames])) from exc
            frame_.locator('input[name="exercise_id"][value="ch05.svc_sum"]').check()
            frame_.locator("#add").click()
            got = _wait_for(lambda: len(lti.platform.log()["deep_links"]) > before)
            assert got, "\n".join(seen)
            assert context.cookies(lti.url) == []  # it was the platform's storage, not a cookie
            launches = [m for m in seen if m.startswith("200 POST " + lti.url + "/lti/launch")]
            assert len(launches) == 2, seen  # the cookie-less first leg, then the launch with the stored value

            elsewhere = context.new_page()  # a page of a platform whose storage holds nothing for this login
            elsewhere.goto(_framed(lti, _login_url(lti, "t-storage", **hint) + "&lti_storage_target=_parent")
                           + "&nostore=1")
            elsewhere.frame_locator("#lms").locator("#tg-none").wait_for(timeout=20_000)
            assert elsewhere.frame_locator("#lms").locator("#picker").count() == 0
        finally:
            browser.close()
