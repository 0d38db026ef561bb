"""A regrade request in a real browser (Playwright, Debian's Chromium) on test_browser.py's real server: the
learner asks on their submission page, the instructor finds it from the teach page, answers it on the
submission page, and the learner reads the answer; in English and Chinese, at 1280 and 390 px, each page
checked by axe-core."""

from __future__ import annotations

import uuid

import pytest
from axe_support import assert_accessible
from test_browser import CHROMIUM, Tab, site  # noqa: F401  (site: the module's real server and browser)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("module_db_url", ["sqlite"], indirect=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]
WORDS = {
    "en": {"waiting": "Your request is open", "open": "open", "answered": "answered by tess"},
    "zh": {"waiting": "你的请求正在等待教师答复", "open": "待处理", "answered": "tess 于"},
}


def _graded(server) -> str:
    """A graded attempt of lena's (what the grading itself shows is test_browser.py's business). Its upload is no
    notebook, so the page's notebook view is one line: axe-core here judges the request forms and thread."""
    from sqlalchemy import select

    from service.auth.models import Identity
    from service.db import transaction
    from service.submissions.models import Submission

    sid = uuid.uuid4().hex
    with transaction(server["sessions"]) as s:
        lena = s.scalar(select(Identity).where(Identity.subject == "lena"))
        s.add(Submission(id=sid, identity_id=lena.id, user="lena", course="c1", exercise_id="ch07.wordle_reward",
                         lang="en", attempt=1, notebook=b"{}", status="graded", score=7.0, max_score=10.0,
                         result={"status": "graded", "checks": []}, message=""))  # fmt: skip
    return sid


def _open(server, who: str, *, lang: str, width: int) -> Tab:
    tab = Tab(server, who)
    tab.page.set_viewport_size({"width": width, "height": 900})
    tab.ctx.add_cookies([{"name": "tg_lang", "value": lang, "url": server["url"]}])
    return tab


def _fits(page, selector: str) -> bool:
    return page.eval_on_selector(selector, "el => el.getBoundingClientRect().right <= window.innerWidth + 1")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [1280, 390])
def test_a_learner_asks_for_a_regrade_and_the_instructor_answers(site, lang, width):  # noqa: F811
    sid = _graded(site)
    words = WORDS[lang]
    learner = _open(site, "learner", lang=lang, width=width)
    page = learner.page
    page.goto(f"{site['url']}/submissions/{sid}")
    assert page.locator("html").get_attribute("lang") == ("zh-CN" if lang == "zh" else "en")
    assert_accessible(page, where=f"learner's submission page ({lang}, {width} px)")
    assert _fits(page, "#request-form")
    page.check("#kind-regrade")
    page.fill("#request-text", f"check 3 should pass ({lang}, {width})")
    page.click("#request-send")
    page.wait_for_selector("#request-waiting")
    assert words["waiting"] in page.inner_text("#request-waiting")
    assert words["open"] in page.inner_text("article.request[data-status='open'] .req-status")
    assert_accessible(page, where="the learner's page with an open request")

    teacher = _open(site, "teacher", lang=lang, width=width)
    tp = teacher.page
    tp.goto(site["url"] + "/teach")
    tp.click("#requests-c1")
    tp.wait_for_url("**/teach/courses/c1/requests")
    assert_accessible(tp, where=f"the course's requests ({lang}, {width} px)")
    row = tp.locator("#requests-list tbody tr").first  # open first: the newest open one is this learner's only
    assert row.get_attribute("data-status") == "open" and f"({lang}, {width})" in row.inner_text()
    row.locator("a").click()
    tp.wait_for_url(f"**/teach/submissions/{sid}#request-*")
    assert_accessible(tp, where=f"the staff submission page ({lang}, {width} px)")
    answer = tp.locator("article.request[data-status='open'] textarea")
    assert _fits(tp, "article.request[data-status='open'] textarea")
    answer.fill(f"re-checked: check 3 fails on the empty guess ({lang})")
    tp.locator("article.request[data-status='open'] button[type=submit]").first.click()
    tp.wait_for_selector(f"#requests article.request[data-status='answered'] >> text=({lang})")

    page.reload()
    answered = page.locator("article.request[data-status='answered']")
    assert f"re-checked: check 3 fails on the empty guess ({lang})" in answered.inner_text()
    assert words["answered"] in answered.inner_text()
    assert page.locator("#request-form").count() == 1  # answered: the learner may ask again
    assert_accessible(page, where="the learner's page with the answer")
    assert learner.close() == [] and teacher.close() == []
