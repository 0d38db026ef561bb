"""NUL and lone surrogates in what clients send, on SQLite and PostgreSQL: a named field refuses them with a
422 naming the field (never the 500 PostgreSQL's DataError made of schemathesis's extension body in CI),
and free text keeps them, cleaned, as visible escapes. A time is RFC 3339 text, never a number."""

from __future__ import annotations

import json

import pytest

# schemathesis's reproducer of CI stop 37, as raw JSON text: a NUL in `issuer`, a surrogate pair in `user`
EXTENSION_BODY = (
    '{"issuer": "\\f\\u0000\\u00a8\\u00e4", "user": "Xj$l\\udad6\\udf50", '
    '"due_at": "0135-01-01T00:00:00.14161Z", "exercise_id": "ch05.svc_broken"}'
)


def _post_raw(api, path, raw: str, token: str):
    return api.post(
        path, content=raw.encode(), headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    )


def test_the_extension_body_schemathesis_found_is_a_422_naming_the_field(api):
    answer = _post_raw(api, "/api/v1/courses/c1/extensions", EXTENSION_BODY, api.tokens["teacher"])
    assert answer.status_code == 422, answer.text
    assert "issuer" in answer.text


@pytest.mark.parametrize(
    "field, value",
    [("user", "al\\u0000ice"), ("user", "al\\ud800ice"), ("issuer", "x\\udc00"), ("exercise_id", "ch05\\u0000")],
)
def test_an_extension_with_a_nul_or_a_lone_surrogate_is_refused(api, field, value):
    body = {"user": "alice", "issuer": "titangrade", "exercise_id": "ch05.svc_sum", "due_at": "2030-01-01T00:00:00Z"}
    raw = json.dumps(body).replace(f'"{body[field]}"', f'"{value}"', 1)
    answer = _post_raw(api, "/api/v1/courses/c1/extensions", raw, api.tokens["teacher"])
    assert answer.status_code == 422, answer.text
    assert field in answer.text


def test_lti_platform_fields_refuse_nul(api):
    body = {"name": "moodle", "issuer": "https://lms.example\\u0000", "client_id": "c",
            "auth_login_url": "https://lms.example/login", "auth_token_url": "https://lms.example/token",
            "keyset_url": "https://lms.example/jwks", "deployment_ids": ["d\\ud800"]}
    raw = json.dumps(body).replace("\\\\", "\\")
    answer = _post_raw(api, "/api/v1/lti/platforms", raw, api.tokens["root"])
    assert answer.status_code == 422, answer.text
    assert "issuer" in answer.text and "deployment_ids" in answer.text


def test_a_path_parameter_with_a_nul_is_a_422(api, svc):
    answer = api.get("/api/v1/courses/c%001/extensions", headers=svc.auth(api.tokens["teacher"]))
    assert answer.status_code == 422, answer.text
    answer = api.get("/api/v1/submissions/ab%00cd", headers=svc.auth(api.tokens["alice"]))
    assert answer.status_code == 422, answer.text


def test_free_text_keeps_nul_and_lone_surrogates_as_visible_escapes(api, svc):
    files = {"notebook": ("nb.ipynb", svc.notebook(), "application/x-ipynb+json")}
    sid = api.post("/api/v1/submissions", files=files, headers=svc.auth(api.tokens["alice"])).json()["id"]
    raw = '{"score": 2.0, "reason": "looked\\u0000 again \\ud800 ok"}'
    answer = _post_raw(api, f"/api/v1/submissions/{sid}/override", raw, api.tokens["teacher"])
    assert answer.status_code == 200, answer.text
    shown = api.get(f"/api/v1/submissions/{sid}", headers=svc.auth(api.tokens["alice"])).json()["override"]
    assert shown["reason"] == "looked\\x00 again \ufffd ok"

    raw = json.dumps({"url": "https://hooks.example/in", "event_types": ["grade.stored"]})[:-1]
    raw += ', "description": "ops \\u0000 team \\udfff"}'
    made = _post_raw(api, "/api/v1/courses/c1/webhooks", raw, api.tokens["teacher"])
    assert made.status_code == 201, made.text
    assert made.json()["description"] == "ops \\x00 team \ufffd"


def test_free_text_past_its_bound_once_cleaned_is_a_422(api, svc):
    files = {"notebook": ("nb.ipynb", svc.notebook(), "application/x-ipynb+json")}
    sid = api.post("/api/v1/submissions", files=files, headers=svc.auth(api.tokens["alice"])).json()["id"]
    raw = json.dumps({"score": 1.0, "reason": "x" * 1990})[:-2] + "\\u0000" * 5 + '"}'  # 1995 -> 2010 once shown
    answer = _post_raw(api, f"/api/v1/submissions/{sid}/override", raw, api.tokens["teacher"])
    assert answer.status_code == 422, answer.text
    assert "reason" in answer.text


@pytest.mark.parametrize("value", [0, 1767225600, 1.5, True])
def test_a_time_must_be_rfc_3339_text_not_a_number(api, svc, value):
    """pydantic reads a number as seconds since 1970; the schema says a date-time string (schemathesis)."""
    answer = api.put(
        "/api/v1/courses/c1/exercises/ch05.svc_sum/schedule",
        json={"opens_at": value, "due_at": "2030-01-01T00:00:00Z"},
        headers=svc.auth(api.tokens["teacher"]),
    )
    assert answer.status_code == 422, answer.text
    assert "opens_at" in answer.text
    good = api.put(
        "/api/v1/courses/c1/exercises/ch05.svc_sum/schedule",
        json={"opens_at": "2029-01-01T00:00:00+08:00", "due_at": "2030-01-01T00:00:00Z"},
        headers=svc.auth(api.tokens["teacher"]),
    )
    assert good.status_code == 200 and good.json()["opens_at"] == "2028-12-31T16:00:00.000+00:00"
