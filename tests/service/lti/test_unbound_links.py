"""A link without a custom exercise_id (issue 28, item 2) over real HTTP against the platform harness, SQLite
and PostgreSQL: the exercise comes from the resource link bound at an earlier launch or from the line
item's resourceId (read from the platform with a lineitem.readonly token); an instructor launching an
unbound graded link gets the bind picker, a learner a clear message and nothing stored; grades of a
resolved link reach the platform, and the AGS client assertion names the deployment (item 7)."""
from __future__ import annotations

import re

import httpx
import pytest
from lti_support import DEPLOYMENT, INSTRUCTOR, LEARNER
from test_ags import _grade

HTML = {"Accept": "text/html,application/xhtml+xml"}
SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
READ = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"


@pytest.fixture
def deliverer(lti):
    from service.wiring import build_deliverer

    d = build_deliverer(lti.app.state.settings, sessions=lti.app.state.sessions)
    yield d
    d.pool.shutdown(wait=True)


def _binding(lti, link: str) -> tuple[str, str] | None:
    from sqlalchemy import select

    from service.lti.models import LtiResourceLink
    with lti.app.state.sessions() as s:
        row = s.scalar(select(LtiResourceLink).where(LtiResourceLink.resource_link_id == link))
        return (row.exercise_id, row.bound_by) if row is not None else None


def test_a_learner_on_an_unbound_graded_link_gets_a_clear_message_and_nothing_is_stored(lti, counts):
    before = counts()
    resp = lti.browser.launch(sub="s-unbound", roles=[LEARNER], context="course-U", resource_link="rl-u1",
                              lineitem="li-u1")
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "lti_unbound_link", resp.text
    assert "ask your instructor" in resp.json()["error"]["message"]
    assert counts() == before
    form = lti.browser.authorize(lti.browser.login(sub="s-unbound", roles=[LEARNER], context="course-U",
                                                   resource_link="rl-u1", lineitem="li-u1"))
    page = lti.browser.client.post(lti.url + "/lti/launch", data=form, headers={**HTML, "Accept-Language": "zh"})
    assert page.status_code == 409 and page.headers["content-type"].startswith("text/html")
    assert "请让教师打开一次该链接" in page.text and "tg_session" not in page.headers.get("set-cookie", "")
    assert f"frame-ancestors {lti.platform.url}" in page.headers["content-security-policy"]  # shown in the LMS frame
    assert counts() == before


def test_a_link_without_a_line_item_is_a_course_launch_as_before(lti):
    resp = lti.browser.launch(sub="s-nav", roles=[LEARNER], context="course-U", resource_link="rl-nav")
    assert resp.status_code == 200 and resp.json()["exercise_id"] is None, resp.text


def test_an_instructor_binds_an_unbound_link_and_the_learners_grade_goes_back(lti, svc, deliverer):
    from service.outbox.delivery import wait_until_idle

    hint = {"context": "course-B", "resource_link": "rl-b1", "lineitem": "li-b1"}
    offered = lti.browser.launch(sub="t-bind", roles=[INSTRUCTOR], **hint)
    assert offered.status_code == 200, offered.text
    body = offered.json()
    assert body["unbound"] is True and body["respond"] == "/lti/bind" and "token" not in body
    assert _binding(lti, "rl-b1") is None
    stolen = httpx.post(lti.url + "/lti/bind", data={"bind_token": body["bind_token"], "exercise_id": "ch05.svc_sum"},
                        timeout=30)  # another browser (no binding cookie)
    assert stolen.status_code == 400 and stolen.json()["error"]["code"] == "lti_wrong_browser"
    bound = lti.browser.client.post(lti.url + "/lti/bind",
                                    data={"bind_token": body["bind_token"], "exercise_id": "ch05.svc_sum"})
    assert bound.status_code == 200, bound.text
    assert bound.json()["exercise_id"] == "ch05.svc_sum" and bound.json()["role"] == "instructor"
    assert _binding(lti, "rl-b1") == ("ch05.svc_sum", "instructor")
    again = lti.browser.client.post(lti.url + "/lti/bind",
                                    data={"bind_token": body["bind_token"], "exercise_id": "ch05.svc_long"})
    assert again.status_code == 400 and again.json()["error"]["code"] == "lti_pick_invalid"  # single use

    learner = lti.browser.launch(sub="s-bound", roles=[LEARNER], **hint)
    assert learner.status_code == 200 and learner.json()["exercise_id"] == "ch05.svc_sum", learner.text
    up = httpx.post(lti.url + "/api/v1/submissions", files={"notebook": ("nb.ipynb", svc.notebook())},
                    data={"exercise_id": "ch05.svc_sum"}, headers=svc.auth(learner.json()["token"]), timeout=30)
    assert up.status_code == 202, up.text
    tokens_before = len(lti.platform.log()["tokens"])
    _grade(lti.app.state.sessions, up.json()["id"], score=2.0, checks=[])
    assert wait_until_idle(deliverer, 30)
    log = lti.platform.log()
    assert [(s["lineitem"], s["userId"], s["scoreGiven"]) for s in log["scores"] if s["userId"] == "s-bound"] == [
        ("li-b1", "s-bound", 2.0)]
    grant = log["tokens"][tokens_before]
    assert grant["deployment_id"] == DEPLOYMENT and grant["scopes"] == [SCORE]  # item 7
    assert not [r for r in log["refused"] if "/lineitems/li-b1" in r["path"]], log["refused"]


def test_a_browser_instructor_gets_the_bind_picker_then_signs_in_on_the_exercise(lti):
    client = lti.browser.client
    form = lti.browser.authorize(lti.browser.login(sub="t-bind-web", roles=[INSTRUCTOR], context="course-BW",
                                                   resource_link="rl-bw", lineitem="li-bw"))
    page = client.post(lti.url + "/lti/launch", data=form, headers=HTML)
    assert page.status_code == 200 and 'action="/lti/bind"' in page.text, page.text
    assert re.search(r'type="radio" name="exercise_id" value="ch05.svc_sum"', page.text)
    assert f"frame-ancestors {lti.platform.url};" in page.headers["content-security-policy"]
    token = re.search(r'name="bind_token" value="([^"]+)"', page.text).group(1)
    chosen = client.post(lti.url + "/lti/bind", data={"bind_token": token, "exercise_id": "ch05.svc_long"},
                         headers=HTML)
    assert chosen.status_code == 303 and chosen.headers["location"].startswith("/lti/enter?ticket="), chosen.text
    entered = client.get(lti.url + chosen.headers["location"])
    assert entered.status_code == 303 and entered.headers["location"] == "/teach/exercises/ch05.svc_long"
    assert _binding(lti, "rl-bw") == ("ch05.svc_long", "instructor")


def test_a_launch_with_the_pick_binds_its_link_for_later_launches_without_it(lti):
    first = lti.browser.launch(sub="s-first", roles=[LEARNER], context="course-L", resource_link="rl-l1",
                               exercise_id="ch05.svc_long", lineitem="li-l1")
    assert first.status_code == 200, first.text
    assert _binding(lti, "rl-l1") == ("ch05.svc_long", "launch")
    later = lti.browser.launch(sub="s-later", roles=[LEARNER], context="course-L", resource_link="rl-l1",
                               lineitem="li-l1")
    assert later.status_code == 200 and later.json()["exercise_id"] == "ch05.svc_long", later.text
    elsewhere = lti.browser.launch(sub="s-later", roles=[LEARNER], context="course-L2", resource_link="rl-l1",
                                   lineitem="li-l2")  # the same link id in another course is another link
    assert elsewhere.status_code == 409


def test_the_exercise_comes_from_the_line_items_resource_id(lti):
    pick = lti.browser.launch(sub="t-rid", roles=[INSTRUCTOR], message_type="LtiDeepLinkingRequest",
                              dl_data="dl-rid").json()["pick_token"]
    page = lti.browser.client.post(lti.url + "/lti/deep-link", data={"pick_token": pick, "exercise_id": "ch05.svc_sum"})
    import html as html_
    action = html_.unescape(re.search(r'action="([^"]+)"', page.text).group(1))
    jwt_ = html_.unescape(re.search(r'name="JWT" value="([^"]+)"', page.text).group(1))
    made = httpx.post(action, data={"JWT": jwt_}, timeout=30).json()["line_items"]
    assert len(made) == 1  # the platform made a line item from the answer's lineItem (resourceId = the exercise)
    tokens_before = len(lti.platform.log()["tokens"])
    hint = {"context": "course-R", "resource_link": "rl-rid", "lineitem": made[0], "scopes": [SCORE, READ]}
    launched = lti.browser.launch(sub="s-rid", roles=[LEARNER], **hint)  # the platform dropped the custom parameter
    assert launched.status_code == 200 and launched.json()["exercise_id"] == "ch05.svc_sum", launched.text
    grants = lti.platform.log()["tokens"][tokens_before:]
    assert [(g["scopes"], g["deployment_id"]) for g in grants] == [([READ], DEPLOYMENT)]
    assert _binding(lti, "rl-rid") == ("ch05.svc_sum", "line_item")
    assert lti.browser.launch(sub="s-rid2", roles=[LEARNER], **hint).json()["exercise_id"] == "ch05.svc_sum"
    assert len(lti.platform.log()["tokens"]) == tokens_before + 1  # bound now: no second read of the line item


def test_an_unreadable_line_item_leaves_the_link_unbound(lti):
    hint = {"context": "course-R", "resource_link": "rl-missing", "lineitem": "no-such-item", "scopes": [SCORE, READ]}
    resp = lti.browser.launch(sub="s-missing", roles=[LEARNER], **hint)
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "lti_unbound_link", resp.text
    assert _binding(lti, "rl-missing") is None


def test_two_first_launches_of_one_link_at_once_bind_it_without_an_error(lti):
    """The second insert waits for the first (PostgreSQL: the unique index; SQLite: the writer lock), then
    updates the row the first made instead of failing the launch."""
    import threading
    import time

    from service.lti import links
    from service.lti.models import LtiPlatform

    key = (DEPLOYMENT, "course-race", "rl-race")
    first = lti.app.state.sessions()
    assert first.get(LtiPlatform, lti.platform_id) is not None
    links.bind(first, platform_id=lti.platform_id, key=key, course="c", exercise_id="ch05.svc_sum", bound_by="launch")
    failures: list[BaseException] = []

    def second() -> None:
        from service.db import transaction
        try:
            with transaction(lti.app.state.sessions) as s:
                links.bind(s, platform_id=lti.platform_id, key=key, course="c", exercise_id="ch05.svc_long",
                           bound_by="instructor")
        except BaseException as exc:  # reported below
            failures.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.5)  # the second is waiting on the first's uncommitted insert
    first.commit()
    first.close()
    thread.join(30)
    assert not thread.is_alive() and failures == [], failures
    assert _binding(lti, "rl-race") == ("ch05.svc_long", "instructor")


def test_two_first_launches_of_one_line_item_at_once_record_it_once(lti):
    import threading
    import time

    from sqlalchemy import func, select

    from service.db import transaction
    from service.lti.launch import remember_line_item
    from service.lti.models import LtiLineItem

    url = lti.platform.url + "/lineitems/li-race"
    args = {"platform_id": lti.platform_id, "url": url, "course": "c", "exercise_id": "ch05.svc_sum"}
    first = lti.app.state.sessions()
    remember_line_item(first, **args, deployment_id=None)
    first.flush()
    failures: list[BaseException] = []

    def second() -> None:
        try:
            with transaction(lti.app.state.sessions) as s:
                remember_line_item(s, **args, deployment_id=DEPLOYMENT)
        except BaseException as exc:  # reported below
            failures.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.5)
    first.commit()
    first.close()
    thread.join(30)
    assert not thread.is_alive() and failures == [], failures
    with lti.app.state.sessions() as s:
        rows = s.scalars(select(LtiLineItem.deployment_id).where(LtiLineItem.url == url)).all()
        assert rows == [DEPLOYMENT] and s.scalar(select(func.count()).select_from(LtiLineItem).where(
            LtiLineItem.url == url)) == 1
