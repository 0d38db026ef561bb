"""Helpers for the LTI tests (a uniquely named module: test modules import it, never `conftest`): the platform
harness (lms_platform.py, its own process) and the browser's part of a launch."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

PLATFORM = Path(__file__).with_name("lms_platform.py")
CLIENT_ID = "titangrade-client-1"
DEPLOYMENT = "deployment-1"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Platform:
    """lms_platform.py in its own process."""

    def __init__(self, *, tool_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, str(PLATFORM), str(self.port), tool_url + "/lti/jwks", CLIENT_ID,
                                      tool_url + "/lti/launch", DEPLOYMENT], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def registration(self, name: str = "harness") -> dict:
        return {"name": name, "issuer": self.url, "client_id": CLIENT_ID, "auth_login_url": self.url + "/auth",
                "auth_token_url": self.url + "/token", "keyset_url": self.url + "/jwks", "deployment_ids": [DEPLOYMENT]}

    def log(self) -> dict:
        return httpx.get(self.url + "/_log", timeout=10).json()

    def sign(self, claims: dict, *, key: str = "platform") -> str:
        return httpx.post(self.url + "/_sign", json={"claims": claims, "key": key}, timeout=10).json()["id_token"]

    def set_roster(self, context: str, members: list[dict], *, page_size: int = 100, mode: str = "") -> None:
        httpx.post(self.url + "/_roster", json={"context": context, "members": members, "page_size": page_size,
                                               "mode": mode}, timeout=10).raise_for_status()

    def registration_token(self) -> str:
        return httpx.post(self.url + "/_registration_token", timeout=10).json()["registration_token"]

    def openid_configuration_url(self, mode: str = "") -> str:
        return self.url + "/.well-known/openid-configuration" + (f"?mode={mode}" if mode else "")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


class Browser:
    """What the user's browser does in a launch: follow the tool's login redirect to the platform, then
    post the platform's id_token and state to the tool's launch URL. Like a browser it keeps cookies (the
    tool binds the login to the browser that started it), so another Browser is another person."""

    def __init__(self, tool: str, platform: Platform) -> None:
        self.tool, self.platform = tool, platform
        self.client = httpx.Client(timeout=30)

    def login_response(self, *, sub: str = "learner-1", client: httpx.Client | None = None,
                       client_id: str = CLIENT_ID, deployment: str = DEPLOYMENT, **hint) -> httpx.Response:
        return (client or self.client).post(self.tool + "/lti/login", data={
            "iss": self.platform.url, "login_hint": sub, "target_link_uri": self.tool + "/lti/launch",
            "lti_message_hint": json.dumps(hint), "client_id": client_id, "lti_deployment_id": deployment},
            follow_redirects=False)

    def login(self, *, sub: str = "learner-1", client: httpx.Client | None = None, client_id: str = CLIENT_ID,
              deployment: str = DEPLOYMENT, **hint) -> dict:
        """Login initiation at the tool; returns the query the tool sends to the platform (state, nonce...)."""
        resp = self.login_response(sub=sub, client=client, client_id=client_id, deployment=deployment, **hint)
        assert resp.status_code == 302, resp.text
        location = resp.headers["location"]
        assert location.startswith(self.platform.url + "/auth?")
        return {"location": location, **{k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}}

    def authorize(self, login: dict) -> dict:
        resp = httpx.get(login["location"], timeout=30)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def post_launch(self, id_token: str, state: str) -> httpx.Response:
        return self.client.post(self.tool + "/lti/launch", data={"id_token": id_token, "state": state})

    def launch(self, *, sub: str = "learner-1", client_id: str = CLIENT_ID, deployment: str = DEPLOYMENT,
               **hint) -> httpx.Response:
        form = self.authorize(self.login(sub=sub, client_id=client_id, deployment=deployment, **hint))
        return self.post_launch(form["id_token"], form["state"])
