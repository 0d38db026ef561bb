"""The client for a platform's Advantage services against a real HTTP server in this process that answers
what a broken or hostile platform might: redirects, non-JSON, JSON nested past the parser's depth, NaN,
relative and multiple Link headers, a 401 that a fresh token cures. Each is a PlatformError, never a crash."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ANSWERS: dict[str, tuple[int, bytes, dict]] = {
    "/redirect": (302, b"", {"location": "http://169.254.169.254/"}),
    "/not-json": (200, b"<html>", {}),
    "/deep": (200, b"[" * 100_000 + b"]" * 100_000, {}),
    "/scalar": (200, b"42", {}),
    "/error": (500, b"upstream exploded", {}),
    "/p1": (200, b"[1]", {"link": '</p2?x=1>; rel="next", </p1>; rel="first"'}),
    "/p2": (200, b"[2]", {"link": '<http://other.example/p3>; rel="prev", </p3>; rel=next'}),
    "/p3": (200, b"[3]", {}),
}


@pytest.fixture(scope="module")
def server():
    seen: list[tuple[str, str]] = []
    tokens = iter(f"token-{i}" for i in range(100))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_a) -> None:
            pass

        def answer(self, status: int, raw: bytes, headers: dict) -> None:
            self.send_response(status)
            self.send_header("content-length", str(len(raw)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append((self.path, ""))
            self.answer(200, json.dumps({"access_token": next(tokens), "expires_in": 3600}).encode(), {})

        def do_GET(self) -> None:
            auth = self.headers.get("authorization", "")
            seen.append((self.path, auth))
            if self.path == "/stale":  # the first token is refused (revoked early), the next one works
                first = sum(p == "/stale" for p, _ in seen) == 1
                return self.answer(401, b"{}", {}) if first else self.answer(200, b'{"ok": true}', {})
            path = self.path.split("?")[0]
            self.answer(*ANSWERS.get(path, (404, b"", {})))

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    httpd.url, httpd.seen = f"http://127.0.0.1:{httpd.server_port}", seen
    yield httpd
    httpd.shutdown()


@pytest.fixture
def calls(tmp_path):
    from service.lti.calls import PlatformCalls
    from service.lti.keys import KeyStore
    from service.outbox.ssrf import AddressPolicy, make_client

    return PlatformCalls(make_client(AddressPolicy(enforce=False), timeout_s=10, max_connections=2),
                         KeyStore(tmp_path / "keys", retention_s=0), max_bytes=1024 * 1024, max_pages=5)


def grant(server):
    from service.lti.calls import Grant

    return Grant(token_url=server.url + "/token", client_id="c1")


@pytest.mark.parametrize("path,why", [("/redirect", "redirect"), ("/not-json", "not JSON"), ("/deep", "not JSON"),
                                      ("/scalar", "neither an object nor an array"), ("/error", "HTTP 500")])
def test_bad_answers_are_platform_errors(server, calls, path, why):
    from service.lti.calls import PlatformError

    with pytest.raises(PlatformError, match=why) as caught:
        calls.request("GET", server.url + path, grant=grant(server), scopes=("s",), accept="application/json",
                      what="test service")
    assert caught.value.status_code == 502


def test_paging_follows_relative_next_links_only(server, calls):
    pages = list(calls.pages(server.url + "/p1", grant=grant(server), scopes=("s",), accept="application/json",
                             what="test service"))
    assert [p.data for p in pages] == [[1], [2], [3]]
    assert [p for p, _ in server.seen if p.startswith("/p")][-3:] == ["/p1", "/p2?x=1", "/p3"]


def test_a_401_gets_one_fresh_token(server, calls):
    page = calls.request("GET", server.url + "/stale", grant=grant(server), scopes=("a",), accept="application/json",
                         what="test service")
    assert page.data == {"ok": True}
    first, second = [a for p, a in server.seen if p == "/stale"]
    assert first != second and calls.token_requests == 2
