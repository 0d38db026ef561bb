"""LTI Dynamic Registration against the harness's OpenID configuration and registration endpoint: the tool
reads the configuration, registers itself, records a pending platform that cannot launch until an admin
approves it (API, CLI), and answers the page that posts the spec's close message. Broken configurations,
an issuer on another host, a spent registration token, private addresses in prod mode and too many pending
registrations are refused with a page naming the problem, and nothing is recorded."""
from __future__ import annotations

import base64
import hashlib
import re

import httpx
import pytest
from cli_support import cli
from sqlalchemy import func, select


def register(lti, **params) -> httpx.Response:
    return httpx.get(lti.url + "/lti/register", params=params, timeout=30)


def platforms(lti) -> list:
    from service.lti.models import LtiPlatform

    with lti.app.state.sessions() as s:
        return list(s.scalars(select(LtiPlatform).order_by(LtiPlatform.id)))


def registrations(lti) -> int:
    return len(lti.platform.log()["registrations"])


def test_registration_records_a_pending_platform_that_launches_only_once_approved(lti, svc):
    resp = register(lti, openid_configuration=lti.platform.openid_configuration_url(),
                    registration_token=lti.platform.registration_token())
    assert resp.status_code == 200, resp.text
    script = re.search(r"<script>(.*?)</script>", resp.text).group(1)
    assert "org.imsglobal.lti.close" in script and "window.opener || window.parent" in script
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = resp.headers["content-security-policy"]
    assert f"script-src 'sha256-{digest}'" in csp and f"frame-ancestors {lti.platform.url};" in csp
    (sent,) = lti.platform.log()["registrations"]
    assert sent["initiate_login_uri"] == lti.url + "/lti/login" and sent["jwks_uri"] == lti.url + "/lti/jwks"
    assert sent["redirect_uris"] == [lti.url + "/lti/launch"]
    tool_conf = sent["https://purl.imsglobal.org/spec/lti-tool-configuration"]
    assert {m["type"] for m in tool_conf["messages"]} == {"LtiResourceLinkRequest", "LtiDeepLinkingRequest"}
    assert "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly" in sent["scope"].split()
    row = platforms(lti)[-1]
    assert (row.client_id, row.status, row.deployment_ids) == ("dyn-client-1", "pending", ["dyn-deployment-1"])
    assert (row.issuer, row.keyset_url) == (lti.platform.url, lti.platform.url + "/jwks")
    assert f"approve {row.id}" in resp.text

    dyn = {"client_id": "dyn-client-1", "deployment": "dyn-deployment-1"}
    refused = lti.browser.login_response(sub="s-dyn", **dyn)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "lti_platform_pending", refused.text
    # the pre-registered platform of the same issuer still launches (no client id needed to tell them apart)
    assert lti.browser.launch(sub="s-static").status_code == 200
    listed = httpx.get(lti.url + "/api/v1/lti/platforms", headers=svc.auth(lti.tokens["root"]), timeout=30).json()
    assert {p["client_id"]: p["status"] for p in listed}["dyn-client-1"] == "pending"

    approve = f"{lti.url}/api/v1/lti/platforms/{row.id}/approve"
    assert httpx.post(approve, headers=svc.auth(lti.tokens["teacher"]), timeout=30).status_code == 403
    done = httpx.post(approve, headers=svc.auth(lti.tokens["root"]), timeout=30)
    assert done.status_code == 200 and done.json()["status"] == "active", done.text
    launched = lti.browser.launch(sub="s-dyn", **dyn)
    assert launched.status_code == 200 and launched.json()["role"] == "learner", launched.text

    # the registration token was single use: the platform refuses it again, and nothing is recorded
    count = len(platforms(lti))
    again = register(lti, openid_configuration=lti.platform.openid_configuration_url(),
                     registration_token="spent-or-made-up")
    assert again.status_code == 502 and "refused the registration (HTTP 401)" in again.text
    assert len(platforms(lti)) == count


def test_the_cli_approves_and_adds_deployments(lti, module_db_url):
    assert register(lti, openid_configuration=lti.platform.openid_configuration_url(),
                    registration_token=lti.platform.registration_token()).status_code == 200
    row = platforms(lti)[-1]
    assert row.status == "pending"
    listed = cli("lti", "platforms", "list", db_url=module_db_url)
    assert f"{row.client_id}\tdeployments {row.deployment_ids[0]}\tpending" in listed.stdout
    done = cli("lti", "platforms", "approve", str(row.id), "--deployment-id", "extra-1", db_url=module_db_url)
    assert done.returncode == 0 and "approved" in done.stdout, done.stderr
    assert platforms(lti)[-1].deployment_ids == [row.deployment_ids[0], "extra-1"]
    assert cli("lti", "platforms", "approve", "99999", db_url=module_db_url).returncode != 0


@pytest.mark.parametrize("mode,status,code", [
    ("wrong-issuer", 400, "lti_registration_issuer_mismatch"),
    ("no-registration", 400, "lti_registration_invalid"),
    ("js-endpoint", 400, "lti_registration_invalid"),
    ("no-rs256", 400, "lti_registration_invalid"),
    ("array", 400, "lti_registration_invalid"),
    ("not-json", 502, "lti_platform_error"),
])
def test_a_bad_openid_configuration_is_refused_and_nothing_is_registered(lti, mode, status, code):
    before, sent = len(platforms(lti)), registrations(lti)
    resp = register(lti, openid_configuration=lti.platform.openid_configuration_url(mode),
                    registration_token=lti.platform.registration_token())
    assert resp.status_code == status and code in resp.text, resp.text
    assert "org.imsglobal.lti.close" not in resp.text  # the admin reads the error in the LMS's frame
    assert f"frame-ancestors {lti.platform.url};" in resp.headers["content-security-policy"]
    assert len(platforms(lti)) == before and registrations(lti) == sent


@pytest.mark.parametrize("url,status", [("", 400), ("javascript:alert(1)", 400), ("file:///etc/passwd", 400),
                                        ("{platform}/no-such-configuration", 502),
                                        ("http://127.0.0.1:9/.well-known/openid-configuration", 502)])
def test_bad_registration_urls_are_clear_errors(lti, url, status):
    before = len(platforms(lti))
    resp = register(lti, openid_configuration=url.format(platform=lti.platform.url))
    assert resp.status_code == status, resp.text
    assert "frame-ancestors" in resp.headers["content-security-policy"]
    assert len(platforms(lti)) == before


def test_private_addresses_are_refused_in_prod_mode(lti):
    """The configuration URL is anyone's input: in prod mode the address-checking client refuses loopback."""
    from service.lti import registration
    from service.lti.calls import PlatformCalls, PlatformError
    from service.outbox.ssrf import AddressPolicy, make_client

    calls = PlatformCalls(make_client(AddressPolicy(enforce=True), timeout_s=5, max_connections=1),
                          None, max_bytes=65536, max_pages=2)
    sent = registrations(lti)
    with pytest.raises(PlatformError, match=r"could not be reached.*refused"):
        registration.register(calls, config_url=lti.platform.openid_configuration_url(), registration_token="t",
                              tool_url=lti.url, allow_http=True)
    assert registrations(lti) == sent
    with pytest.raises(Exception, match="https"):  # and only https endpoints outside dev mode
        registration.register(calls, config_url=lti.platform.openid_configuration_url(), registration_token="t",
                              tool_url=lti.url, allow_http=False)


def test_too_many_pending_registrations_are_refused_before_the_platform_is_asked(lti):
    from service.lti.models import LtiPlatform

    with lti.app.state.sessions() as s:
        pending = s.scalar(select(func.count()).where(LtiPlatform.status == "pending",
                                                      LtiPlatform.removed_at.is_(None)))
    settings = lti.app.state.settings
    lti.app.state.settings = settings.model_copy(update={"lti_registration_max_pending": max(pending, 1)})
    try:
        if pending == 0:
            assert register(lti, openid_configuration=lti.platform.openid_configuration_url(),
                            registration_token=lti.platform.registration_token()).status_code == 200
        sent = registrations(lti)
        resp = register(lti, openid_configuration=lti.platform.openid_configuration_url(),
                        registration_token=lti.platform.registration_token())
        assert resp.status_code == 429 and "lti_registration_limit" in resp.text, resp.text
        assert registrations(lti) == sent
    finally:
        lti.app.state.settings = settings


def test_the_registration_url_takes_a_form_post_too(lti):
    resp = httpx.post(lti.url + "/lti/register", timeout=30, data={
        "openid_configuration": lti.platform.openid_configuration_url(),
        "registration_token": lti.platform.registration_token()})
    assert resp.status_code == 200 and "org.imsglobal.lti.close" in resp.text, resp.text
    assert platforms(lti)[-1].status == "pending"
    too_long = httpx.post(lti.url + "/lti/register", timeout=30, data={
        "openid_configuration": lti.platform.openid_configuration_url() + "&x=" + "a" * 5000})
    assert too_long.status_code == 400 and "lti_parameter_too_long" in too_long.text
