"""Every page, as a learner and as an instructor, in English and Chinese, at 1280 and 390 px, in a real
browser (Playwright, Debian's Chromium): axe-core (the npm package, loaded into the page) finds no critical
or serious violation, a skip link leads to the main content, and on a phone nothing pushes the page wider
than the screen, while sign-out and the language switch stay on it.

PAGES is the one table of pages: a page added elsewhere (schedules, requests, course statistics) is one
more row. One server and one seeding for the module; one signed-in browser context per person, language
and width."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from axe_support import describe, violations

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("module_db_url", ["sqlite"], indirect=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]
FIRST, SECOND = "a11" + "0" * 28 + "1", "a11" + "0" * 28 + "2"  # alice's two attempts at ch05.svc_sum
WIDTHS = {1280: 800, 390: 844}  # width -> height
SHOTS = os.environ.get("TITANGRADE_WEB_SCREENSHOTS")  # a folder: these pages in English as PNG (docs/img)
SHOT_PAGES = {("learner", "exercises"): "exercises", ("instructor", "staff-submission"): "staff-submission"}


@dataclass(frozen=True)
class Page:
    name: str
    who: str  # "learner", "instructor", or "anonymous"
    path: str  # {first} and {second} are alice's two graded attempts
    status: int = 200
    known: tuple[str, ...] = ()  # axe rule ids another change fixes (named in a comment); removed at merge
    then: str = ""  # a step after loading: "reject_upload", "reject_override" or "open_outputs"


PAGES = (
    Page("login", "anonymous", "/login"),
    Page("exercises", "learner", "/exercises"),
    Page("exercises-rejected-upload", "learner", "/exercises", status=422, then="reject_upload"),
    Page("submission", "learner", "/submissions/{second}", then="open_outputs"),
    Page("compare", "learner", "/submissions/{second}/compare?other={first}"),
    Page("not-found", "learner", "/no/such/page", status=404),
    Page("no-such-submission", "learner", "/submissions/nope", status=404),
    Page("forbidden", "learner", "/teach", status=403),
    Page("invalid-query", "learner", "/submissions/{second}/compare?other=" + "x" * 65, status=422),
    Page("not-found-signed-out", "anonymous", "/no/such/page", status=404),
    Page("exercises", "instructor", "/exercises"),
    Page("submission", "instructor", "/submissions/{second}"),
    Page("compare", "instructor", "/submissions/{first}/compare?other={second}"),
    Page("not-found", "instructor", "/teach/nothing/here", status=404),
    Page("teach", "instructor", "/teach"),
    Page("gradebook", "instructor", "/teach/courses/c1/gradebook"),
    Page("invalid-query", "instructor", "/submissions/{first}/compare?other=" + "x" * 65, status=422),
    Page("stats", "instructor", "/teach/exercises/ch05.svc_sum"),
    Page("failures", "instructor", "/teach/exercises/ch05.svc_sum/failures?check=word_value"),
    Page("regrade-confirm", "instructor", "/teach/exercises/ch05.svc_sum/regrade"),
    Page("course-stats", "instructor", "/teach/courses/c1/stats"),
    Page("requests", "instructor", "/teach/courses/c1/requests"),
    Page("schedule", "instructor", "/teach/courses/c1/schedule"),
    Page("queue", "instructor", "/teach/queue"),
    Page("staff-submission", "instructor", "/teach/submissions/{second}"),
    Page("staff-rejected-override", "instructor", "/teach/submissions/{second}", 400, then="reject_override"),
)
IDS = [f"{p.who}-{p.name}" for p in PAGES]


@pytest.fixture(scope="module")
def site(live_api, svc):
    from service.auth.service import get_or_create_identity
    from service.db import transaction
    from service.submissions.models import Submission

    result = {
        "status": "graded",
        "score": 2.0,
        "max_score": 3.0,
        "checks": [
            {"name": "total_value", "score": 2.0, "max_score": 2.0, "passed": True, "feedback": "right"},
            {"name": "word_value", "score": 0.0, "max_score": 1.0, "passed": False, "feedback": "not the word"},
        ],
    }
    with transaction(live_api.app.state.sessions) as s:
        alice = get_or_create_identity(s, issuer="titangrade", subject="alice")
        for n, (sid, nb) in enumerate(((FIRST, svc.notebook()), (SECOND, svc.notebook(wrong_word=True))), 1):
            s.add(Submission(id=sid, identity_id=alice.id, user="alice", course="c1", exercise_id="ch05.svc_sum",
                             attempt=n, notebook=nb, status="graded", score=2.0, max_score=3.0, result=result,
                             grading_s=1.5))  # fmt: skip
        bob = get_or_create_identity(s, issuer="titangrade", subject="bob")  # the same score as alice's: two links
        s.add(Submission(id="b0b" + "0" * 29, identity_id=bob.id, user="bob", course="c1",
                         exercise_id="ch05.svc_sum", attempt=1, notebook=svc.notebook(), status="graded", score=2.0,
                         max_score=3.0, result=result))  # fmt: skip
    tokens = {"learner": live_api.tokens["alice"], "instructor": live_api.tokens["teacher"]}
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        contexts: dict = {}
        yield {"url": live_api.url, "tokens": tokens, "browser": browser, "contexts": contexts}
        for ctx in contexts.values():
            ctx.close()
        browser.close()


def tab(site, who: str, lang: str, width: int):
    """A page in a context signed in as `who` (once per person, language and width)."""
    key = (who, lang, width)
    if key not in site["contexts"]:
        ctx = site["browser"].new_context(viewport={"width": width, "height": WIDTHS[width]})
        ctx.add_cookies([{"name": "tg_lang", "value": lang, "url": site["url"]}])
        page = ctx.new_page()
        if who != "anonymous":
            page.goto(site["url"] + "/login")
            page.fill("#token", site["tokens"][who])
            page.click("#sign-in")
            page.wait_for_url("**/exercises")
        site["contexts"][key] = ctx
    return site["contexts"][key].pages[0]


def reject_upload(page, tmp_path: Path) -> int:
    bad = tmp_path / "not-a-notebook.ipynb"
    bad.write_text("this is not JSON")
    row = page.locator("tr[data-exercise='ch05.svc_sum']")
    row.locator("input[type=file]").set_input_files(str(bad))
    with page.expect_response("**/submit") as answer:
        row.locator("button[type=submit]").click()
    page.wait_for_selector("#error")
    return answer.value.status


TOO_WIDE = """w => [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > w)
  .slice(-5).map(e => `${e.tagName}#${e.id}.${e.className} ${e.getBoundingClientRect().right}`)"""


def reject_override(page, tmp_path: Path) -> int:
    page.fill("#new-score", "lots")
    page.fill("#reason", "a score that is not a number")
    with page.expect_response("**/override") as answer:
        page.click("#override")
    page.wait_for_selector("#error")
    return answer.value.status


OFF_SCREEN = """w => [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea')]
  .filter(e => e.getClientRects().length && !e.closest('.scroll, .matrix'))  // shown, not in a sideways box
  .filter(e => { const r = e.getBoundingClientRect(); return r.left < 0 || r.right > w; })
  .map(e => `${e.tagName}#${e.id} ${e.textContent.trim().slice(0, 30)}`)"""


def check_phone_width(page, width: int, who: str) -> None:
    """Nothing is wider than the screen (wide tables scroll inside their own box); the language switch
    and sign-out are on the screen without scrolling sideways."""
    wide = page.evaluate("() => document.scrollingElement.scrollWidth")
    assert wide <= width, f"the page is {wide} px wide at {width} px: {page.evaluate(TOO_WIDE, width)}"
    assert page.evaluate(OFF_SCREEN, width) == []  # every control (upload forms too) reachable on the screen
    controls = ["#lang-en", "#lang-zh"] + ([] if who == "anonymous" else ["#sign-out"])
    for control in controls:
        el = page.locator(control)
        assert el.is_visible(), control
        box = el.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (control, box)


HEADINGS = "() => [...document.querySelectorAll('h1, h2, h3, h4, h5, h6')].map(h => +h.tagName[1])"
LINKS = """() => [...document.querySelectorAll('a[href]')].map(a => {
  const text = e => e ? (e.getAttribute('aria-label') || e.textContent).replace(/\\s+/g, ' ').trim() : '';
  const td = a.closest('td');  // a link in a data table is named in the context of its row and column headers
  const row = td && td.parentElement.querySelector('th[scope=row]');
  const head = td && td.closest('table').tHead;
  const col = head && head.rows[0].cells[td.cellIndex];
  return [[text(row), text(col), text(a)].filter(Boolean).join(' / '), a.getAttribute('href')];
})"""


def check_structure(page) -> None:
    """One h1, headings that never skip a level, and one name for one destination: two links with the same
    name go to the same place (a "Download" link says what it downloads; in a data table, the link with
    its row and column headers, as a screen reader announces it: WCAG 2.4.4's programmatic context)."""
    levels = page.evaluate(HEADINGS)
    assert levels[:1] == [1] and levels.count(1) == 1, levels
    assert all(b <= a + 1 for a, b in itertools.pairwise(levels)), levels
    targets: dict[str, set[str]] = {}
    for name, href in page.evaluate(LINKS):
        targets.setdefault(name, set()).add(href)
    assert {n: h for n, h in targets.items() if len(h) > 1} == {}


def check_skip_link(page) -> None:
    """The first Tab lands on the skip link, which is then visible and leads to <main>."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Tab")
    focused = page.evaluate("() => [document.activeElement.id, document.activeElement.getAttribute('href')]")
    assert focused == ["skip", "#main"], focused
    assert page.locator("#skip").is_visible() and page.locator("main#main").count() == 1
    assert page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle") != "none"


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", sorted(WIDTHS))
@pytest.mark.parametrize("spec", PAGES, ids=IDS)
def test_every_page_is_accessible_and_fits_a_phone(site, spec: Page, width: int, lang: str, tmp_path):
    page = tab(site, spec.who, lang, width)
    answer = page.goto(site["url"] + spec.path.format(first=FIRST, second=SECOND))
    status = answer.status if answer else 0
    if spec.then in ("reject_upload", "reject_override"):
        status = (reject_upload if spec.then == "reject_upload" else reject_override)(page, tmp_path)
    elif spec.then == "open_outputs":
        for summary in page.locator("details summary").all():
            summary.click()
    assert status == spec.status, page.url
    assert page.locator("html").get_attribute("lang") == ("zh-CN" if lang == "zh" else "en")
    assert page.evaluate("() => document.contentType") == "text/html"
    check_structure(page)
    found = violations(page)
    assert {v["id"] for v in found} <= set(spec.known), describe(found)
    check_skip_link(page)
    if width == 390:
        check_phone_width(page, width, spec.who)
    shot = SHOT_PAGES.get((spec.who, spec.name))
    if SHOTS and shot and lang == "en":
        page.evaluate("() => document.activeElement.blur()")
        page.screenshot(path=str(Path(SHOTS) / f"web-{shot}-{width}.png"), full_page=width == 390)


@pytest.mark.parametrize("width", sorted(WIDTHS))
def test_after_a_rejected_form_the_language_switch_and_a_reload_show_pages(site, width, tmp_path):
    """The page a rejected form answered with sits at the form's POST address: switching the language
    there, or reloading, shows the page again (in the new language), never an API error body."""
    for who, reject, lands_on in (
        ("learner", reject_upload, "/exercises"),
        ("instructor", reject_override, f"/teach/submissions/{SECOND}"),
    ):
        ctx = site["browser"].new_context(viewport={"width": width, "height": WIDTHS[width]})
        page = ctx.new_page()
        page.goto(site["url"] + "/login")
        page.fill("#token", site["tokens"][who])
        page.click("#sign-in")
        page.wait_for_url("**/exercises")
        page.goto(site["url"] + lands_on)
        reject(page, tmp_path)
        page.click("#lang-zh")
        page.wait_for_selector("html[lang='zh-CN']", state="attached")
        assert page.url == site["url"] + lands_on and page.evaluate("() => document.contentType") == "text/html"
        assert "退出" in page.inner_text("#sign-out")
        reloaded = page.reload()
        assert reloaded is not None and reloaded.status == 200 and page.url == site["url"] + lands_on
        assert "does not take" not in page.content() and page.locator("#lang-en").is_visible()
        ctx.close()
