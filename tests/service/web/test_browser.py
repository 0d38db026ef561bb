"""The web pages in a real browser: Playwright driving Debian's Chromium (headless) against one real
`titangrade serve` (uvicorn + a local worker) over the real catalogue, SQLite, real kernels."""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path

import axe_support
import pytest

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[3]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("module_db_url", ["sqlite"], indirect=True),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]
SHOTS = os.environ.get("TITANGRADE_WEB_SCREENSHOTS")  # a folder: save the main pages as PNG (docs/img)
XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


@pytest.fixture(scope="module")
def site(module_db_url, tmp_path_factory, e2e):
    from service.auth.service import create_token
    from service.db import transaction

    log = tmp_path_factory.mktemp("web") / "server.log"
    server = e2e.Server(e2e.service_env(module_db_url, REPO, TITANGRADE_SUBMISSIONS_PER_MINUTE="1000"), log, workers=1)
    sessions = e2e.sessions_for(module_db_url)
    with transaction(sessions) as s:
        tokens = {
            "learner": create_token(s, user="lena", role="learner", course="c1"),
            "hostile": create_token(s, user="mal" + XSS, role="learner", course="c1"),
            "teacher": create_token(s, user="tess", role="instructor", course="c1"),
        }
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield {"url": server.url, "tokens": tokens, "sessions": sessions, "browser": browser, "server": server}
        browser.close()
    server.kill(signal.SIGTERM)
    sessions.kw["bind"].dispose()


class Tab:
    """A browser context (its own cookies) with every console error and page error collected."""

    def __init__(self, site, who: str) -> None:
        self.ctx = site["browser"].new_context(accept_downloads=True)
        self.page = self.ctx.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.url = site["url"]
        self.page.goto(self.url + "/exercises")  # redirected to the sign-in page
        assert "/login" in self.page.url
        self.page.fill("#token", site["tokens"][who])
        self.page.click("#sign-in")
        self.page.wait_for_url("**/exercises")

    def upload(self, exercise_id: str, path: Path):
        self.page.goto(self.url + "/exercises")
        row = self.page.locator(f"tr[data-exercise='{exercise_id}']")
        row.locator("input[type=file]").set_input_files(str(path))
        row.locator("button[type=submit]").click()
        self.page.wait_for_url("**/submissions/*")
        return self.page.url.rsplit("/", 1)[1]

    def graded(self, timeout_s: float = 90) -> str:
        """Waits for the live page to reload with the final status (the SSE `done` reloads it)."""
        self.page.wait_for_selector("#status", timeout=5000)
        self.page.wait_for_selector(
            "#status:not(:has-text('queued')):not(:has-text('running'))"
            ":not(:has-text('排队中')):not(:has-text('运行中'))",
            timeout=timeout_s * 1000,
        )
        self.page.wait_for_selector("#checks, #sub-message", timeout=timeout_s * 1000)
        return self.page.inner_text("#score")

    def close(self) -> list[str]:
        self.ctx.close()
        return self.errors


def shot(page, name: str) -> None:
    if SHOTS:
        page.set_viewport_size({"width": 1100, "height": 760})
        page.screenshot(path=str(Path(SHOTS) / f"web-{name}.png"), full_page=True)


def _mistake() -> Path:
    return REPO / "tests" / "fixtures" / "notebooks" / "ch07.wordle_reward" / "mistake_first_guess.ipynb"


def test_learner_solution_mistake_both_languages_then_override(site, tmp_path):
    learner = Tab(site, "learner")
    page = learner.page
    progress: list[str] = []  # every text the live line showed (SSE events, before the page reloads)
    page.expose_function("noteProgress", lambda text: progress.append(text))
    page.add_init_script("""document.addEventListener('DOMContentLoaded', () => {
        const t = document.getElementById('progress-text'); if (!t) return;
        new MutationObserver(records => records.forEach(r => r.addedNodes.forEach(
            n => window.noteProgress(n.textContent)))).observe(t, {childList: true}); });""")
    sid = learner.upload("ch07.wordle_reward", REPO / "reference" / "ch07.wordle_reward" / "solution.ipynb")
    assert learner.graded() == "10/10"
    assert page.locator("tr.fail").count() == 0 and page.locator("tr.pass").count() == 6
    # The mistake, in English: which check failed and why.
    learner.upload("ch07.wordle_reward", _mistake())
    learner.graded()
    shot(page, "submission-mistake-en")
    failed = page.locator("tr.fail")
    assert failed.count() >= 1
    failed_names = [failed.nth(i).get_attribute("data-check") for i in range(failed.count())]
    assert "failed" in failed.first.inner_text() and failed.first.locator(".feedback").inner_text().strip()
    # Switch to Chinese: labels and check titles in Chinese; a new attempt gets Chinese feedback.
    page.click("#lang-zh")
    page.wait_for_selector("html[lang='zh-CN']", state="attached")
    assert "未通过" in page.locator("tr.fail").first.inner_text()
    page.goto(site["url"] + "/exercises")
    mistake_zh = learner.upload("ch07.wordle_reward", _mistake())
    learner.graded()
    zh_fail = page.locator("tr.fail").first
    assert "未通过" in zh_fail.inner_text() and zh_fail.get_attribute("data-check") in failed_names
    assert any("\u4e00" <= ch <= "\u9fff" for ch in zh_fail.locator(".feedback").inner_text())
    shot(page, "submission-mistake-zh")
    page.click("#lang-en")
    # The exercises page shows the best score and the attempts.
    page.goto(site["url"] + "/exercises")
    shot(page, "exercises")
    row = page.locator("tr[data-exercise='ch07.wordle_reward']")
    with page.expect_download() as download:
        row.locator("a[download]").click()
    template = json.loads(Path(download.value.path()).read_text())
    assert download.value.suggested_filename == "wordle_reward.ipynb" and template["cells"]
    assert row.locator(".best").inner_text() == "10 / 10" and row.locator(".attempts").inner_text() == "3"
    # The instructor sees all of it in the gradebook (latest = the Chinese mistake), overrides it with a reason.
    teacher = Tab(site, "teacher")
    tp = teacher.page
    tp.goto(site["url"] + "/teach/courses/c1/gradebook?policy=best")
    shot(tp, "gradebook")
    best = tp.locator("td[data-user='lena'][data-exercise='ch07.wordle_reward'] .score")
    assert best.inner_text() == "10/10"
    tp.click("#policy-latest")
    latest = tp.locator("td[data-user='lena'][data-exercise='ch07.wordle_reward'] .score")
    assert latest.inner_text() != "10/10"
    latest.locator("a").click()
    tp.wait_for_url(f"**/teach/submissions/{mistake_zh}")
    tp.fill("#new-score", "9.5")
    tp.fill("#reason", "tags parsing accepted after review")
    tp.click("#override")
    tp.wait_for_selector("#history")
    shot(tp, "override")
    assert "tags parsing accepted after review" in tp.inner_text("#history")
    # The learner's page shows the new score.
    page.goto(f"{site['url']}/submissions/{mistake_zh}")
    assert page.inner_text("#score") == "9.5/10" and page.locator("#overridden").count() == 1
    # A form without the session's CSRF token is refused, and nothing changed.
    refused = tp.request.post(
        f"{site['url']}/teach/submissions/{mistake_zh}/override", form={"score": "0", "reason": "forged request"}
    )
    assert refused.status == 403
    page.reload()
    assert page.inner_text("#score") == "9.5/10"
    # The live line went queued -> running cell i of n -> checks on the first submission's page.
    cells = [p for p in progress if p.startswith("running cell ")]
    assert progress[0] == "queued" and cells and cells[-1].endswith(f" of {cells[-1].split()[-1]}"), progress
    assert "running the checks" in progress and progress.index("running the checks") > progress.index(cells[-1])
    assert sid and learner.close() == [] and teacher.close() == []


def test_stats_queue_and_training_plot(site):
    from service.db import transaction
    from service.submissions.models import Submission

    band = json.loads((REPO / "reference" / "traces" / "cpu-tiny" / "band.json").read_text())["metrics"]
    trace = []
    for step in (1, 2, 3):
        rec = {"step": step}
        for metric in ("actor/pg_loss", "critic/score/mean", "actor/kl_loss", "actor/grad_norm"):
            lo, hi = band[metric][str(step)]["lo"], band[metric][str(step)]["hi"]
            rec[metric] = (lo + hi) / 2 if step < 3 or metric != "actor/grad_norm" else hi + 1.0
        trace.append(rec)
    with transaction(site["sessions"]) as s:
        from sqlalchemy import select

        from service.auth.models import Identity

        lena = s.scalar(select(Identity).where(Identity.subject == "lena"))
        sid = uuid.uuid4().hex
        s.add(
            Submission(
                id=sid,
                identity_id=lena.id,
                user="lena",
                course="c1",
                exercise_id="ch07.three_step_training",
                lang="en",
                attempt=1,
                run=1,
                notebook=b"{}",
                status="graded",
                score=6.0,
                max_score=8.0,
                message="",
                grading_s=21.0,
                result={
                    "status": "graded",
                    "score": 6.0,
                    "max_score": 8.0,
                    "profile": "cpu-tiny",
                    "trace": trace,
                    "checks": [
                        {
                            "name": "trace_band",
                            "score": 0.0,
                            "max_score": 2.0,
                            "passed": False,
                            "feedback": "grad norm leaves the band",
                        }
                    ],
                },
            )
        )
    learner = Tab(site, "learner")
    page = learner.page
    page.goto(f"{site['url']}/submissions/{sid}")
    shot(page, "training-plot")
    plot = page.locator("figure.plot[data-metric='actor/grad_norm']")
    assert plot.locator("circle.point").count() == 3 and plot.locator("polygon.band").count() == 1
    assert plot.locator("circle.point.out").count() == 1  # step 3 left the band
    assert plot.locator("path.marker-out").count() == 1  # marked by shape too, not by colour alone
    assert plot.locator("svg[role='img']").get_attribute("aria-labelledby")  # named; its numbers in a table
    assert plot.locator("table tbody tr").count() == 3
    axe_support.assert_accessible(page, where="training plot")
    assert page.locator("figure.plot").count() == 4
    assert "values" not in page.content() or "-0.0380431" not in page.content()  # per-seed values never sent
    teacher = Tab(site, "teacher")
    tp = teacher.page
    tp.goto(site["url"] + "/teach/exercises/ch07.wordle_reward")
    shot(tp, "statistics")
    counts = [int(tp.locator("rect.bar").nth(i).get_attribute("data-count")) for i in range(10)]
    assert sum(counts) >= 1 and counts[9] >= 1 and int(tp.inner_text("#n-subs")) >= 3  # one bar entry a learner
    assert "public_cases" in tp.inner_text("#pass-rates") and tp.inner_text("#median").endswith("s")
    tp.goto(site["url"] + "/teach/queue")
    shot(tp, "queue")
    assert "short" in tp.inner_text("#depth") or "none" in tp.inner_text("#depth")
    assert tp.locator("#workers tbody tr").count() >= 1
    csv_resp = tp.request.get(site["url"] + "/teach/courses/c1/gradebook.csv")
    assert csv_resp.status == 200 and "ch07.wordle_reward" in csv_resp.text()
    denied = page.request.get(site["url"] + "/teach/courses/c1/gradebook")  # a learner's session
    assert denied.status == 403
    assert learner.close() == [] and teacher.close() == []


def test_script_payloads_are_shown_as_text_never_run(site, tmp_path):
    nb = json.loads((REPO / "reference" / "ch07.wordle_reward" / "solution.ipynb").read_text())
    nb["metadata"]["title"] = XSS
    nb["metadata"]["kernelspec"]["display_name"] = XSS
    nb["cells"].append(
        {
            "cell_type": "code",
            "metadata": {"name": XSS},
            "execution_count": None,
            "outputs": [],
            "source": f"print({XSS!r})\ndef feedback(guess, answer):\n    return {XSS!r}\n",
        }
    )
    path = tmp_path / "x<script>.ipynb"
    path.write_text(json.dumps(nb))
    hostile = Tab(site, "hostile")
    page = hostile.page
    hostile.upload("ch07.wordle_reward", path)
    hostile.graded()
    assert XSS.split("<img")[0] in page.inner_text("#who")  # the user name, as text
    assert "<script>window.__xss=1</script>" in page.inner_text("#checks")  # feedback echoing the value
    teacher = Tab(site, "teacher")
    for tab, url, shown in (
        (hostile, page.url, True),
        (teacher, site["url"] + "/teach/courses/c1/gradebook", True),
        (teacher, page.url.replace("/submissions/", "/teach/submissions/"), True),
        (teacher, site["url"] + "/teach/exercises/ch07.wordle_reward", False),
    ):
        tab.page.goto(url)
        assert tab.page.evaluate("() => window.__xss") is None
        assert tab.page.locator("main script, main img").count() == 0
        assert ("mal<script>window.__xss=1</script>" in tab.page.inner_text("main")) is shown
    assert hostile.close() == [] and teacher.close() == []


def test_the_submitted_notebook_is_shown_downloaded_and_compared(site, tmp_path):
    from service.auth.service import create_token
    from service.db import transaction

    with transaction(site["sessions"]) as s:
        site["tokens"]["nora"] = create_token(s, user="nora", role="learner", course="c1")
    nb = json.loads((REPO / "reference" / "ch07.wordle_reward" / "solution.ipynb").read_text())
    nb["cells"].insert(0, {"cell_type": "markdown", "id": "xss-md", "metadata": {}, "source": "# " + XSS})
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [
        {"output_type": "display_data", "metadata": {}, "data": {"text/html": XSS, "text/plain": "<Rich>"}},
        {"output_type": "stream", "name": "stdout", "text": "Z" * 100_000},
    ]
    first_path, second_path = tmp_path / "first.ipynb", tmp_path / "second.ipynb"
    first_path.write_text(json.dumps(nb, indent=3) + "\n\n")  # not how nbformat writes it
    nb["cells"][-1]["source"] += "\n# second try"
    second_path.write_text(json.dumps(nb))
    learner = Tab(site, "nora")
    page = learner.page
    first = learner.upload("ch07.wordle_reward", first_path)
    learner.graded()
    section = page.locator("#notebook")
    assert section.is_visible() and page.evaluate("() => window.__xss") is None
    assert XSS in section.locator("[data-cell-type=markdown] .nb-source").first.inner_text()  # as text
    assert section.locator("script, img").count() == 0
    assert section.locator("[data-cell-type=code][data-report=ok]").count() == 3  # the grader's report per cell
    if SHOTS:  # the notebook section alone: the page above it is in web-submission-mistake-en.png
        page.set_viewport_size({"width": 1100, "height": 760})
        section.screenshot(path=str(Path(SHOTS) / "web-submission-notebook.png"))
    graded = section.locator(".nb-graded")  # what the grader's run printed, beside each report
    assert graded.count() == 3 and graded.first.locator("h4").inner_text() == "Output when graded"
    assert section.locator(".nb-graded[data-recorded=no]").count() == 0
    from axe_support import assert_accessible

    assert_accessible(page, where="the submission page with its notebook")
    section.locator(".nb-outputs summary").first.click()
    assert "<Rich>" in section.locator(".nb-outputs .nb-output").first.inner_text()
    assert section.locator(".nb-outputs .nb-omitted").count() == 0 and "Z" * 4001 not in section.inner_text()
    with page.expect_download() as download:
        page.click("#nb-download")
    assert Path(download.value.path()).read_bytes() == first_path.read_bytes()
    assert download.value.suggested_filename == "ch07.wordle_reward-attempt1.ipynb"
    learner.upload("ch07.wordle_reward", second_path)
    learner.graded()
    page.select_option("#nb-other", first)
    page.click("#nb-compare")
    page.wait_for_selector("#nb-summary")
    assert "1 changed, 0 added, 0 removed" in page.inner_text("#nb-summary")
    changed = page.locator("[data-change=changed]")
    assert changed.count() == 1 and "+ # second try" in changed.locator("ins").inner_text()
    shot(page, "compare")
    teacher = Tab(site, "teacher")  # staff see the section on their page too
    teacher.page.goto(f"{site['url']}/teach/submissions/{first}")
    assert teacher.page.locator("#notebook [data-cell-type=code]").count() == 3
    assert teacher.page.evaluate("() => window.__xss") is None
    assert learner.close() == [] and teacher.close() == []
