"""What a platform answers is untrusted: a keyset or a token answer nested past the JSON parser's depth, or
of the wrong shape, is a refused platform (a 502 or a failed delivery), never an uncaught error. Real HTTP:
a local server answers the raw bytes."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from service.lti.ags import AgsSender, AgsWork
from service.lti.errors import LtiError
from service.lti.keys import KeyStore
from service.lti.tokens import MAX_JWKS_BYTES, JwksCache

DEEP = b"[" * 60_000 + b"]" * 60_000  # well under the keyset cap, far past the parser's recursion limit
ANSWERS = {"/deep": DEEP, "/list": b"[]", "/scalar": b"3"}


@pytest.fixture(scope="module")
def server():
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_a) -> None:
            pass

        def _answer(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            raw = ANSWERS.get(self.path, b"{}")
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        do_GET = do_POST = _answer

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_a_keyset_nested_past_the_parser_is_an_unavailable_keyset(server):
    assert len(DEEP) < MAX_JWKS_BYTES
    cache = JwksCache(httpx.Client(timeout=10), ttl_s=60)
    for path in ("/deep", "/list", "/scalar"):
        with pytest.raises(LtiError) as refused:
            cache.key(server + path, "kid-1")
        assert refused.value.code == "lti_jwks_unavailable" and refused.value.status_code == 502


@pytest.mark.parametrize("path", ["/deep", "/list", "/scalar"])
def test_a_token_answer_of_the_wrong_shape_is_a_failed_delivery(server, tmp_path, path):
    sender = AgsSender(httpx.Client(timeout=10), KeyStore(tmp_path / "keys", retention_s=3600))
    result = sender.send(AgsWork(token_url=server + path, client_id="c", url=server + "/scores", body="{}"))
    assert not result.ok and result.status_code is None and result.error
