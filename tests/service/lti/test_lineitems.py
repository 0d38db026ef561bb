"""The tool's own AGS line items and the platform's results, against the harness's line-item container: a
launch whose AGS claim has `lineitems` but no `lineitem` makes the tool find or create its line item
(scoreMaximum, label, resourceId, tag, resourceLinkId), once; the grade goes there with activityProgress,
gradingProgress and submittedAt; the instructor reads the results back (API, CLI), paged."""
from __future__ import annotations

import datetime as dt
import time

import httpx
import pytest
from cli_support import cli
from lti_support import INSTRUCTOR, LEARNER
from test_ags import _grade


@pytest.fixture
def deliverer(lti):
    from service.wiring import build_deliverer

    d = build_deliverer(lti.app.state.settings, sessions=lti.app.state.sessions)
    yield d
    d.pool.shutdown(wait=True)


def tool_items(lti, course: str):
    from sqlalchemy import select

    from service.lti.models import LtiLineItem

    with lti.app.state.sessions() as s:
        return list(s.scalars(select(LtiLineItem).where(LtiLineItem.course == course)))


def wait_items(lti, course: str, n: int = 1, timeout_s: float = 20):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if len(found := tool_items(lti, course)) >= n:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no line item for {course}: {lti.platform.log()['refused']}")


def upload(lti, svc, token: str) -> str:
    resp = httpx.post(lti.url + "/api/v1/submissions", files={"notebook": ("nb.ipynb", svc.notebook())},
                      data={"exercise_id": "ch05.svc_sum"}, headers=svc.auth(token), timeout=30)
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def test_the_tool_creates_its_line_item_once_and_grades_go_there_with_progress(lti, svc, deliverer, module_db_url):
    from service.outbox.delivery import wait_until_idle

    launch = {"context": "course-L", "exercise_id": "ch05.svc_sum", "lineitems_only": True, "resource_link": "rl-L"}
    learner = lti.browser.launch(sub="s-li-1", roles=[LEARNER], **launch).json()
    course = learner["course"]
    (item,) = wait_items(lti, course)
    made = lti.platform.log()["lineitems"]
    assert len(made) == 1 and item.url == made[0]["id"] and item.origin == "tool"
    assert {k: made[0][k] for k in ("scoreMaximum", "resourceId", "resourceLinkId", "tag")} == {
        "scoreMaximum": 3.0, "resourceId": "ch05.svc_sum", "resourceLinkId": "rl-L", "tag": "titangrade"}
    assert made[0]["label"]
    lineitem_tokens = [t for t in lti.platform.log()["tokens"] if "lineitem" in " ".join(t["scopes"])]
    assert lineitem_tokens and all(t["deployment_id"] == "deployment-1" for t in lineitem_tokens)
    # more launches of the same link: the remembered line item serves them, nothing more is created
    lti.browser.launch(sub="s-li-2", roles=[LEARNER], **launch)
    teacher = lti.browser.launch(sub="t-li", roles=[INSTRUCTOR], **launch).json()
    time.sleep(1.0)
    assert len(lti.platform.log()["lineitems"]) == 1 and len(tool_items(lti, course)) == 1

    sid = upload(lti, svc, learner["token"])
    _grade(lti.app.state.sessions, sid, score=2.0, checks=[{"name": "sum", "passed": True, "score": 2.0,
                                                            "max_score": 2.0}])
    assert wait_until_idle(deliverer, 30)
    (score,) = [s for s in lti.platform.log()["scores"] if s["userId"] == "s-li-1"]
    assert score["lineitem"] == item.url.rsplit("/", 1)[1]
    assert (score["activityProgress"], score["gradingProgress"], score["scoreGiven"]) == ("Completed",
                                                                                           "FullyGraded", 2.0)
    submitted = dt.datetime.fromisoformat(score["submission"]["submittedAt"])
    assert submitted.tzinfo is not None and submitted <= dt.datetime.fromisoformat(score["timestamp"])
    assert not lti.platform.log()["refused"], lti.platform.log()["refused"]

    # results, read back by the instructor: three learners' results, two a page
    for sub in ("s-li-2", "s-li-3"):
        other = lti.browser.launch(sub=sub, roles=[LEARNER], **launch).json()
        _grade(lti.app.state.sessions, upload(lti, svc, other["token"]), score=1.0, checks=[])
    assert wait_until_idle(deliverer, 30)
    url = f"{lti.url}/api/v1/courses/{course}/lti/line-items"
    listed = httpx.get(url, headers=svc.auth(teacher["token"]), timeout=30).json()
    assert [(i["id"], i["origin"], i["resource_link_id"]) for i in listed] == [(item.id, "tool", "rl-L")]
    resp = httpx.get(f"{url}/{item.id}/results", headers=svc.auth(teacher["token"]), timeout=30)
    assert resp.status_code == 200, resp.text
    got = {r["user_id"]: r["result_score"] for r in resp.json()["results"]}
    assert got == {"s-li-1": 2.0, "s-li-2": 1.0, "s-li-3": 1.0} and resp.json()["invalid"] == 0
    pages = [r["page"] for r in lti.platform.log()["results_reads"]]
    assert pages == ["1", "2"]
    shown = cli("lti", "results", course, str(item.id), db_url=module_db_url,
                env={"TITANGRADE_LTI_KEY_DIR": str(lti.keys)})
    assert shown.returncode == 0 and '"s-li-3"' in shown.stdout, shown.stderr
    assert "tool" in cli("lti", "line-items", course, db_url=module_db_url).stdout
    # a learner may not read results; nor another course's line item
    assert httpx.get(f"{url}/{item.id}/results", headers=svc.auth(learner["token"]), timeout=30).status_code == 403
    other = lti.browser.launch(sub="t-other", roles=[INSTRUCTOR], context="course-other").json()
    resp = httpx.get(f"{lti.url}/api/v1/courses/{other['course']}/lti/line-items/{item.id}/results",
                     headers=svc.auth(other["token"]), timeout=30)
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "line_item_not_found"


def test_a_line_item_already_on_the_platform_is_found_not_made_again(lti, svc):
    """The tool forgot its line item (a new database): the container's resource filters find it again."""
    from service.db import transaction
    from service.lti.models import LtiLineItem

    launch = {"context": "course-F", "exercise_id": "ch05.svc_sum", "lineitems_only": True, "resource_link": "rl-F"}
    course = lti.browser.launch(sub="s-f", **launch).json()["course"]
    (item,) = wait_items(lti, course)
    made = len(lti.platform.log()["lineitems"])
    with transaction(lti.app.state.sessions) as s:
        s.delete(s.get(LtiLineItem, item.id))
    lti.browser.launch(sub="s-f2", **launch)
    (again,) = wait_items(lti, course)
    assert again.url == item.url and len(lti.platform.log()["lineitems"]) == made
    # another resource link of the same exercise gets its own column
    lti.browser.launch(sub="s-f3", **{**launch, "resource_link": "rl-F2"})
    found = wait_items(lti, course, 2)
    assert len({i.url for i in found}) == 2 and len(lti.platform.log()["lineitems"]) == made + 1


def test_line_item_answers_are_checked(lti):
    """An id on another origin, or none, is refused (scores would carry the token elsewhere)."""
    from service.lti.lineitems import _item_url, parse_result

    container = lti.platform.url + "/contexts/c/lineitems"
    assert _item_url(lti.platform.url + "/contexts/c/lineitems/1", container=container)
    for bad in ("https://evil.example/lineitems/1", "javascript:alert(1)", None, 7, "x" * 3000):
        assert _item_url(bad, container=container) is None
    assert parse_result({"userId": "u", "resultScore": True}) == {
        "user_id": "u", "result_score": None, "result_maximum": None, "comment": None}
    assert parse_result({"resultScore": 1}) is None and parse_result([]) is None
    assert parse_result({"userId": "u", "resultScore": float("nan"), "resultMaximum": float("inf")}) == {
        "user_id": "u", "result_score": None, "result_maximum": None, "comment": None}
