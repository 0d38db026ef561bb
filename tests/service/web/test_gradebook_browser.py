"""The gradebook page in a real browser (Playwright, Debian's Chromium) at 1280 and 390 px, in English and
Chinese: an instructor sorts on an exercise column and on the total, both ways, searches and filters by
exercise and status, and pages; on a phone the matrix scrolls inside itself while the filters stay in view."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import signed_in

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("module_db_url", ["sqlite"], indirect=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]
COURSE = "gbb"
URL = f"/teach/courses/{COURSE}/gradebook"
WORDS = {
    "en": {"learner": "Learner", "missing": "missing", "count": "Learners 1-50 of 60"},
    "zh": {"learner": "学员", "missing": "未提交", "count": "第 1-50 名学员，共 60 名"},
}


@pytest.fixture(scope="module")
def site(live_api):
    from service.auth.service import create_token, get_or_create_identity, set_membership
    from service.db import transaction
    from service.submissions.models import Submission

    scores = {"p05": ("ch05.svc_sum", 3.0), "p12": ("ch05.svc_sum", 2.0), "p33": ("ch05.svc_long", 1.0)}
    with transaction(live_api.app.state.sessions) as s:
        token = create_token(s, user="gbb_tess", role="instructor", course=COURSE)
        for n in range(60):
            who = get_or_create_identity(s, issuer="titangrade", subject=f"p{n:02d}")
            set_membership(s, identity=who, course=COURSE, role="learner")
            if who.subject in scores:
                exercise_id, score = scores[who.subject]
                s.add(Submission(id=f"gbb{n:029d}", identity_id=who.id, user=who.name, course=COURSE,
                                 exercise_id=exercise_id, attempt=1, notebook=b"{}", status="graded", score=score,
                                 max_score=3.0))  # fmt: skip
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield {"url": live_api.url, "token": token, "browser": browser}
        browser.close()


def _rows(page) -> list[str]:
    return page.locator("#gradebook tbody tr").evaluate_all("rows => rows.map(r => r.dataset.user)")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [1280, 390])
def test_sort_filter_and_page_in_the_browser(site, width, lang):
    ctx, page, errors = signed_in(site["browser"], site["url"], site["token"], lang=lang, width=width, height=800)
    page.goto(site["url"] + URL)
    words = WORDS[lang]
    assert page.locator("html").get_attribute("lang") == ("zh-CN" if lang == "zh" else "en")
    assert page.inner_text("#sort-user").startswith(words["learner"]) and words["count"] in page.inner_text("#count")
    assert _rows(page) == [f"p{n:02d}" for n in range(50)]
    assert words["missing"] in page.locator("td[data-user='p00'][data-exercise='ch05.svc_sum']").inner_text()

    page.click("[id='sort-ch05.svc_sum']")  # ascending: no score first
    page.wait_for_url("**sort=ch05.svc_sum**")
    assert _rows(page)[-1] != "p05"
    page.click("[id='sort-ch05.svc_sum']")  # again: descending
    page.wait_for_url("**dir=desc**")
    assert _rows(page)[:3] == ["p05", "p12", "p00"]
    assert page.locator("th[aria-sort='descending'] [id='sort-ch05.svc_sum']").count() == 1
    page.click("#sort-total")
    page.wait_for_url("**sort=total**")
    page.click("#sort-total")
    page.wait_for_url("**sort=total&dir=desc**")
    assert _rows(page)[:3] == ["p05", "p12", "p33"]

    page.fill("#q", "p3")
    page.select_option("#filter-status", "graded")
    page.click("#apply")
    page.wait_for_url("**q=p3**")
    assert _rows(page) == ["p33"]
    page.fill("#q", "")
    page.select_option("#filter-exercise", "ch05.svc_sum")
    page.select_option("#filter-status", "missing")
    page.click("#apply")
    page.wait_for_url("**status=missing**")
    first = _rows(page)
    assert first[0] == "p33" and len(first) == 50  # the sort (total, descending) holds through the filter
    assert page.locator("[data-exercise='ch05.svc_long']").count() == 0  # only the chosen column
    page.click("#next")
    page.wait_for_url("**page=2**")
    rest = _rows(page)  # 58 missing it: p05 and p12 handed it in
    assert len(rest) == 8 and not {"p05", "p12"} & {*first, *rest} and len({*first, *rest}) == 58

    if width == 390:  # the filters fit the phone; the wide matrix scrolls inside its own box
        for control in ("#q", "#apply", "#filter-status"):
            box = page.locator(control).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, control
        page.click("#clear")
        page.wait_for_url(f"**{URL}?policy=best")
        assert page.locator(".matrix").evaluate("m => m.scrollWidth > m.clientWidth")
        assert page.locator(".matrix").evaluate("m => getComputedStyle(m).overflowX") == "auto"
    assert errors == []
    ctx.close()
