"""Names and Role Provisioning Services against the platform harness's paged membership container: a launch
syncs the course's roster after its answer, so a learner who never launched appears in the gradebook JSON
as missing work; on demand (API and CLI); members dropped by the platform are marked inactive, not deleted;
and every way a platform can answer badly (a paging loop, endless pages, another origin, an oversized or
invalid roster) is a clear error that changes nothing."""
from __future__ import annotations

import time

import httpx
import pytest
from cli_support import cli
from lti_support import INSTRUCTOR, LEARNER

TA = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"


def member(user_id: str, *, roles=(LEARNER,), status: str = "Active", name: str | None = None) -> dict:
    return {"user_id": user_id, "status": status, "roles": list(roles), "name": name or f"Name {user_id}",
            "email": f"{user_id}@example.edu"}


@pytest.fixture(scope="module")
def calls(lti):
    """A fresh client for Advantage services with a small page limit, installed in the app."""
    from service.lti.calls import PlatformCalls

    made = PlatformCalls.from_settings(lti.app.state.settings)
    made.max_pages = 6
    lti.app.state.lti_calls = made
    return made


def context_row(lti, context: str):
    from sqlalchemy import select

    from service.lti.models import LtiContext

    with lti.app.state.sessions() as s:
        return s.scalar(select(LtiContext).where(LtiContext.context_id == context))


def wait_synced(lti, context: str, timeout_s: float = 20):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = context_row(lti, context)
        if row is not None and (row.roster_synced_at is not None or row.roster_error):
            return row
        time.sleep(0.1)
    raise AssertionError(f"the roster of {context} was not synced")


def memberships(lti, course: str) -> dict[str, tuple[str, bool]]:
    from sqlalchemy import select

    from service.auth.models import Identity, Membership

    with lti.app.state.sessions() as s:
        rows = s.execute(select(Identity.subject, Membership.role, Membership.inactive_at)
                         .join(Identity, Identity.id == Membership.identity_id).where(Membership.course == course))
        return {sub: (role, inactive is None) for sub, role, inactive in rows}


def gradebook(lti, svc, course: str, token: str) -> dict:
    resp = httpx.get(f"{lti.url}/api/v1/courses/{course}/gradebook", headers=svc.auth(token), timeout=30)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_a_launch_syncs_the_roster_and_a_never_launched_learner_is_missing_work(lti, svc, calls):
    lti.platform.set_roster("course-N", [member("t-n", roles=(INSTRUCTOR,)), member("s-launched"),
                                         member("s-never", name="Never Launched"), member("ta-n", roles=(TA,)),
                                         member("s-gone", status="Inactive")], page_size=2)
    teacher = lti.browser.launch(sub="t-n", roles=[INSTRUCTOR], context="course-N", roster=True).json()
    course = teacher["course"]
    row = wait_synced(lti, "course-N")
    assert row.roster_error == "" and row.roster_members == 4
    reads = [r for r in lti.platform.log()["roster_reads"] if r["context"] == "course-N"]
    assert [r["page"] for r in reads] == ["1", "2", "3"]  # 5 members, 2 a page, followed by Link: rel=next
    tokens = [t for t in lti.platform.log()["tokens"] if t["scope"] == [
        "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"]]
    assert len(tokens) == 1
    assert memberships(lti, course) == {"t-n": ("instructor", True), "s-launched": ("learner", True),
                                        "s-never": ("learner", True), "ta-n": ("instructor", True)}
    book = gradebook(lti, svc, course, teacher["token"])
    never = [r for r in book["rows"] if r["subject"] == "s-never"]
    assert never and all(r["status"] == "missing" and r["attempts"] == 0 for r in never)
    assert never[0]["user"] == "Never Launched" and never[0]["issuer"] == lti.platform.url
    assert {t["subject"] for t in book["totals"]} == {"s-launched", "s-never"}  # instructors are not learners

    # a second launch within the throttle does not read the roster again
    lti.browser.launch(sub="s-launched", context="course-N", roster=True)
    time.sleep(1.0)
    assert len([r for r in lti.platform.log()["roster_reads"] if r["context"] == "course-N"]) == 3


def test_on_demand_sync_marks_dropped_members_inactive_and_keeps_their_rows(lti, svc, calls):
    lti.platform.set_roster("course-D", [member("t-d", roles=(INSTRUCTOR,)), member("s-stay"), member("s-drop")])
    teacher = lti.browser.launch(sub="t-d", roles=[INSTRUCTOR], context="course-D", roster=True).json()
    course = teacher["course"]
    wait_synced(lti, "course-D")
    assert {t["subject"] for t in gradebook(lti, svc, course, teacher["token"])["totals"]} == {"s-stay", "s-drop"}

    lti.platform.set_roster("course-D", [member("t-d", roles=(INSTRUCTOR,)), member("s-stay"),
                                         member("s-new", name="Late Joiner")])
    resp = httpx.post(f"{lti.url}/api/v1/courses/{course}/lti/roster/sync", headers=svc.auth(teacher["token"]),
                      timeout=30)
    assert resp.status_code == 200, resp.text
    assert resp.json() == [{"course": course, "members": 3, "added": 1, "deactivated": 1}]
    assert memberships(lti, course)["s-drop"] == ("learner", False)  # kept, inactive
    assert {t["subject"] for t in gradebook(lti, svc, course, teacher["token"])["totals"]} == {"s-stay", "s-new"}
    state = httpx.get(f"{lti.url}/api/v1/courses/{course}/lti/roster", headers=svc.auth(teacher["token"]),
                      timeout=30).json()
    assert state[0]["members"] == 3 and state[0]["error"] is None and state[0]["synced_at"].endswith("+00:00")

    # the dropped learner launches again: the platform vouches for them, so they are active again
    lti.browser.launch(sub="s-drop", context="course-D")
    assert memberships(lti, course)["s-drop"] == ("learner", True)

    # a learner may not sync; nor may an instructor of another course
    learner = lti.browser.launch(sub="s-stay", context="course-D").json()
    for token in (learner["token"], lti.tokens["teacher"]):
        assert httpx.post(f"{lti.url}/api/v1/courses/{course}/lti/roster/sync", headers=svc.auth(token),
                          timeout=30).status_code == 403


def test_the_cli_syncs_a_course(lti, svc, calls, module_db_url):
    env = {"TITANGRADE_LTI_KEY_DIR": str(lti.keys)}  # the tool's keys: the platform checks the assertion
    lti.platform.set_roster("course-C", [member("t-c", roles=(INSTRUCTOR,)), member("s-cli")])
    teacher = lti.browser.launch(sub="t-c", roles=[INSTRUCTOR], context="course-C", roster=True).json()
    wait_synced(lti, "course-C")
    lti.platform.set_roster("course-C", [member("t-c", roles=(INSTRUCTOR,)), member("s-cli"), member("s-cli2")])
    done = cli("lti", "roster", "sync", teacher["course"], db_url=module_db_url, env=env)
    assert done.returncode == 0, done.stderr
    assert "3 members, 1 added, 0 marked inactive" in done.stdout
    shown = cli("lti", "roster", "status", teacher["course"], db_url=module_db_url, env=env)
    assert "roster service yes" in shown.stdout and "members 3" in shown.stdout
    missing = cli("lti", "roster", "sync", "no-such-course", db_url=module_db_url, env=env)
    assert missing.returncode != 0 and "not an LTI course" in missing.stderr


@pytest.mark.parametrize("mode,code,why", [
    ("loop", "lti_platform_error", "loops back"),
    ("endless", "lti_platform_answer_too_large", "more than 6 pages"),
    ("offsite", "lti_platform_error", "another origin"),
    ("huge", "lti_platform_answer_too_large", "more than"),
])
def test_a_badly_paged_or_oversized_roster_changes_nothing(lti, svc, calls, mode, code, why):
    context = f"course-bad-{mode}"
    lti.platform.set_roster(context, [member("t-b", roles=(INSTRUCTOR,)), member(f"s-{mode}")], page_size=1,
                            mode=mode)
    teacher = lti.browser.launch(sub="t-b", roles=[INSTRUCTOR], context=context, roster=True).json()
    row = wait_synced(lti, context)  # the launch's own sync failed, and said why
    assert why in row.roster_error and row.roster_synced_at is None
    before = memberships(lti, teacher["course"])
    assert before == {"t-b": ("instructor", True)}
    resp = httpx.post(f"{lti.url}/api/v1/courses/{teacher['course']}/lti/roster/sync",
                      headers=svc.auth(teacher["token"]), timeout=60)
    assert resp.status_code == 502 and resp.json()["error"]["code"] == code, resp.text
    assert why in resp.json()["error"]["message"]
    assert memberships(lti, teacher["course"]) == before
    pages = [r for r in lti.platform.log()["roster_reads"] if r["context"] == context]
    assert len(pages) <= 2 * calls.max_pages  # the paging was cut off, twice at most (launch, then on demand)


def test_too_many_members_or_an_invalid_member_is_refused_whole(lti, svc, calls):
    lti.platform.set_roster("course-big", [member("t-big", roles=(INSTRUCTOR,))])
    teacher = lti.browser.launch(sub="t-big", roles=[INSTRUCTOR], context="course-big", roster=True).json()
    wait_synced(lti, "course-big")
    course, sync = teacher["course"], f"{lti.url}/api/v1/courses/{teacher['course']}/lti/roster/sync"
    settings = lti.app.state.settings
    lti.app.state.settings = settings.model_copy(update={"lti_roster_max_members": 5})
    try:
        lti.platform.set_roster("course-big", [member(f"s-{i}") for i in range(8)], page_size=3)
        resp = httpx.post(sync, headers=svc.auth(teacher["token"]), timeout=30)
        assert resp.status_code == 502 and resp.json()["error"]["code"] == "lti_roster_too_large", resp.text
    finally:
        lti.app.state.settings = settings
    assert set(memberships(lti, course)) == {"t-big"}  # nothing added, nobody deactivated
    for bad in ({"status": "Active", "roles": [LEARNER]}, {"user_id": "x" * 201, "roles": []},
                {"user_id": "s-r", "roles": "Learner"}, {"user_id": "s-s", "status": "Banned"}, "not a member"):
        lti.platform.set_roster("course-big", [member("t-big", roles=(INSTRUCTOR,)), bad])
        resp = httpx.post(sync, headers=svc.auth(teacher["token"]), timeout=30)
        assert resp.status_code == 502 and "roster member 2" in resp.json()["error"]["message"], resp.text
        assert memberships(lti, course) == {"t-big": ("instructor", True)}


def test_names_are_cleaned_and_a_course_without_the_claim_cannot_sync(lti, svc, calls):
    lti.platform.set_roster("course-X", [member("t-x", roles=(INSTRUCTOR,)),
                                         member("s-x", name="Eve\u202e\x1b[31m Evil\u0000")])
    teacher = lti.browser.launch(sub="t-x", roles=[INSTRUCTOR], context="course-X", roster=True).json()
    wait_synced(lti, "course-X")
    names = {r["subject"]: r["user"] for r in gradebook(lti, svc, teacher["course"], teacher["token"])["totals"]}
    assert "\u202e" not in names["s-x"] and "\x1b" not in names["s-x"] and "\x00" not in names["s-x"]
    plain = lti.browser.launch(sub="t-plain", roles=[INSTRUCTOR], context="course-plain").json()
    resp = httpx.post(f"{lti.url}/api/v1/courses/{plain['course']}/lti/roster/sync",
                      headers=svc.auth(plain["token"]), timeout=30)
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "roster_unavailable", resp.text
