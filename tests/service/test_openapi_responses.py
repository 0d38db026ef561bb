"""The OpenAPI document declares what a database outage answers: 503 `database_unavailable` with Retry-After
and the error schema on every route that reads the database; and the document matches a real outage."""
from __future__ import annotations

import socket

from service import bootstrap
from service.db import make_engine, read_sessions


def _operations(doc: dict):
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            yield path, method, op


def test_every_route_that_reads_the_database_declares_its_503(api):
    doc = api.get("/api/v1/openapi.json").json()
    checked = 0
    for path, method, op in _operations(doc):
        if path == "/healthz":  # answers without the database
            assert "503" not in op["responses"], (method, path)
            continue
        unavailable = op["responses"].get("503")
        assert unavailable is not None, f"{method.upper()} {path} does not declare its 503"
        assert unavailable["headers"]["Retry-After"]["schema"]["type"] == "integer", (method, path)
        if path != "/readyz":  # readiness answers with a body of its own
            schema = unavailable["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path)
        checked += 1
    assert checked >= 10  # the API's routes, not an empty document


def test_a_real_outage_answers_as_declared(api, svc):
    token = api.tokens["alice"]
    doc = api.get("/api/v1/openapi.json").json()
    declared = doc["paths"]["/api/v1/submissions"]["get"]["responses"]["503"]
    with socket.socket() as s:  # a PostgreSQL port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = make_engine(f"postgresql+psycopg://postgres@127.0.0.1:{port}/gone")
    api.app_state.sessions, api.app_state.read_sessions = bootstrap.sessions(engine), read_sessions(engine)
    api.app_state.credential_cache.clear()
    resp = api.get("/api/v1/submissions", headers=svc.auth(token))
    assert resp.status_code == 503 and resp.json()["error"]["code"] == "database_unavailable"
    assert int(resp.headers["retry-after"]) >= declared["headers"]["Retry-After"]["schema"]["minimum"]
    assert set(resp.json()["error"]) == {"code", "message"}
