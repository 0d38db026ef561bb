"""An LTI 1.3 platform for tests, in its own process: a real HTTP server with its own RSA key and JWKS,
an OIDC authorization endpoint, an OAuth2 token endpoint that verifies the tool's JWT client assertion
against the tool's JWKS, and AGS line-item score endpoints that validate the payload strictly.

No external LMS (Moodle, Canvas) can run here; this harness stands in for one, written from the LTI 1.3,
LTI Advantage Security and AGS 2.0 specifications, not from the tool's code.

    python lms_platform.py PORT TOOL_JWKS_URL CLIENT_ID REDIRECT_URI DEPLOYMENT_ID

Where a real platform answers the authorization request with an auto-posting HTML form, this one answers
JSON {"action", "id_token", "state"} that the test posts (the browser's part). Test-only endpoints:
POST /_sign {claims, key: "platform"|"rogue"} signs arbitrary claims (negative tests); GET /_log returns
what was received (scores, token grants, deep-linking responses, the line items it made from them).

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
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
LINEITEM_READ_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
SCOPES = {SCORE_SCOPE, LINEITEM_SCOPE, LINEITEM_READ_SCOPE}
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
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
SCORE_KEYS = {"userId", "scoreGiven", "scoreMaximum", "comment", "timestamp", "activityProgress", "gradingProgress"}


def main() -> None:
    port, tool_jwks, client_id, redirect_uri, deployment = sys.argv[1:6]
    issuer = f"http://127.0.0.1:{port}"
    key, rogue = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))
    kid = "platform-key-1"
    lock = threading.Lock()
    log: dict[str, list] = {"scores": [], "tokens": [], "refused": [], "deep_links": [], "line_items": []}
    granted: dict[str, tuple[float, set[str]]] = {}  # access token -> (expiry, scopes)
    dl_asked: dict[str, dict] = {}  # deep-linking `data` -> the settings that request sent
    line_items: dict[str, dict] = {}  # line item id -> what the deep-linking answer's lineItem said
    seen_jti: set[str] = set()
    latest: dict[tuple[str, str], str] = {}  # (line item, user) -> newest timestamp kept

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

    def launch_claims(hint: dict, *, nonce: str, sub: str) -> dict:
        now = int(time.time())
        claims = {"iss": issuer, "aud": client_id, "azp": client_id, "sub": sub, "nonce": nonce,
                  "iat": now, "exp": now + 300, "name": hint.get("name", sub),
                  LTI + "message_type": hint.get("message_type", "LtiResourceLinkRequest"),
                  LTI + "version": "1.3.0", LTI + "deployment_id": deployment,
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

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_a) -> None:
            pass

        def reply(self, status: int, body: object = None, ctype: str = "application/json") -> None:
            raw = b"" if body is None else body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def refuse(self, status: int, why: str) -> None:
            with lock:
                log["refused"].append({"path": self.path, "status": status, "why": why})
            self.reply(status, {"error": why})

        def bearer(self, *scopes: str) -> bool:
            scheme, _, token = (self.headers.get("authorization") or "").partition(" ")
            expiry, held = granted.get(token, (0.0, set()))
            return scheme == "Bearer" and expiry > time.time() and bool(held & set(scopes))

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
            if url.path.startswith("/lineitems/") and url.path.count("/") == 2:
                if not self.bearer(LINEITEM_SCOPE, LINEITEM_READ_SCOPE):
                    return self.refuse(401, "no valid bearer token with a line-item scope")
                with lock:
                    item = line_items.get(url.path.split("/")[2])
                if item is None:
                    return self.refuse(404, "no such line item")
                return self.reply(200, {"id": f"{issuer}{url.path}", **item}, ctype=LINEITEM_TYPE)
            if url.path == "/auth":
                expected = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
                            "prompt": "none", "client_id": client_id, "redirect_uri": redirect_uri}
                bad = [k for k, v in expected.items() if q.get(k) != v]
                bad += [k for k in ("state", "nonce", "login_hint") if not q.get(k)]
                if bad:
                    return self.refuse(400, f"authorization request: bad or missing {bad}")
                hint = json.loads(q.get("lti_message_hint") or "{}")
                token = sign(launch_claims(hint, nonce=q["nonce"], sub=q["login_hint"]))
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
                if claims.get("iss") != client_id or claims.get("sub") != client_id:
                    return self.refuse(401, "client assertion: iss and sub must be the client id")
                if LTI + "deployment_id" in claims and claims[LTI + "deployment_id"] != deployment:
                    return self.refuse(401, "client assertion: deployment_id is not a deployment of this tool")
                with lock:
                    if not claims.get("jti") or claims["jti"] in seen_jti:
                        return self.refuse(401, "client assertion: jti missing or replayed")
                    seen_jti.add(claims["jti"])
                scopes = set(form.get("scope", "").split())
                if not scopes or scopes - SCOPES:
                    return self.refuse(400, f"scope must be AGS scopes of {sorted(SCOPES)}")
                token = secrets.token_urlsafe(24)
                with lock:
                    granted[token] = (time.time() + 3600, scopes)
                    log["tokens"].append({"jti": claims["jti"], "kid": jwt.get_unverified_header(
                        form["client_assertion"]).get("kid"), "scopes": sorted(scopes),
                        "deployment_id": claims.get(LTI + "deployment_id")})
                return self.reply(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                                        "scope": " ".join(sorted(scopes))})
            if url.path.startswith("/lineitems/") and url.path.endswith("/scores"):
                if not self.bearer(SCORE_SCOPE):
                    return self.refuse(401, "no valid bearer token with the score scope")
                if self.headers.get("content-type") != SCORE_TYPE:
                    return self.refuse(415, f"content-type must be {SCORE_TYPE}")
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self.refuse(400, "the body is not JSON")
                why = validate_score(body, None)
                if why:
                    return self.refuse(400, why)
                item = url.path.split("/")[2]
                with lock:
                    key_ = (item, body["userId"])
                    kept = key_ not in latest or dt.datetime.fromisoformat(latest[key_]) < dt.datetime.fromisoformat(
                        body["timestamp"])
                    if kept:
                        latest[key_] = body["timestamp"]
                    log["scores"].append({"lineitem": item, "kept": kept, **body})
                return self.reply(200, {})
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
