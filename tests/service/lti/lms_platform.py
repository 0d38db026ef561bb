"""An LTI 1.3 platform for tests, in its own process: a real HTTP server with its own RSA key and JWKS,
an OIDC authorization endpoint, an OAuth2 token endpoint that verifies the tool's JWT client assertion
against the tool's JWKS, and AGS line-item score endpoints that validate the payload strictly.

No external LMS (Moodle, Canvas) can run here; this harness stands in for one, written from the LTI 1.3,
LTI Advantage Security and AGS 2.0 specifications, not from the tool's code.

    python lms_platform.py PORT TOOL_JWKS_URL CLIENT_ID REDIRECT_URI DEPLOYMENT_ID

Where a real platform answers the authorization request with an auto-posting HTML form, this one answers
JSON {"action", "id_token", "state"} that the test posts (the browser's part). Test-only endpoints:
POST /_sign {claims, key: "platform"|"rogue"} signs arbitrary claims (negative tests); GET /_log returns
what was received (scores, token grants, deep-linking responses).
"""
from __future__ import annotations

import datetime as dt
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
SCORE_KEYS = {"userId", "scoreGiven", "scoreMaximum", "comment", "timestamp", "activityProgress", "gradingProgress",
              "submission"}  # submission: {"startedAt", "submittedAt"} (AGS 2.0, as Canvas documents it)


def main() -> None:
    port, tool_jwks, client_id, redirect_uri, deployment = sys.argv[1:6]
    issuer = f"http://127.0.0.1:{port}"
    key, rogue = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))
    kid = "platform-key-1"
    lock = threading.Lock()
    log: dict[str, list] = {"scores": [], "tokens": [], "refused": [], "deep_links": []}
    granted: dict[str, float] = {}  # access token -> expiry
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
                  LTI + "resource_link": {"id": hint.get("resource_link", "rl-1")}}
        if hint.get("exercise_id"):
            claims[LTI + "custom"] = {"exercise_id": hint["exercise_id"]}
        if hint.get("lineitem"):
            claims["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = {
                "scope": [SCORE_SCOPE], "lineitem": f"{issuer}/lineitems/{hint['lineitem']}",
                "lineitems": f"{issuer}/lineitems"}
        if claims[LTI + "message_type"] == "LtiDeepLinkingRequest":
            claims["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = {
                "deep_link_return_url": f"{issuer}/deeplink/return", "accept_types": ["ltiResourceLink"],
                "data": "opaque-dl-data"}
        return claims

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

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_a) -> None:
            pass

        def reply(self, status: int, body: object = None, ctype: str = "application/json") -> None:
            raw = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

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
            if url.path == "/auth":
                expected = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
                            "prompt": "none", "client_id": client_id, "redirect_uri": redirect_uri}
                bad = [k for k, v in expected.items() if q.get(k) != v]
                bad += [k for k in ("state", "nonce", "login_hint") if not q.get(k)]
                if bad:
                    return self.refuse(400, f"authorization request: bad or missing {bad}")
                hint = json.loads(q.get("lti_message_hint") or "{}")
                token = sign(launch_claims(hint, nonce=q["nonce"], sub=q["login_hint"]))
                return self.reply(200, {"action": redirect_uri, "id_token": token, "state": q["state"]})
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
                with lock:
                    if not claims.get("jti") or claims["jti"] in seen_jti:
                        return self.refuse(401, "client assertion: jti missing or replayed")
                    seen_jti.add(claims["jti"])
                if SCORE_SCOPE not in form.get("scope", "").split():
                    return self.refuse(400, "scope must include the AGS score scope")
                token = secrets.token_urlsafe(24)
                with lock:
                    granted[token] = time.time() + 3600
                    log["tokens"].append({"jti": claims["jti"], "kid": jwt.get_unverified_header(
                        form["client_assertion"]).get("kid")})
                return self.reply(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                                        "scope": SCORE_SCOPE})
            if url.path.startswith("/lineitems/") and url.path.endswith("/scores"):
                scheme, _, token = (self.headers.get("authorization") or "").partition(" ")
                if scheme != "Bearer" or granted.get(token, 0) < time.time():
                    return self.refuse(401, "no valid bearer token")
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
                with lock:
                    log["deep_links"].append(claims)
                return self.reply(200, {"id": str(uuid.uuid4())})
            self.reply(404, {"error": "no such path"})

    server = ThreadingHTTPServer(("127.0.0.1", int(port)), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
