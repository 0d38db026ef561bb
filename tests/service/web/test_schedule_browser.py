"""Deadlines in a real browser (Playwright, Debian's Chromium) at 1280 and 390 px, in English and Chinese:
an instructor sets the course's zone and a hard close on the schedule page; a learner sees the due time in
that zone on the exercises page and has an upload refused with the reason; every page passes axe-core."""

from __future__ import annotations

import pytest
from axe_support import assert_accessible
from test_browser import CHROMIUM, Tab

from service.db import utcnow

playwright_api = pytest.importorskip("playwright.sync_api")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("module_db_url", ["sqlite"], indirect=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]
EX = "ch05.svc_sum"
WORDS = {
    "en": {"saved": "Saved.", "due": "Due", "closed": "closed after the due date", "refused": "takes no late work"},
    "zh": {"saved": "已保存。", "due": "截止", "closed": "截止后关闭提交", "refused": "不接受迟交"},
}


@pytest.fixture(scope="module")
def site(live_api, tmp_path_factory, svc):
    notebook = tmp_path_factory.mktemp("nb") / "svc_sum.ipynb"
    notebook.write_bytes(svc.notebook(EX))
    tokens = {"teacher": live_api.tokens["teacher"], "learner": live_api.tokens["alice"]}
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield {"url": live_api.url, "tokens": tokens, "browser": browser, "notebook": notebook}
        browser.close()


def _tab(site, who: str, *, lang: str, width: int) -> Tab:
    tab = Tab(site, who)
    tab.ctx.add_cookies([{"name": "tg_lang", "value": lang, "url": site["url"]}])
    tab.page.set_viewport_size({"width": width, "height": 800})
    return tab


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [1280, 390])
def test_an_instructor_closes_an_exercise_and_a_learner_is_refused(site, width, lang):
    words = WORDS[lang]
    teacher = _tab(site, "teacher", lang=lang, width=width)
    page = teacher.page
    page.goto(site["url"] + "/teach")
    page.click("#courses .schedule-link")
    page.wait_for_url("**/teach/courses/c1/schedule")
    page.fill("#zone", "Asia/Shanghai")
    page.click("#timezone-form button[type=submit]")
    page.wait_for_url("**saved=1")
    row = page.locator(f"tr[data-exercise='{EX}']")
    row.locator("summary").click()
    due_local = (utcnow().replace(second=0, microsecond=0)).strftime("%Y-%m-%dT%H:%M")  # UTC now is 8 h ago there
    row.locator("input[name=due_at]").fill(due_local)
    row.locator("select[name=kind]").select_option("closed")
    row.locator("form button[type=submit]").click()
    page.wait_for_url("**saved=1")
    assert page.inner_text("#saved") == words["saved"]
    row = page.locator(f"tr[data-exercise='{EX}']")
    assert due_local.replace("T", " ") + " +0800" in row.locator(".due").inner_text()
    assert words["closed"] in row.locator(".policy").inner_text()
    assert_accessible(page, where=f"schedule page {lang} {width}px")
    assert teacher.errors == []

    learner = _tab(site, "learner", lang=lang, width=width)
    page = learner.page
    page.goto(site["url"] + "/exercises")
    due = page.locator(f"tr[data-exercise='{EX}'] .due")
    assert words["due"] in due.inner_text() and "(Asia/Shanghai)" in due.inner_text()
    assert_accessible(page, where=f"exercises page {lang} {width}px")
    form_row = page.locator(f"tr[data-exercise='{EX}']")
    form_row.locator("input[type=file]").set_input_files(str(site["notebook"]))
    form_row.locator("button[type=submit]").click()
    page.wait_for_selector("#error")
    refused = page.inner_text("#error")
    assert words["refused"] in refused and "Asia/Shanghai" in refused
    assert_accessible(page, where=f"refused upload {lang} {width}px")
    teacher.ctx.close()
    learner.ctx.close()
