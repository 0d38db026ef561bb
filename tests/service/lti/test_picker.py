"""The content picker (issue 28, item 1) over real HTTP against the platform harness, SQLite and PostgreSQL:
a browser's deep-linking launch gets an HTML picker that only its platform may frame; the answer honours
accept_types, accept_multiple, accept_lineitem and accept_presentation_document_targets, and the harness's
return endpoint (which refuses answers that break them) accepts it; a bad choice is a 4xx that spends no
pick; a POST naming another origin is refused. /lti/ error pages may be framed by registered platforms
only; other pages still refuse framing (item 6)."""
from __future__ import annotations

import html
import re
import time

import httpx
import jwt
import pytest
from lti_support import CLIENT_ID, DEPLOYMENT, INSTRUCTOR

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
HTML = {"Accept": "text/html,application/xhtml+xml"}


def _pick_launch(lti, **hint) -> dict:
    resp = lti.browser.launch(sub="t-picker", roles=[INSTRUCTOR], message_type="LtiDeepLinkingRequest", **hint)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _answer(lti, pick: str, fields: list[tuple[str, str]], **headers) -> httpx.Response:
    data: dict[str, list[str]] = {"pick_token": [pick]}
    for name, value in fields:
        data.setdefault(name, []).append(value)
    return lti.browser.client.post(lti.url + "/lti/deep-link", data=data, headers=headers)


def _returned(lti, page: httpx.Response) -> tuple[httpx.Response, dict]:
    """Post the auto-posting page's form as the browser would; the platform's answer and what it logged."""
    assert page.status_code == 200, page.text
    action = html.unescape(re.search(r'action="([^"]+)"', page.text).group(1))
    token = html.unescape(re.search(r'name="JWT" value="([^"]+)"', page.text).group(1))
    back = httpx.post(action, data={"JWT": token}, timeout=30)
    return back, jwt.decode(token, options={"verify_signature": False})


def _pick_rows(lti) -> int:
    from sqlalchemy import func, select

    from service.lti.models import LtiLoginState
    with lti.app.state.sessions() as s:
        return s.scalar(select(func.count()).select_from(LtiLoginState).where(LtiLoginState.state.like("pick-%")))


def test_a_browser_gets_the_picker_page_grouped_by_chapter_that_only_its_platform_may_frame(lti, test_catalogue):
    form = lti.browser.authorize(lti.browser.login(sub="t-page", roles=[INSTRUCTOR],
                                                   message_type="LtiDeepLinkingRequest", accept_multiple=True))
    page = lti.browser.client.post(lti.url + "/lti/launch", data=form, headers=HTML)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html"), page.text
    csp = page.headers["content-security-policy"]
    assert f"frame-ancestors {lti.platform.url};" in csp and "form-action 'self'" in csp
    assert "script-src" not in csp and "default-src 'none'" in csp and "x-frame-options" not in page.headers
    assert page.headers["cache-control"] == "no-store"
    assert '<legend>Chapter 5</legend>' in page.text and 'action="/lti/deep-link"' in page.text
    ids = re.findall(r'type="checkbox" name="exercise_id" value="([^"]+)"', page.text)
    assert sorted(ids) == sorted(e.id for e in test_catalogue)  # several accepted: checkboxes
    sum_ex = test_catalogue.get("ch05.svc_sum")
    assert f'name="points.ch05.svc_sum" value="{sum_ex.manifest.max_score}"' in page.text
    assert 'name="lang.ch05.svc_sum"' in page.text and "<script" not in page.text
    assert 'name="pick_token" value="' in page.text


def test_the_picker_page_escapes_what_the_platform_sent_and_speaks_the_launch_locale(lti):
    login = lti.browser.login(sub="t-evil-title")
    now = int(time.time())
    claims = {"iss": lti.platform.url, "aud": CLIENT_ID, "sub": "t-evil-title", "nonce": login["nonce"], "iat": now,
              "exp": now + 300, LTI + "message_type": "LtiDeepLinkingRequest", LTI + "version": "1.3.0",
              LTI + "deployment_id": DEPLOYMENT, LTI + "roles": [INSTRUCTOR],
              LTI + "context": {"id": "course-XSS", "title": '<script>alert(1)</script>"><img src=x onerror=alert(2)>'},
              LTI + "launch_presentation": {"locale": "zh-CN"},
              DL: {"deep_link_return_url": lti.platform.url + "/deeplink/return", "accept_types": ["ltiResourceLink"]}}
    page = lti.browser.client.post(lti.url + "/lti/launch", headers=HTML,
                                   data={"id_token": lti.platform.sign(claims), "state": login["state"]})
    assert page.status_code == 200, page.text
    assert "<script" not in page.text and "<img" not in page.text and "&lt;script&gt;" in page.text
    assert '<html lang="zh-CN">' in page.text and "添加 titangrade 练习" in page.text
    assert re.search(r'type="radio" name="exercise_id"', page.text)  # accept_multiple absent: one item


def test_several_picks_with_points_and_language_reach_the_platform_as_resource_links_with_line_items(lti):
    answer = _pick_launch(lti, accept_multiple=True, accept_lineitem=True,
                          accept_presentation_document_targets=["iframe", "window"], dl_data="dl-many")
    assert answer["accept"] == {"multiple": True, "lineitem": True, "targets": ["window", "iframe"]}
    page = _answer(lti, answer["pick_token"], [("exercise_id", "ch05.svc_sum"), ("points.ch05.svc_sum", "10"),
                                               ("lang.ch05.svc_sum", "zh"), ("exercise_id", "ch05.svc_long"),
                                               ("target", "iframe")])
    back, claims = _returned(lti, page)
    assert back.status_code == 200, back.text  # the harness checked the items against the request's settings
    assert claims[LTI + "deployment_id"] == DEPLOYMENT
    first, second = claims[ITEMS]
    assert first["type"] == second["type"] == "ltiResourceLink"
    assert first["custom"] == {"exercise_id": "ch05.svc_sum", "lang": "zh"} and second["custom"] == {
        "exercise_id": "ch05.svc_long"}
    assert first["lineItem"]["scoreMaximum"] == 10.0 and first["lineItem"]["resourceId"] == "ch05.svc_sum"
    assert first["lineItem"]["tag"] == "titangrade" and first["lineItem"]["label"] == first["title"]
    assert second["lineItem"]["scoreMaximum"] > 0  # default: the exercise's max score
    assert first["iframe"] and "window" not in first
    assert [i["resourceId"] for i in lti.platform.log()["line_items"][-2:]] == ["ch05.svc_sum", "ch05.svc_long"]


def test_accept_lineitem_false_sends_no_line_item_and_the_default_target_is_a_new_window(lti):
    answer = _pick_launch(lti, accept_lineitem=False, accept_presentation_document_targets=["window"],
                          dl_data="dl-noline")
    back, claims = _returned(lti, _answer(lti, answer["pick_token"], [("exercise_id", "ch05.svc_sum")]))
    assert back.status_code == 200, back.text
    (item,) = claims[ITEMS]
    assert "lineItem" not in item and item["window"] == {"targetName": "titangrade"} and "iframe" not in item


def test_one_item_when_the_platform_accepts_one_and_a_bad_choice_spends_no_pick(lti):
    pick = _pick_launch(lti, dl_data="dl-one")["pick_token"]
    rows = _pick_rows(lti)
    for fields, code in [
        ([("exercise_id", "ch05.svc_sum"), ("exercise_id", "ch05.svc_long")], "lti_pick_one_only"),
        ([], "lti_pick_none"),
        ([("exercise_id", "ch05.svc_sum"), ("points.ch05.svc_sum", "-1")], "lti_points_invalid"),
        ([("exercise_id", "ch05.svc_sum"), ("points.ch05.svc_sum", "nan")], "lti_points_invalid"),
        ([("exercise_id", "ch05.svc_sum"), ("lang.ch05.svc_sum", "fr")], "lti_lang_invalid"),
        ([("exercise_id", "ch05.svc_sum"), ("target", "iframe")], "lti_target_invalid"),
        ([("exercise_id", "ch99.nothing")], "lti_unknown_exercise"),
    ]:
        resp = _answer(lti, pick, fields)
        assert 400 <= resp.status_code < 500 and resp.json()["error"]["code"] == code, (fields, resp.text)
    assert _pick_rows(lti) == rows  # still unspent
    zh = _answer(lti, pick, [], **{"Accept-Language": "zh"})
    assert "请至少选择一个练习" in zh.json()["error"]["message"]
    back, claims = _returned(lti, _answer(lti, pick, [("exercise_id", "ch05.svc_long")]))
    assert back.status_code == 200 and len(claims[ITEMS]) == 1, back.text


def test_a_platform_that_accepts_no_resource_links_gets_a_clear_refusal_and_no_pick(lti, counts):
    rows, before = _pick_rows(lti), counts()
    resp = lti.browser.launch(sub="t-types", roles=[INSTRUCTOR], message_type="LtiDeepLinkingRequest",
                              accept_types=["link", "file"])
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "lti_accept_types", resp.text
    assert "link, file" in resp.json()["error"]["message"] and "ltiResourceLink" in resp.json()["error"]["message"]
    assert _pick_rows(lti) == rows and counts() == before
    form = lti.browser.authorize(lti.browser.login(sub="t-types", roles=[INSTRUCTOR],
                                                   message_type="LtiDeepLinkingRequest", accept_types=["html"]))
    page = lti.browser.client.post(lti.url + "/lti/launch", data=form, headers=HTML)
    assert page.status_code == 400 and "ltiResourceLink" in page.text
    # the refusal is shown inside the LMS frame: the registered platforms may frame /lti/ error pages
    assert f"frame-ancestors {lti.platform.url}" in page.headers["content-security-policy"]
    assert "x-frame-options" not in page.headers


def test_a_pick_posted_from_another_origin_is_refused(lti):
    pick = _pick_launch(lti, dl_data="dl-origin")["pick_token"]
    rows = _pick_rows(lti)
    resp = _answer(lti, pick, [("exercise_id", "ch05.svc_sum")], Origin="https://evil.example")
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "lti_cross_origin", resp.text
    assert _pick_rows(lti) == rows
    back, _ = _returned(lti, _answer(lti, pick, [("exercise_id", "ch05.svc_sum")], Origin=lti.url))
    assert back.status_code == 200


@pytest.mark.parametrize("path", ["/exercises", "/login"])
def test_pages_outside_lti_still_refuse_framing(lti, path):
    resp = httpx.get(lti.url + path, headers=HTML, timeout=30, follow_redirects=True)
    assert resp.status_code == 200 and resp.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in resp.headers["content-security-policy"]


def test_the_ags_client_assertion_names_the_deployment(lti):
    from service.lti import tokens
    from service.lti.keys import KeyStore

    assertion = tokens.client_assertion(keys=KeyStore(lti.keys, retention_s=60), client_id=CLIENT_ID,
                                        token_url=lti.platform.url + "/token", deployment_id="dep-x")
    claims = jwt.decode(assertion, options={"verify_signature": False})
    assert claims[LTI + "deployment_id"] == "dep-x" and claims["iss"] == claims["sub"] == CLIENT_ID
    refused = httpx.post(lti.platform.url + "/token", timeout=30, data={
        "grant_type": "client_credentials", "client_assertion": assertion,
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "scope": "https://purl.imsglobal.org/spec/lti-ags/scope/score"})
    assert refused.status_code == 401 and "deployment_id" in refused.text  # the harness checks it


def test_over_https_a_partitioned_twin_of_the_binding_cookie_keeps_a_framed_flow_bound(lti):
    from starlette.requests import Request
    from starlette.responses import Response

    from service.lti import binding

    https = lti.app.state.settings.model_copy(update={"lti_tool_url": "https://grader.example"})
    request = Request({"type": "http", "scheme": "https", "path": "/lti/login", "headers": [], "server": None})
    out = Response()
    binding.bind(request, out, settings=https, value="v" * 43, max_age_s=900)
    plain, framed = [v.decode().lower() for k, v in out.raw_headers if k == b"set-cookie"]
    assert plain.startswith("tg_lti_browser=") and "partitioned" not in plain
    assert framed.startswith("tg_lti_browser_p=") and "partitioned" in framed and "samesite=none" in framed
    assert "secure" in framed and "httponly" in framed and "path=/lti" in framed
    only_framed = Request({"type": "http", "headers": [(b"cookie", b"tg_lti_browser_p=" + b"v" * 43)]})
    assert binding.sent_digest(only_framed) == binding.digest("v" * 43)
    forged = Request({"type": "http", "headers": [(b"cookie", b"tg_lti_browser_p=short")]})
    assert binding.sent_digest(forged) is None
    dev = Response()
    binding.bind(Request({"type": "http", "scheme": "http", "path": "/lti/login", "headers": [], "server": None}),
                 dev, settings=lti.app.state.settings, value="v" * 43, max_age_s=900)
    assert len([k for k, _ in dev.raw_headers if k == b"set-cookie"]) == 1  # no Partitioned without Secure


def test_the_language_chosen_in_the_picker_opens_the_learners_pages_in_it(lti):
    client = httpx.Client(base_url=lti.url, headers=HTML, timeout=30)
    form = lti.browser.authorize(lti.browser.login(client=client, sub="s-zh", context="course-ZH",
                                                   exercise_id="ch05.svc_sum", lang="zh"))
    launched = client.post("/lti/launch", data=form)
    assert launched.status_code == 303, launched.text
    entered = client.get(launched.headers["location"])
    assert entered.status_code == 303 and "tg_lang=zh" in entered.headers.get("set-cookie", "")
    page = client.get("/exercises")
    assert page.status_code == 200 and '<html lang="zh-CN">' in page.text
    plain = httpx.Client(base_url=lti.url, headers=HTML, timeout=30)
    form = lti.browser.authorize(lti.browser.login(client=plain, sub="s-en", context="course-ZH",
                                                   exercise_id="ch05.svc_sum"))
    entered = plain.get(plain.post("/lti/launch", data=form).headers["location"])
    assert "tg_lang" not in entered.headers.get("set-cookie", "")  # no language chosen: the browser's


def test_the_cookieless_binding_is_taken_only_from_the_tools_own_page(lti):
    """With `lti_storage_target` the login's page stores the binding value in the platform's storage; a launch
    without the cookie gets the page that reads it back. A `tg_bind` field counts only when the POST's Origin
    is the tool's own, and only with the value of the browser that started the login."""
    client = httpx.Client(timeout=30)
    login = client.post(lti.url + "/lti/login", data={
        "iss": lti.platform.url, "login_hint": "t-store", "target_link_uri": lti.url + "/lti/launch",
        "lti_message_hint": '{"roles": ["' + INSTRUCTOR + '"], "message_type": "LtiDeepLinkingRequest"}',
        "lti_storage_target": "_parent"}, headers=HTML)
    assert login.status_code == 200 and login.headers["content-type"].startswith("text/html"), login.text
    csp = login.headers["content-security-policy"]
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", csp) and f"frame-ancestors {lti.platform.url};" in csp
    value = client.cookies["tg_lti_browser"]
    assert f'data-value="{value}"' in login.text and f'data-origin="{lti.platform.url}"' in login.text
    auth = html.unescape(re.search(r'data-next="([^"]+)"', login.text).group(1))
    form = httpx.get(auth, timeout=30).json()
    launch = {"id_token": form["id_token"], "state": form["state"], "lti_storage_target": "_parent"}
    bare = httpx.Client(timeout=30)  # the launch arrives without the cookie
    first = bare.post(lti.url + "/lti/launch", data=launch, headers=HTML)
    assert first.status_code == 200 and 'name="tg_bind" value=""' in first.text, first.text
    assert "script-src 'sha256-" in first.headers["content-security-policy"]
    for origin_, sent in [("https://evil.example", value), (None, value), (lti.url, "x" * 43)]:
        headers = {"Origin": origin_} if origin_ else {}
        refused = bare.post(lti.url + "/lti/launch", data={**launch, "tg_bind": sent}, headers=headers)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "lti_wrong_browser", refused.text
    done = bare.post(lti.url + "/lti/launch", data={**launch, "tg_bind": value}, headers={"Origin": lti.url})
    assert done.status_code == 200 and "pick_token" in done.json() and "tg_bind" not in done.json(), done.text
    pick = bare.post(lti.url + "/lti/deep-link", headers={"Origin": lti.url},
                     data={"pick_token": done.json()["pick_token"], "exercise_id": "ch05.svc_sum", "tg_bind": value})
    assert pick.status_code == 200 and 'name="JWT"' in pick.text, pick.text
