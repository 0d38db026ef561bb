"""The OpenAPI document: every 4xx and the 503 of a database outage declared with the one error schema, the
bearer scheme, and links that tell clients (and schemathesis' stateful tests) how a new submission's id feeds
the other endpoints."""

from __future__ import annotations

from html import escape
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse

from service.http_errors import ErrorBody

SWAGGER_UI = "/static/swagger-ui"  # the service's own copy of swagger-ui-dist (its VERSION file says which)
# The docs page runs only this origin's scripts and styles (Swagger UI sets its inline styles through the DOM,
# which CSP allows), fetches only the schema and the API it documents, and is never framed.
DOCS_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}
DESCRIPTIONS = {
    400: "malformed body",
    401: "no valid credential (see WWW-Authenticate)",
    403: "authenticated, but not allowed here",
    404: "no such resource (or not yours)",
    405: "method not allowed (see Allow)",
    409: "conflict",
    413: "body too large",
    422: "invalid request",
    429: "too many requests (see Retry-After)",
    502: "an upstream service (the LMS platform) refused, failed or answered something invalid",
    503: "could not be stored now, nothing was kept; retry (see Retry-After)",
}
# Every route that reads the database answers 503 `database_unavailable` while it cannot be reached
# (service/outage.py); /healthz never asks it, /readyz answers the outage with a body of its own.
DB_UNAVAILABLE = (
    "the database cannot be reached now (`database_unavailable`); nothing was changed; retry after Retry-After"
)
RETRY_AFTER = {"description": "seconds to wait before retrying", "schema": {"type": "integer", "minimum": 1}}
NO_DATABASE = {"/healthz"}
OWN_BODY_503 = {"/readyz"}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: each status described, with the error schema."""
    return {s: {"model": ErrorBody, "description": DESCRIPTIONS[s]} for s in statuses}


def _links(paths: dict) -> None:
    def op_id(path: str, method: str) -> str | None:
        return paths.get(path, {}).get(method, {}).get("operationId")

    sub = "/api/v1/submissions/{submission_id}"
    created = paths.get("/api/v1/submissions", {}).get("post", {}).get("responses", {})
    links = {}
    for name, path, method in (
        ("GetSubmission", sub, "get"),
        ("SubmissionEvents", sub + "/events", "get"),
        ("DownloadNotebook", sub + "/notebook", "get"),
        ("RegradeSubmission", sub + "/regrade", "post"),
        ("OverrideScore", sub + "/override", "post"),
        ("ListOverrides", sub + "/overrides", "get"),
    ):
        if (target := op_id(path, method)) is not None:
            links[name] = {"operationId": target, "parameters": {"submission_id": "$response.body#/id"}}
    for status in ("200", "202"):
        if status in created:
            created[status]["links"] = links
    made = paths.get("/api/v1/tokens", {}).get("post", {}).get("responses", {}).get("201")
    if made is not None and (target := op_id("/api/v1/tokens/{token_id}", "delete")):
        made["links"] = {"RevokeToken": {"operationId": target, "parameters": {"token_id": "$response.body#/id"}}}


def build_openapi(app: FastAPI, *, api_prefix: str, public_paths: set[str]) -> dict:
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["ErrorBody"] = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
    for sub_name, sub_schema in schemas["ErrorBody"].pop("$defs", {}).items():
        schemas[sub_name] = sub_schema
    for path, ops in schema.get("paths", {}).items():
        for op in ops.values():
            responses = op.setdefault("responses", {})
            statuses = {422} if op.get("parameters") or "requestBody" in op else set()
            if path.startswith(api_prefix + "/") and path not in public_paths:
                statuses.add(401)
            if "requestBody" in op:
                statuses |= {400, 413}
            if any(p.get("in") == "path" for p in op.get("parameters", [])):
                statuses.add(404)
            for status in statuses:
                responses.setdefault(str(status), {"description": DESCRIPTIONS[status]})
            if path not in NO_DATABASE:
                unavailable = responses.setdefault("503", {"description": DB_UNAVAILABLE})
                unavailable.setdefault("headers", {})["Retry-After"] = RETRY_AFTER
            for status, body in responses.items():
                if status.startswith("4") or (status == "503" and path not in OWN_BODY_503):
                    body["content"] = {"application/json": {"schema": ERROR_REF}}
    _links(schema["paths"])
    return schema


def docs_page(*, title: str, openapi_url: str) -> HTMLResponse:
    """Swagger UI from the service itself: no CDN (clusters often have no internet, and a floating CDN
    version with no integrity check would run whatever it serves in this origin)."""
    html = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{escape(title)} API</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{SWAGGER_UI}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-openapi="{escape(openapi_url)}"></div>
<script src="{SWAGGER_UI}/swagger-ui-bundle.js"></script>
<script src="/static/docs.js"></script>
</body>
</html>
"""
    return HTMLResponse(html, headers=DOCS_HEADERS)
