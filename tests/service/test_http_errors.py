"""Error responses as clients and browsers meet them: one JSON shape, the headers HTTP asks for, messages in
the caller's language that name endpoints (not CLI commands) and never leak Python internals or echo
unbounded input; RFC 6266 downloads and RFC 3339 timestamps."""
from __future__ import annotations

import re
from urllib.parse import quote

import pytest

URL = "/api/v1/submissions"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?[+-]\d\d:\d\d$")
CJK = re.compile(r"[\u4e00-\u9fff]")


def _submit(api, svc, token="alice"):
    resp = api.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}, headers=svc.auth(api.tokens[token]))
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def test_401_carries_www_authenticate(api, svc):
    bare = api.get("/api/v1/exercises")
    assert bare.status_code == 401 and bare.headers["WWW-Authenticate"] == 'Bearer realm="titangrade"'
    wrong = api.get("/api/v1/exercises", headers=svc.auth("tg_nope"))
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["WWW-Authenticate"]
    assert "titangrade tokens" not in wrong.json()["error"]["message"]  # learners cannot run the CLI


def test_405_carries_allow(api, svc):
    head = api.head(URL, headers=svc.auth(api.tokens["alice"]))
    assert head.status_code == 405 and "HEAD" not in head.headers["Allow"]  # Allow names only what works
    resp = api.delete(URL, headers=svc.auth(api.tokens["alice"]))
    assert resp.status_code == 405 and resp.json()["error"]["code"] == "method_not_allowed"
    assert set(resp.headers["Allow"].split(", ")) == {"GET", "POST"}


def test_validation_messages_are_plain_and_bounded(api, svc):
    headers = svc.auth(api.tokens["alice"])
    resp = api.get(f"{URL}?limit=abc", headers=headers)
    assert resp.status_code == 422 and "query.limit" in resp.json()["error"]["message"]
    odd = api.post(f"{URL}/x/override", json=[["score", 1]], headers=svc.auth(api.tokens["teacher"]))
    message = odd.json()["error"]["message"]
    assert odd.status_code == 422 and "expected" not in message and "argument" not in message
    long_id = "x" * 10_000
    missing = api.get(f"{URL}/{long_id}", headers=headers)
    assert missing.status_code == 422 and len(missing.content) < 500 and "submission_id" in missing.text  # 64 at most
    unknown = api.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}, data={"exercise_id": "e" * 150},
                       headers=headers)
    assert unknown.status_code == 422 and len(unknown.content) < 600  # the form field is capped at 200


@pytest.mark.parametrize("lang", ["zh-CN,zh;q=0.9,en;q=0.5", "zh"])
def test_learner_facing_errors_speak_chinese(api, svc, lang):
    headers = svc.auth(api.tokens["alice"], **{"Accept-Language": lang})
    for resp in (api.get(f"{URL}/nope", headers=headers),
                 api.post(URL, files={"notebook": ("a.ipynb", b"not json")}, headers=headers),
                 api.post(URL, data={"exercise_id": "ch05.svc_sum"}, headers=headers),
                 api.get("/api/v1/exercises/ch05.nope", headers=headers),
                 api.get("/api/v1/exercises", headers={"Accept-Language": lang})):
        assert resp.status_code in (401, 404, 422), resp.text
        assert CJK.search(resp.json()["error"]["message"]), resp.text
    english = api.get("/api/v1/exercises/ch05.nope", headers=svc.auth(api.tokens["alice"]))
    message = english.json()["error"]["message"]
    assert not CJK.search(message) and "GET /api/v1/exercises" in message and "titangrade exercises" not in message


def test_missing_exercise_names_the_form_field_not_a_cli_flag(api, svc):
    import json as _json

    bare = _json.loads(svc.notebook())
    bare["metadata"].pop("titangrade")
    resp = api.post(URL, files={"notebook": ("a.ipynb", _json.dumps(bare).encode())},
                    headers=svc.auth(api.tokens["alice"]))
    message = resp.json()["error"]["message"]
    assert resp.status_code == 422 and "exercise_id" in message and "--exercise" not in message


def test_deeply_nested_json_is_a_422_not_a_500(api, svc):
    deep = b"[" * 5000 + b"]" * 5000
    as_body = api.post(f"{URL}/x/override", content=deep, headers=svc.auth(api.tokens["teacher"],
                                                                         **{"Content-Type": "application/json"}))
    as_notebook = api.post(URL, files={"notebook": ("a.ipynb", deep)}, headers=svc.auth(api.tokens["alice"]))
    assert as_body.status_code == 422 and as_body.json()["error"]["code"] == "nesting_too_deep", as_body.text
    assert as_notebook.status_code == 422 and as_notebook.json()["error"]["code"] == "invalid_json"  # the engine's


@pytest.mark.parametrize("course", ["课程-rl", 'a"b;c\\d'])
def test_gradebook_csv_filename_follows_rfc_6266(api, svc, course):
    resp = api.get(f"/api/v1/courses/{quote(course, safe='')}/gradebook?format=csv",
                   headers=svc.auth(api.tokens["root"]))
    assert resp.status_code == 200 and resp.text.startswith("user,issuer,subject,exercise_id")
    disposition = resp.headers["Content-Disposition"]
    fallback = re.fullmatch(r'attachment; filename="([A-Za-z0-9._-]+)"; filename\*=UTF-8\'\'(\S+)', disposition)
    assert fallback is not None, disposition
    assert fallback.group(2) == quote(f"{course}-gradebook.csv", safe="")


@pytest.mark.parametrize("path", ["/api/v1/courses/a%0D%0ASet-Cookie:%20x=1/gradebook?format=csv",
                                  "/api/v1/courses/%00/gradebook", "/api/v1/submissions?course=%00",
                                  "/api/v1/submissions/%00abc", "/api/v1/tokens/99999999999999999999999999"])
def test_control_characters_and_huge_ids_are_client_errors(api, svc, path):
    method = api.delete if "/tokens/" in path else api.get
    resp = method(path, headers=svc.auth(api.tokens["root"]))
    assert resp.status_code in (404, 422) and "set-cookie" not in resp.headers, resp.text
    assert "\x00" not in resp.text and "\\u0000" not in resp.text


def test_timestamps_are_rfc3339_with_offset(api, svc):
    from sqlalchemy import select

    from service.outbox.models import OutboxEvent

    sid = _submit(api, svc)
    teacher = svc.auth(api.tokens["teacher"])
    sub = api.get(f"{URL}/{sid}", headers=teacher).json()
    assert RFC3339.match(sub["created_at"]) and sub["created_at"].endswith("+00:00")
    api.post(f"{URL}/{sid}/override", json={"score": 1, "reason": "checked"}, headers=teacher).raise_for_status()
    assert RFC3339.match(api.get(f"{URL}/{sid}/overrides", headers=teacher).json()[0]["at"])
    with api.app_state.sessions() as s:
        stamps = [o.payload["timestamp"] for o in s.scalars(select(OutboxEvent))]
    assert stamps and all(RFC3339.match(t) for t in stamps)


def test_upload_limit_is_the_engine_s_limit(api, svc):
    from pydantic import ValidationError

    from grading.pipeline import DEFAULT_MAX_BYTES

    assert api.app_state.settings.max_upload_bytes == DEFAULT_MAX_BYTES
    nb = svc.notebook()
    just_over = nb[:-2] + b" " * (DEFAULT_MAX_BYTES - len(nb) + 1) + nb[-2:]  # 4.77 MiB: under the old 5 MiB
    resp = api.post(URL, files={"notebook": ("a.ipynb", just_over)}, headers=svc.auth(api.tokens["alice"]))
    assert resp.status_code == 413 and resp.json()["error"]["code"] == "too_large"
    with pytest.raises(ValidationError):
        svc.settings("sqlite://", max_upload_bytes=DEFAULT_MAX_BYTES + 1)
