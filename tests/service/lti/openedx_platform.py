"""Open edX's LTI 1.3 consumer as a platform, in its own process under its own venv (.lms-venv, made by
scripts/install.sh: lti-consumer-xblock 11.4.4 with Django 5.2, XBlock 6.1, PyJWT). Every check on what the
tool sends is Open edX's own code from `lti_consumer`; this file is only the HTTP glue that Open edX's
XBlock and `lti_consumer.plugin.views` are in Open edX (they need its LMS; see docs/lms.md, "Verified
against Open edX's consumer").

    .lms-venv/bin/python openedx_platform.py PORT TOOL_URL CLIENT_ID DEPLOYMENT_ID

It prints "ready" once it listens on 127.0.0.1:PORT. Endpoints:

- POST /_start {kind: "resource_link"|"deep_link", user_id, role, resource_link_id, context_id, item?}:
  the login initiation, `LtiAdvantageConsumer.prepare_preflight_url` (the launch data go to Django's cache,
  keyed by the `lti_message_hint`, as in Open edX). `item` (an index into the content items received by
  deep linking) launches that item, with its url and custom parameters
  (`set_dl_content_launch_parameters`). Answers {"url"}: where the browser goes (the tool's login URL).
- GET /authorize: the tool's authorization request; `generate_launch_request` validates it
  (`_validate_preflight_response`: nonce, state, redirect_uri registered, client_id) and signs the id_token,
  a resource-link launch with the AGS claim, or a deep-linking request. Answers JSON {"action", "id_token",
  "state"} where Open edX renders its auto-posting form (the test posts it, the browser's part), or 400.
- POST /deep_link_return (form JWT): `check_and_decode_deep_linking_token` (the signature against the
  tool's JWKS, message type, content types), then each item through Open edX's deep-linking serializer for
  its type (`LTI_DL_CONTENT_TYPE_SERIALIZER_MAP`), as its `deep_linking_response_endpoint` does.
- POST /token: `access_token` (required claims, grant type, the client assertion against the tool's JWKS,
  the scopes it knows).
- POST /lti-ags/1/scores: the bearer token through `check_token` with the score scope (what
  `Lti1p3ApiAuthentication` and `LtiAgsPermissions` call), the body through `LineItemScoreParser` (its
  media type) and `LtiAgsScoreSerializer` (the last score given, for its later-timestamp rule).
- GET /jwks: `get_public_keyset`. GET /_log: what was received and what was refused, and why.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "openedx_settings")

import django

django.setup()

from Cryptodome.PublicKey import RSA  # noqa: E402 - how Open edX's Lti1p3Passport makes its keys
from lti_consumer.api import validate_lti_1p3_launch_data  # noqa: E402
from lti_consumer.data import Lti1p3LaunchData  # noqa: E402
from lti_consumer.lti_1p3.consumer import LtiAdvantageConsumer  # noqa: E402
from lti_consumer.lti_1p3.extensions.rest_framework.constants import LTI_DL_CONTENT_TYPE_SERIALIZER_MAP  # noqa: E402
from lti_consumer.lti_1p3.extensions.rest_framework.parsers import LineItemScoreParser  # noqa: E402
from lti_consumer.lti_1p3.extensions.rest_framework.serializers import LtiAgsScoreSerializer  # noqa: E402
from lti_consumer.utils import get_data_from_cache, get_lti_1p3_context_types_claim  # noqa: E402

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"


def main() -> None:
    port, tool_url, client_id, deployment = sys.argv[1:5]
    issuer = f"http://127.0.0.1:{port}"
    pem = RSA.generate(2048).export_key("PEM").decode()
    lock = threading.Lock()
    log: dict[str, list] = {
        "launches": [],
        "deep_links": [],
        "content_items": [],
        "tokens": [],
        "scores": [],
        "refused": [],
    }
    last_score: dict[str, object] = {}  # userId -> the last score kept (the serializer's `instance`)

    def consumer() -> LtiAdvantageConsumer:
        """What Open edX's `LtiConfiguration.get_lti_consumer` builds for a 1.3 configuration on the DB."""
        c = LtiAdvantageConsumer(
            iss=issuer,
            lti_oidc_url=tool_url + "/lti/login",
            lti_launch_url=tool_url + "/lti/launch",
            client_id=client_id,
            deployment_id=deployment,
            rsa_key=pem,
            rsa_key_id="openedx-key-1",
            redirect_uris=[tool_url + "/lti/launch"],
            tool_keyset_url=tool_url + "/lti/jwks",
        )
        c.enable_ags(lineitems_url=f"{issuer}/lti-ags", lineitem_url=f"{issuer}/lti-ags/1")
        c.enable_deep_linking(tool_url + "/lti/launch", f"{issuer}/deep_link_return")
        return c

    def start(body: dict) -> str:
        item = body.get("item")
        launch = Lti1p3LaunchData(
            user_id=body["user_id"],
            user_role=body["role"],
            config_id="titangrade",
            resource_link_id=body["resource_link_id"],
            context_id=body.get("context_id", "course-v1:edX+T+2026"),
            context_type=["course_offering"],
            launch_presentation_document_target="iframe",
            context_title="titangrade on Open edX",
            message_type="LtiDeepLinkingRequest" if body["kind"] == "deep_link" else "LtiResourceLinkRequest",
            deep_linking_content_item_id=item,
            name=body.get("name"),
        )
        return consumer().prepare_preflight_url(launch)

    def authorize(query: dict) -> dict:
        """Open edX's launch_gate_endpoint, step by step, less its LMS (the LtiConfiguration row and the
        LtiDlContentItem rows): the launch data from the cache, validated, and the claims from them."""
        if not query.get("lti_message_hint") or not query.get("login_hint"):
            raise ValueError("The lti_message_hint or the login_hint is missing or empty.")
        launch = get_data_from_cache(query["lti_message_hint"])
        if launch is None:
            raise ValueError("Unable to find record of an OIDC launch for the provided lti_message_hint")
        valid, messages = validate_lti_1p3_launch_data(launch)
        if not valid:
            raise ValueError(" ".join(messages))
        c = consumer()
        c.set_user_data(user_id=launch.user_id, role=launch.user_role, full_name=launch.name)
        c.set_resource_link_claim(launch.resource_link_id)
        c.set_launch_presentation_claim(document_target=launch.launch_presentation_document_target)
        c.set_context_claim(
            launch.context_id, get_lti_1p3_context_types_claim(launch.context_type), launch.context_title
        )
        if launch.message_type == "LtiDeepLinkingRequest" and launch.user_role not in ("instructor", "staff"):
            raise PermissionError("Deep Linking can only be performed by instructors and staff.")
        if launch.deep_linking_content_item_id is not None:  # Open edX: an LtiDlContentItem row's attributes
            item = log["content_items"][int(launch.deep_linking_content_item_id)]
            c.set_dl_content_launch_parameters(url=item.get("url"), custom=item.get("custom"))
        form = c.generate_launch_request(query)
        with lock:
            log["launches"].append({"message_type": launch.message_type, "user_id": launch.user_id})
        return {"action": query["redirect_uri"], **form}

    def deep_link_return(token: str) -> list:
        items = consumer().check_and_decode_deep_linking_token(token)
        for item in items:
            serializer = LTI_DL_CONTENT_TYPE_SERIALIZER_MAP[item["type"]](data=item)
            if not serializer.is_valid():
                raise ValueError(f"content item refused by Open edX's serializer: {serializer.errors}")
        with lock:
            log["deep_links"].append(token)
            log["content_items"].extend(items)
        return items

    def score(auth: str, ctype: str, raw: bytes) -> dict:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token or " " in token:
            raise PermissionError("Missing LTI 1.3 authentication token.")
        c = consumer()
        try:
            allowed = c.check_token(token, [SCORE_SCOPE])
        except Exception as err:  # Open edX answers any failure here as an invalid signature
            raise PermissionError("Invalid token signature.") from err
        if not allowed:
            raise PermissionError("the token does not carry the score scope")
        if ctype.split(";")[0].strip() != LineItemScoreParser.media_type:
            raise ValueError(f"content type {ctype!r} is not {LineItemScoreParser.media_type}")
        data = LineItemScoreParser().parse(io.BytesIO(raw))
        with lock:
            serializer = LtiAgsScoreSerializer(instance=last_score.get(data.get("userId")), data=data)
            if not serializer.is_valid():
                raise ValueError(f"score refused by Open edX's serializer: {serializer.errors}")
            kept = type("Score", (), dict(serializer.validated_data))()  # the instance a later score is held to
            last_score[serializer.validated_data["user_id"]] = kept
            log["scores"].append({**data, "validated": {k: str(v) for k, v in serializer.validated_data.items()}})
        return data

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_a) -> None:
            pass

        def reply(self, status: int, body: object) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def refuse(self, status: int, err: BaseException) -> None:
            with lock:
                log["refused"].append({"path": self.path, "status": status, "why": f"{type(err).__name__}: {err}"})
            self.reply(status, {"error": type(err).__name__, "detail": str(err)})

        def body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("content-length") or 0))

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path == "/jwks":
                return self.reply(200, consumer().get_public_keyset())
            if parts.path == "/_log":
                with lock:
                    return self.reply(200, log)
            if parts.path == "/authorize":
                try:
                    return self.reply(200, authorize(dict(parse_qsl(parts.query))))
                except PermissionError as err:
                    return self.refuse(403, err)
                except Exception as err:
                    return self.refuse(400, err)
            self.reply(404, {"error": "not found"})

        def do_POST(self) -> None:
            path, raw = urlsplit(self.path).path, self.body()
            try:
                if path == "/_start":
                    return self.reply(200, {"url": start(json.loads(raw))})
                if path == "/deep_link_return":
                    return self.reply(200, {"content_items": deep_link_return(dict(parse_qsl(raw.decode()))["JWT"])})
                if path == "/token":
                    grant = consumer().access_token(dict(parse_qsl(raw.decode())))
                    with lock:
                        log["tokens"].append(grant["scope"])
                    return self.reply(200, grant)
                if path == "/lti-ags/1/scores":
                    return self.reply(
                        201, score(self.headers.get("authorization") or "", self.headers.get("content-type") or "", raw)
                    )
            except PermissionError as err:
                return self.refuse(401, err)
            except Exception as err:
                traceback.print_exc(file=sys.stderr)
                return self.refuse(400, err)
            self.reply(404, {"error": "not found"})

    server = ThreadingHTTPServer(("127.0.0.1", int(port)), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
