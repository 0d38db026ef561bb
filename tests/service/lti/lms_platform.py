"""An LTI 1.3 platform for tests, in its own process: a real HTTP server with its own RSA key and JWKS,
an OIDC authorization endpoint, an OAuth2 token endpoint that verifies the tool's JWT client assertion
against the tool's JWKS, AGS line-item score endpoints that validate the payload strictly, an AGS line-item
container (GET with resource_link_id/resource_id/tag filters, POST) with result services, a Names and Role
Provisioning Services membership container (paged with Link: rel="next"), and LTI Dynamic Registration (an
OpenID configuration and a registration endpoint that checks the tool's registration and issues a client id).

No external LMS (Moodle, Canvas) can run here; this harness stands in for one, written from the LTI 1.3,
LTI Advantage Security, AGS 2.0, NRPS 2.0 and LTI Dynamic Registration 1.0 specifications, not from the
tool's code.

    python lms_platform.py PORT TOOL_JWKS_URL CLIENT_ID REDIRECT_URI DEPLOYMENT_ID

Where a real platform answers the authorization request with an auto-posting HTML form, this one answers
JSON {"action", "id_token", "state"} that the test posts (the browser's part). Test-only endpoints:
POST /_sign {claims, key: "platform"|"rogue"} signs arbitrary claims (negative tests); GET /_log returns
what was received (scores, token grants, deep-linking responses, line items made through the container and
from deep-linking answers, roster reads, registrations);
POST /_roster {context, members, page_size, mode} sets a context's roster (mode "loop": the last page links
back to the first; "endless": every page links to a next one; "offsite": the next page is on another
origin; "huge": the page is padded past any sane size); POST /_registration_token issues a one-time
registration token; GET /_lms_frame?src=URL is an LMS page that frames URL and records the messages it
posts. GET /.well-known/openid-configuration?mode=... answers broken configurations for
negative tests (wrong-issuer, no-registration, not-json, array, js-endpoint, no-rs256).

Deep linking: the launch's `deep_linking_settings` come from the login hint (accept_types, accept_multiple,
accept_lineitem, accept_presentation_document_targets), and the return endpoint refuses an answer that
breaks them (a type not accepted, several items when one was asked for, a lineItem when accept_lineitem
is false, a malformed lineItem or window/iframe). Each lineItem becomes a line item `dl-<n>` with its
`resourceId`, readable at GET /lineitems/<id> with a lineitem(.readonly) token. The token endpoint checks
the assertion's deployment_id when it carries one, and grants only the AGS scopes it knows.
"""
from __future__ import annotations

import datetime as dt
import html
import json
import re
import secrets
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ACTIVITY = {"Initialized", "Started", "InProgress", "Submitted", "Completed"}
GRADING = {"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"}
SCORE_KEYS = {"userId", "scoreGiven", "scoreMaximum", "comment", "timestamp", "activityProgress", "gradingProgress",
              "submission"}  # submission: {"startedAt", "submittedAt"} (AGS 2.0, as Canvas documents it)
AGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
LINEITEM_SCOPE = AGS + "lineitem"
LINEITEM_READ_SCOPE = AGS + "lineitem.readonly"
SCOPES = {SCORE_SCOPE, AGS + "lineitem", AGS + "lineitem.readonly", AGS + "result.readonly", NRPS_SCOPE}
CONTAINER_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
RESULTS_TYPE = "application/vnd.ims.lis.v2.resultcontainer+json"
MEMBERSHIP_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
LINEITEM_KEYS = {"scoreMaximum", "label", "resourceId", "resourceLinkId", "tag", "startDateTime", "endDateTime",
                 "gradesReleased"}
PLATFORM_CONF = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONF = "https://purl.imsglobal.org/spec/lti-tool-configuration"
MESSAGE_TYPES = {"LtiResourceLinkRequest", "LtiDeepLinkingRequest"}
ITEM_PATH = re.compile(r"^(?:/contexts/([^/]+))?/lineitems/([^/]+)/(scores|results)$")


def is_url(value: object) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)
DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
DL_ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
DL_DATA = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
ACCEPT_FLAGS = ("accept_multiple", "accept_lineitem", "accept_presentation_document_targets")
# LTI client-side storage (lti.put_data / lti.get_data over postMessage): kept per sender origin, as the
# specification asks, in this page (this browser) only
STORAGE_SCRIPT = """
const store = new Map();
window.addEventListener('message', (e) => {
  const m = e.data || {};
  if (m.subject === 'lti.put_data') {
    store.set(e.origin + ' ' + m.key, m.value);
    e.source.postMessage({subject: 'lti.put_data.response', message_id: m.message_id, key: m.key, value: m.value},
                         e.origin);
  } else if (m.subject === 'lti.get_data') {
    e.source.postMessage({subject: 'lti.get_data.response', message_id: m.message_id, key: m.key,
                          value: store.get(e.origin + ' ' + m.key)}, e.origin);
  }
});
"""


def main() -> None:
    port, tool_jwks, client_id, redirect_uri, deployment = sys.argv[1:6]
    issuer = f"http://127.0.0.1:{port}"
    key, rogue = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))
    kid = "platform-key-1"
    lock = threading.Lock()
    log: dict[str, list] = {"scores": [], "tokens": [], "refused": [], "deep_links": [], "lineitems": [],
                            "roster_reads": [], "registrations": [], "results_reads": [], "line_items": []}
    granted: dict[str, tuple[float, set]] = {}  # access token -> (expiry, scopes)
    clients: dict[str, str] = {client_id: deployment}  # client id -> its deployment (dynamic ones are added)
    rosters: dict[str, dict] = {}  # context -> {members, page_size, mode}
    items: dict[str, dict] = {}  # line items made through the container: name -> item
    reg_tokens: set[str] = set()
    dl_asked: dict[str, dict] = {}  # deep-linking `data` -> the settings that request sent
    line_items: dict[str, dict] = {}  # line item id -> what the deep-linking answer's lineItem said
    seen_jti: set[str] = set()
    latest: dict[tuple[str, str], str] = {}  # (line item, user) -> newest timestamp kept
    results_of: dict[tuple[str, str], dict] = {}  # (line item, user) -> the score kept (the result)

    def sign(claims: dict, *, with_key=key) -> str:
        return jwt.encode(claims, with_key, algorithm="RS256", headers={"kid": kid})

    def verify_tool_jwt(token: str, *, audience: str) -> dict:
        jwks = jwt.PyJWKSet.from_dict(httpx.get(tool_jwks, timeout=5).json())
        header = jwt.get_unverified_header(token)
        match = [k for k in jwks.keys if k.key_id == header.get("kid")]
        if not match:
            raise jwt.InvalidTokenError(f"kid {header.get('kid')!r} is not in the tool's JWKS")
        return jwt.decode(token, match[0].key, algorithms=["RS256"], audience=audience,
                          options={"require": ["exp", "iat", "iss", "aud"]})

    def launch_claims(hint: dict, *, nonce: str, sub: str, client: str) -> dict:
        now = int(time.time())
        claims = {"iss": issuer, "aud": client, "azp": client, "sub": sub, "nonce": nonce,
                  "iat": now, "exp": now + 300, "name": hint.get("name", sub),
                  LTI + "message_type": hint.get("message_type", "LtiResourceLinkRequest"),
                  LTI + "version": "1.3.0", LTI + "deployment_id": clients[client],
                  LTI + "target_link_uri": redirect_uri,
                  LTI + "roles": hint.get("roles", ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"]),
                  LTI + "context": {"id": hint.get("context", "course-1"), "title": "RL infrastructure"},
                  LTI + "resource_link": {"id": hint.get("resource_link") or "rl-" + uuid.uuid4().hex[:12]}}
        if hint.get("locale"):
            claims[LTI + "launch_presentation"] = {"locale": hint["locale"], "document_target": "iframe"}
        if hint.get("exercise_id"):
            claims[LTI + "custom"] = {"exercise_id": hint["exercise_id"]}
            if hint.get("lang"):
                claims[LTI + "custom"]["lang"] = hint["lang"]
        if hint.get("lineitem"):
            claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = {
                "scope": hint.get("scopes", [SCORE_SCOPE]), "lineitem": f"{issuer}/lineitems/{hint['lineitem']}",
                "lineitems": f"{issuer}/lineitems"}
        context = hint.get("context", "course-1")
        if hint.get("lineitems_only"):  # the platform made no column: the tool finds or creates its own
            claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = {
                "scope": [SCORE_SCOPE, AGS + "lineitem", AGS + "result.readonly"],
                "lineitems": f"{issuer}/contexts/{context}/lineitems"}
        if hint.get("roster"):
            claims["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"] = {
                "context_memberships_url": f"{issuer}/memberships/{context}", "service_versions": ["2.0"]}
        if claims[LTI + "message_type"] == "LtiDeepLinkingRequest":
            settings = {"deep_link_return_url": f"{issuer}/deeplink/return",
                        "accept_types": hint.get("accept_types", ["ltiResourceLink"]),
                        "data": hint.get("dl_data", "opaque-dl-data")}
            settings.update({k: hint[k] for k in ACCEPT_FLAGS if k in hint})
            with lock:
                dl_asked[settings["data"]] = settings
            claims[DL_SETTINGS] = settings
        return claims

    def check_content_items(claims: dict) -> str | None:
        """What in a deep-linking answer breaks the settings its request sent (Deep Linking 2.0 section 4)."""
        asked = dl_asked.get(claims.get(DL_DATA))
        if asked is None:
            return "the answer's data names no deep-linking request of this platform"
        items = claims.get(DL_ITEMS)
        if not isinstance(items, list):
            return "content_items must be a list"
        if len(items) > 1 and asked.get("accept_multiple") is not True:
            return f"{len(items)} items, but accept_multiple was not true"
        for item in items:
            if not isinstance(item, dict) or item.get("type") not in asked["accept_types"]:
                return f"an item of type {item.get('type') if isinstance(item, dict) else item!r} was not accepted"
            if item["type"] != "ltiResourceLink":
                continue
            if not isinstance(item.get("url"), str) or not isinstance(item.get("title", ""), str):
                return "an ltiResourceLink needs a url and a string title"
            if not isinstance(item.get("custom", {}), dict) or not all(
                    isinstance(v, str) for v in item.get("custom", {}).values()):
                return "custom must map names to strings"
            targets = asked.get("accept_presentation_document_targets") or []
            for target in ("window", "iframe"):
                if target in item and (target not in targets or not isinstance(item[target], dict)):
                    return f"{target} was not an accepted presentation target"
            if "lineItem" in item:
                if asked.get("accept_lineitem") is False:
                    return "a lineItem was sent, but accept_lineitem was false"
                line = item["lineItem"]
                score_max = line.get("scoreMaximum") if isinstance(line, dict) else None
                if not isinstance(score_max, int | float) or isinstance(score_max, bool) or score_max <= 0:
                    return "lineItem.scoreMaximum must be a number > 0"
                if any(not isinstance(line.get(k, ""), str) for k in ("label", "resourceId", "tag")):
                    return "lineItem label, resourceId and tag must be strings"
        return None

    def validate_score(body: object, user_ok) -> str | None:
        if not isinstance(body, dict):
            return "the body is not a JSON object"
        if set(body) - SCORE_KEYS:
            return f"unknown fields {sorted(set(body) - SCORE_KEYS)}"
        for field in ("userId", "timestamp", "activityProgress", "gradingProgress"):
            if not isinstance(body.get(field), str) or not body[field]:
                return f"{field} is required (a string)"
        if body["activityProgress"] not in ACTIVITY or body["gradingProgress"] not in GRADING:
            return "activityProgress/gradingProgress not in the AGS vocabulary"
        try:
            stamp = dt.datetime.fromisoformat(body["timestamp"])
        except ValueError:
            return "timestamp is not ISO 8601"
        if stamp.tzinfo is None or "." not in body["timestamp"]:
            return "timestamp needs an offset and sub-second precision"
        if "submission" in body:
            sub = body["submission"]
            if not isinstance(sub, dict) or set(sub) - {"startedAt", "submittedAt"}:
                return "submission has only startedAt and submittedAt"
            for value in sub.values():
                try:
                    if not isinstance(value, str) or dt.datetime.fromisoformat(value).tzinfo is None:
                        return "submission times need an offset"
                except ValueError:
                    return "submission times are not ISO 8601"
        if "scoreGiven" in body or "scoreMaximum" in body:
            given, maximum = body.get("scoreGiven"), body.get("scoreMaximum")
            if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (given, maximum)):
                return "scoreGiven and scoreMaximum must both be numbers"
            if maximum <= 0 or given < 0:
                return "scoreMaximum must be > 0 and scoreGiven >= 0"
        elif body["gradingProgress"] == "FullyGraded":
            return "a FullyGraded score needs scoreGiven and scoreMaximum"
        if "comment" in body and not isinstance(body["comment"], str):
            return "comment must be a string"
        return None

    def bearer(handler, scopes: set) -> bool:
        """The request carries a live token granted with one of `scopes`; else it was refused (401)."""
        scheme, _, token = (handler.headers.get("authorization") or "").partition(" ")
        expiry, granted_scopes = granted.get(token, (0, set()))
        if scheme != "Bearer" or expiry < time.time():
            handler.refuse(401, "no valid bearer token")
            return False
        if not granted_scopes & scopes:
            handler.refuse(403, f"the token's scopes {sorted(granted_scopes)} do not allow this")
            return False
        return True

    def openid_configuration(mode: str) -> object:
        config = {
            "issuer": issuer, "authorization_endpoint": f"{issuer}/auth", "token_endpoint": f"{issuer}/token",
            "jwks_uri": f"{issuer}/jwks", "registration_endpoint": f"{issuer}/register",
            "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", *sorted(SCOPES)], "response_types_supported": ["id_token"],
            "id_token_signing_alg_values_supported": ["RS256"], "subject_types_supported": ["public", "pairwise"],
            "claims_supported": ["sub", "iss", "name", "given_name", "family_name", "email"],
            PLATFORM_CONF: {"product_family_code": "lms-harness", "version": "1.0",
                            "messages_supported": [{"type": t} for t in sorted(MESSAGE_TYPES)], "variables": []}}
        if mode == "wrong-issuer":
            config["issuer"] = "https://lms.elsewhere.example"
        elif mode == "no-registration":
            del config["registration_endpoint"]
        elif mode == "js-endpoint":
            config["authorization_endpoint"] = "javascript:alert(1)"
        elif mode == "no-rs256":
            config["id_token_signing_alg_values_supported"] = ["HS256"]
        elif mode == "array":
            return [config]
        return config

    def check_registration(body: object) -> str | None:
        """The tool's client registration, as Dynamic Registration 1.0 (and OIDC DCR) require it."""
        if not isinstance(body, dict):
            return "the registration is not a JSON object"
        if body.get("application_type") != "web":
            return "application_type must be web"
        if "id_token" not in (body.get("response_types") or []):
            return "response_types must include id_token"
        if not {"implicit", "client_credentials"} <= set(body.get("grant_types") or []):
            return "grant_types must include implicit and client_credentials"
        if body.get("token_endpoint_auth_method") != "private_key_jwt":
            return "token_endpoint_auth_method must be private_key_jwt"
        for field in ("initiate_login_uri", "jwks_uri"):
            if not is_url(body.get(field)):
                return f"{field} must be a URL"
        if not isinstance(body.get("redirect_uris"), list) or not body["redirect_uris"] or not all(
                is_url(u) for u in body["redirect_uris"]):
            return "redirect_uris must be a non-empty list of URLs"
        if not isinstance(body.get("client_name"), str) or not body["client_name"]:
            return "client_name is required"
        if not isinstance(body.get("scope"), str) or not set(body["scope"].split()) <= SCOPES:
            return "scope must be a space-separated list of scopes the platform supports"
        conf = body.get(TOOL_CONF)
        if not isinstance(conf, dict) or not isinstance(conf.get("domain"), str) or not conf["domain"]:
            return "the LTI tool configuration needs a domain"
        if urlsplit(body["initiate_login_uri"]).hostname != conf["domain"].split(":")[0]:
            return "initiate_login_uri is not on the tool's domain"
        if not is_url(conf.get("target_link_uri")):
            return "the LTI tool configuration needs a target_link_uri"
        messages = conf.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) and m.get("type") in MESSAGE_TYPES
                                                     for m in messages):
            return "messages must be a list of supported message types"
        if not isinstance(conf.get("claims", []), list):
            return "claims must be a list"
        return None

    def check_lineitem(body: object) -> str | None:
        if not isinstance(body, dict):
            return "the line item is not a JSON object"
        if set(body) - LINEITEM_KEYS - {"id"}:
            return f"unknown line item fields {sorted(set(body) - LINEITEM_KEYS - {'id'})}"
        maximum = body.get("scoreMaximum")
        if not isinstance(maximum, int | float) or isinstance(maximum, bool) or maximum <= 0:
            return "scoreMaximum must be a number > 0"
        if not isinstance(body.get("label"), str) or not body["label"].strip():
            return "label is required"
        for field in ("resourceId", "resourceLinkId", "tag"):
            if field in body and not isinstance(body[field], str):
                return f"{field} must be a string"
        return None

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_a) -> None:
            pass

        def reply(self, status: int, body: object = None, ctype: str = "application/json",
                  headers: dict | None = None, raw: bytes | None = None) -> None:
            if raw is None:
                raw = b"" if body is None else body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(raw)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

        def accepts(self, media_type: str) -> bool:
            if media_type not in (self.headers.get("accept") or ""):
                self.refuse(406, f"Accept must name {media_type}")
                return False
            return True

        def roster_page(self, context: str, q: dict) -> None:
            if not bearer(self, {NRPS_SCOPE}) or not self.accepts(MEMBERSHIP_TYPE):
                return
            with lock:
                roster = rosters.get(context)
                log["roster_reads"].append({"context": context, "page": q.get("page", "1")})
            if roster is None:
                return self.refuse(404, f"no roster for context {context!r}")
            page = int(q.get("page", "1"))
            size, mode, members = roster.get("page_size", 100), roster.get("mode", ""), roster["members"]
            chunk = members[(page - 1) * size: page * size]
            pages = max(1, -(-len(members) // size))
            body = {"id": f"{issuer}/memberships/{context}", "context": {"id": context, "title": "RL infrastructure"},
                    "members": chunk}
            if mode == "huge":
                body["padding"] = "x" * (8 * 1024 * 1024)
            nxt = None
            if mode == "offsite" and page == 1:
                nxt = f"http://localhost:{port}/memberships/{context}?page=2"
            elif page < pages or mode == "endless":
                nxt = f"{issuer}/memberships/{context}?page={page + 1}"
            elif mode == "loop":
                nxt = f"{issuer}/memberships/{context}?page=1"
            links = {"link": f'<{nxt}>; rel="next"'} if nxt else {}
            self.reply(200, body, ctype=MEMBERSHIP_TYPE, headers=links)

        def container(self, context: str, q: dict) -> None:
            if not bearer(self, {AGS + "lineitem", AGS + "lineitem.readonly"}) or not self.accepts(CONTAINER_TYPE):
                return
            with lock:
                found = [i for i in items.values() if i["_context"] == context
                         and all(i.get(k) == q[f] for f, k in (("resource_link_id", "resourceLinkId"),
                                                               ("resource_id", "resourceId"), ("tag", "tag"))
                                 if f in q)]
            self.reply(200, [{k: v for k, v in i.items() if not k.startswith("_")} for i in found],
                       ctype=CONTAINER_TYPE)

        def results(self, item: str, q: dict) -> None:
            if not bearer(self, {AGS + "result.readonly"}) or not self.accepts(RESULTS_TYPE):
                return
            with lock:
                log["results_reads"].append({"lineitem": item, "page": q.get("page", "1")})
                kept = [dict(b) for (i, _), b in sorted(results_of.items()) if i == item]
            page, size = int(q.get("page", "1")), 2
            chunk = kept[(page - 1) * size: page * size]
            base = f"{issuer}{urlsplit(self.path).path}"
            out = [{"id": f"{base}/{r['userId']}", "scoreOf": base.rsplit("/results", 1)[0], "userId": r["userId"],
                    "resultScore": r.get("scoreGiven"), "resultMaximum": r.get("scoreMaximum"),
                    "comment": r.get("comment")} for r in chunk]
            links = {"link": f'<{base}?page={page + 1}>; rel="next"'} if page * size < len(kept) else {}
            self.reply(200, out, ctype=RESULTS_TYPE, headers=links)

        def refuse(self, status: int, why: str) -> None:
            with lock:
                log["refused"].append({"path": self.path, "status": status, "why": why})
            self.reply(status, {"error": why})

        def body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("content-length") or 0))

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/jwks":
                jwk = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
                return self.reply(200, {"keys": [{**jwk, "kid": kid, "alg": "RS256", "use": "sig"}]})
            if url.path == "/_log":
                with lock:
                    return self.reply(200, {**log, "issuer": issuer})
            if url.path == "/_lms_frame":  # the LMS's admin page: the tool's registration URL in a frame
                page = ('<!doctype html><html lang="en"><title>LMS</title><script>window.received = [];'
                        'addEventListener("message", e => window.received.push({origin: e.origin, data: e.data}));'
                        f'</script><iframe title="tool registration" src="{html.escape(q.get("src", ""))}"></iframe>'
                        '</html>')
                return self.reply(200, raw=page.encode(), ctype="text/html; charset=utf-8")
            if url.path == "/.well-known/openid-configuration":
                mode = q.get("mode", "")
                if mode == "not-json":
                    return self.reply(200, raw=b"<html>not json</html>", ctype="text/html")
                return self.reply(200, openid_configuration(mode))
            if url.path.startswith("/memberships/"):
                return self.roster_page(url.path.split("/")[2], q)
            if url.path.startswith("/contexts/") and url.path.endswith("/lineitems"):
                return self.container(url.path.split("/")[2], q)
            match = ITEM_PATH.match(url.path)
            if match and match.group(3) == "results":
                return self.results(match.group(2), q)
            if url.path.startswith("/lineitems/") and url.path.count("/") == 2:
                if not bearer(self, {LINEITEM_SCOPE, LINEITEM_READ_SCOPE}):
                    return None
                with lock:
                    item = line_items.get(url.path.split("/")[2])
                if item is None:
                    return self.refuse(404, "no such line item")
                return self.reply(200, {"id": f"{issuer}{url.path}", **item}, ctype=LINEITEM_TYPE)
            if url.path == "/auth":
                expected = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
                            "prompt": "none", "redirect_uri": redirect_uri}
                bad = [k for k, v in expected.items() if q.get(k) != v]
                bad += [] if q.get("client_id") in clients else ["client_id"]
                bad += [k for k in ("state", "nonce", "login_hint") if not q.get(k)]
                if bad:
                    return self.refuse(400, f"authorization request: bad or missing {bad}")
                hint = json.loads(q.get("lti_message_hint") or "{}")
                token = sign(launch_claims(hint, nonce=q["nonce"], sub=q["login_hint"], client=q["client_id"]))
                if hint.get("autopost"):  # what a real platform answers: a form the browser posts to the tool
                    return self.reply(200, (
                        f'<!doctype html><title>launch</title><form method="post" action="{html.escape(redirect_uri)}">'
                        f'<input type="hidden" name="id_token" value="{html.escape(token)}">'
                        f'<input type="hidden" name="state" value="{html.escape(q["state"])}">'
                        + (f'<input type="hidden" name="lti_storage_target" value="{html.escape(hint["storage"])}">'
                           if hint.get("storage") else "")
                        + "</form><script>document.forms[0].submit()</script>"), ctype="text/html; charset=utf-8")
                return self.reply(200, {"action": redirect_uri, "id_token": token, "state": q["state"]})
            if url.path == "/_frame":  # an LMS page that shows the tool in its iframe (another origin)
                return self.reply(200, (
                    '<!doctype html><html lang="en"><title>LMS course</title><h1>LMS course page</h1>'
                    f'<iframe id="lms" title="titangrade" width="1000" height="800" src="{html.escape(q["src"])}">'
                    "</iframe>" + ("" if q.get("nostore") else f"<script>{STORAGE_SCRIPT}</script>")),
                    ctype="text/html; charset=utf-8")
            self.reply(404, {"error": "no such path"})

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            raw = self.body()
            if url.path == "/_sign":
                spec = json.loads(raw)
                return self.reply(200, {"id_token": sign(spec["claims"], with_key=rogue if spec.get("key") == "rogue"
                                                        else key)})
            if url.path == "/token":
                form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                if (form.get("grant_type") != "client_credentials"
                        or form.get("client_assertion_type") != ASSERTION_TYPE):
                    return self.refuse(400, "unsupported grant or assertion type")
                try:
                    claims = verify_tool_jwt(form.get("client_assertion", ""), audience=f"{issuer}/token")
                except (jwt.InvalidTokenError, httpx.HTTPError, ValueError) as exc:
                    return self.refuse(401, f"client assertion: {exc}")
                if claims.get("iss") not in clients or claims.get("sub") != claims.get("iss"):
                    return self.refuse(401, "client assertion: iss and sub must be the client id")
                if LTI + "deployment_id" in claims and claims[LTI + "deployment_id"] != clients[claims["iss"]]:
                    return self.refuse(401, "client assertion: deployment_id is not a deployment of this tool")
                with lock:
                    if not claims.get("jti") or claims["jti"] in seen_jti:
                        return self.refuse(401, "client assertion: jti missing or replayed")
                    seen_jti.add(claims["jti"])
                asked = set(form.get("scope", "").split())
                if not asked or not asked <= SCOPES:
                    return self.refuse(400, "invalid_scope: scope must name services this platform offers")
                token = secrets.token_urlsafe(24)
                with lock:
                    granted[token] = (time.time() + 3600, asked)
                    log["tokens"].append({"jti": claims["jti"], "scope": sorted(asked), "client": claims["iss"],
                                          "kid": jwt.get_unverified_header(form["client_assertion"]).get("kid"),
                                          "scopes": sorted(asked), "deployment_id": claims.get(LTI + "deployment_id")})
                return self.reply(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                                        "scope": " ".join(sorted(asked))})
            match = ITEM_PATH.match(url.path)
            if match and match.group(3) == "scores":
                if not bearer(self, {SCORE_SCOPE}):
                    return
                if self.headers.get("content-type") != SCORE_TYPE:
                    return self.refuse(415, f"content-type must be {SCORE_TYPE}")
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self.refuse(400, "the body is not JSON")
                why = validate_score(body, None)
                if why:
                    return self.refuse(400, why)
                item = match.group(2)
                with lock:
                    key_ = (item, body["userId"])
                    kept = key_ not in latest or dt.datetime.fromisoformat(latest[key_]) < dt.datetime.fromisoformat(
                        body["timestamp"])
                    if kept:
                        latest[key_] = body["timestamp"]
                        results_of[key_] = body
                    log["scores"].append({"lineitem": item, "kept": kept, **body})
                return self.reply(200, {})
            if url.path.startswith("/contexts/") and url.path.endswith("/lineitems"):
                if not bearer(self, {AGS + "lineitem"}):
                    return
                if self.headers.get("content-type") != LINEITEM_TYPE:
                    return self.refuse(415, f"content-type must be {LINEITEM_TYPE}")
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self.refuse(400, "the body is not JSON")
                why = check_lineitem(body)
                if why:
                    return self.refuse(400, why)
                context = url.path.split("/")[2]
                with lock:
                    name = f"tool-{len(items) + 1}"
                    item = {**body, "id": f"{issuer}/contexts/{context}/lineitems/{name}", "_context": context}
                    items[name] = item
                    log["lineitems"].append({k: v for k, v in item.items() if not k.startswith("_")})
                return self.reply(201, {k: v for k, v in item.items() if not k.startswith("_")}, ctype=LINEITEM_TYPE)
            if url.path == "/_roster":
                spec = json.loads(raw)
                with lock:
                    rosters[spec["context"]] = spec
                return self.reply(200, {})
            if url.path == "/_registration_token":
                token = secrets.token_urlsafe(16)
                with lock:
                    reg_tokens.add(token)
                return self.reply(200, {"registration_token": token})
            if url.path == "/register":
                scheme, _, token = (self.headers.get("authorization") or "").partition(" ")
                with lock:
                    valid = scheme == "Bearer" and token in reg_tokens
                    reg_tokens.discard(token)  # single use
                if not valid:
                    return self.refuse(401, "registration: no valid registration token")
                if not (self.headers.get("content-type") or "").startswith("application/json"):
                    return self.refuse(415, "registration: content-type must be application/json")
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self.refuse(400, "registration: the body is not JSON")
                why = check_registration(body)
                if why:
                    return self.refuse(400, f"registration: {why}")
                with lock:
                    number = len(log["registrations"]) + 1
                    new_client, new_deployment = f"dyn-client-{number}", f"dyn-deployment-{number}"
                    clients[new_client] = new_deployment
                    log["registrations"].append(body)
                answer = {**body, "client_id": new_client,
                          TOOL_CONF: {**body[TOOL_CONF], "deployment_id": new_deployment}}
                return self.reply(200, answer)
            if url.path == "/deeplink/return":
                form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                try:
                    claims = verify_tool_jwt(form.get("JWT", ""), audience=issuer)
                except (jwt.InvalidTokenError, httpx.HTTPError, ValueError) as exc:
                    return self.refuse(401, f"deep-linking response: {exc}")
                if claims.get("iss") != client_id or claims.get(LTI + "message_type") != "LtiDeepLinkingResponse":
                    return self.refuse(400, "deep-linking response: wrong iss or message type")
                if claims.get(LTI + "deployment_id") != deployment:
                    return self.refuse(400, "deep-linking response: wrong deployment_id")
                with lock:
                    why = check_content_items(claims)
                if why:
                    return self.refuse(400, f"deep-linking response: {why}")
                made = []
                with lock:
                    log["deep_links"].append(claims)
                    for item in claims[DL_ITEMS]:
                        if "lineItem" in item:
                            item_id = f"dl-{len(line_items) + 1}"
                            line_items[item_id] = dict(item["lineItem"])
                            log["line_items"].append({"id": item_id, **item["lineItem"]})
                            made.append(item_id)
                return self.reply(200, {"id": str(uuid.uuid4()), "line_items": made})
            self.reply(404, {"error": "no such path"})

    server = ThreadingHTTPServer(("127.0.0.1", int(port)), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
