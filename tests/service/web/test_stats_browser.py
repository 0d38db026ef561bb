"""The statistics pages in a real browser (Playwright, Debian's Chromium) at 1280 and 390 px, in English and
Chinese: an instructor reads a course side by side with its learners at risk, opens an exercise, follows a
failed check's link to the attempts that failed it, and confirms a bulk regrade, which then says what it
queued and skipped; axe-core finds no serious or critical violation on any of these pages.

With TITANGRADE_WEB_SCREENSHOTS=<folder>, the English 1280 px run saves the pages for docs/img."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from axe_support import assert_accessible
from browser_support import signed_in
from stats_support import ATTEMPTS, COURSE, EXERCISE, seed

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("module_db_url", ["sqlite"], indirect=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]
SHOTS = os.environ.get("TITANGRADE_WEB_SCREENSHOTS")
WORDS = {
    "en": {"risk": "Learners at risk", "nothing": "nothing submitted", "queued": "3 run(s) queued; 1 skipped."},
    "zh": {"risk": "需要关注的学员", "nothing": "尚未提交任何作业", "queued": "已排队 3 次评分；跳过 1 份。"},
}


@pytest.fixture(scope="module")
def site(live_api):
    rows = seed(live_api.app.state.sessions)
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield {"url": live_api.url, "browser": browser, "sessions": live_api.app.state.sessions, **rows}
        browser.close()


def _runs_as_seeded(site) -> None:
    """Each case starts from the seeded runs: every run finished except s03's, still queued."""
    from sqlalchemy import update

    from service.db import transaction
    from service.queue.models import Job

    queued = {site["ids"][n] for n, row in enumerate(ATTEMPTS) if row[5] is None}
    with transaction(site["sessions"]) as s:
        s.execute(update(Job).where(Job.submission_id.in_(site["ids"])).values(status="done"))
        s.execute(update(Job).where(Job.submission_id.in_(queued)).values(status="queued"))


def _shot(page, name: str, keep: bool) -> None:
    if SHOTS and keep:
        page.screenshot(path=str(Path(SHOTS) / f"web-{name}.png"), full_page=True)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [1280, 390])
def test_an_instructor_reads_the_statistics_and_regrades(site, width, lang):
    _runs_as_seeded(site)
    keep = width == 1280 and lang == "en"
    ctx, page, errors = signed_in(site["browser"], site["url"], site["token"], lang=lang, width=width, height=900)
    words = WORDS[lang]

    page.goto(site["url"] + "/teach")
    page.click(f"#courses a.course-stats[href='/teach/courses/{COURSE}/stats']")
    page.wait_for_url(f"**/teach/courses/{COURSE}/stats")
    assert words["risk"] in page.inner_text("main")
    assert page.locator("#at-risk tbody tr").count() == 6 and words["nothing"] in page.inner_text("#at-risk")
    assert_accessible(page, where=f"course stats {lang} {width}")
    _shot(page, "course-stats", keep)

    page.click(f"#side-by-side a[href^='/teach/exercises/{EXERCISE}']")
    page.wait_for_url(f"**/teach/exercises/{EXERCISE}?course={COURSE}")
    assert page.locator("rect.bar").count() == 10 and page.inner_text("#n-submitted") == "3"
    assert page.locator("#histogram").get_attribute("role") == "img"
    assert page.locator("#histogram").evaluate("s => s.getBoundingClientRect().right") <= width
    assert_accessible(page, where=f"exercise stats {lang} {width}")
    _shot(page, "exercise-stats", keep)

    page.click("tr[data-check='word_value'] a.failures")
    page.wait_for_url("**/failures?check=word_value**")
    assert page.locator("#failures tbody tr[data-submission]").count() == 2
    assert_accessible(page, where=f"failures {lang} {width}")
    page.locator("#failures tbody tr[data-submission] a").first.click()
    page.wait_for_url("**/teach/submissions/*")
    assert page.locator("tr[data-check='word_value'].fail").count() == 1, page.inner_text("main")[:1500]

    page.goto(f"{site['url']}/teach/exercises/{EXERCISE}")
    page.click("#regrade-all")
    page.wait_for_url(f"**/teach/exercises/{EXERCISE}/regrade")
    assert page.locator("#skip-reasons li[data-reason='already_pending']").count() == 1
    assert_accessible(page, where=f"regrade confirm {lang} {width}")
    _shot(page, "regrade-confirm", keep)
    page.click("#confirm-regrade")
    page.wait_for_url("**queued=3**")
    assert page.inner_text("#queued") == words["queued"]
    assert page.locator("#skipped li[data-reason='already_pending']").count() == 1
    assert_accessible(page, where=f"after regrade {lang} {width}")
    assert errors == []
    ctx.close()
