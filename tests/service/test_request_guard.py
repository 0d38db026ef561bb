"""RequestGuard on a real server: unauthenticated bodies are refused before they are read (with or without
Content-Length), bodies are capped by size, and a trailing slash is not redirected."""
from __future__ import annotations

import socket
import time

import httpx


def _raw(live, request_head: bytes, *, body_chunks=(), read_timeout_s: float = 5.0) -> tuple[bytes, float]:
    """Send a request head, then body chunks while the server lets us; return (response, seconds to answer)."""
    sock = socket.create_connection(("127.0.0.1", live.port), timeout=read_timeout_s)
    started = time.monotonic()
    try:
        sock.sendall(request_head)
        for chunk in body_chunks:
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):  # the server answered and closed: that is the point
                break
        sock.settimeout(read_timeout_s)
        data = b""
        while b"\r\n\r\n" not in data:
            part = sock.recv(65536)
            if not part:
                break
            data += part
        return data, time.monotonic() - started
    finally:
        sock.close()


def _head(path: str, *, token: str | None = None, length: int | None = None) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: multipart/form-data; boundary=x"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_unauthenticated_50mb_upload_is_refused_before_the_body(live_api):
    for path in ("/api/v1/submissions", "/api/v1/submissions/abc/override", "/api/v1/tokens"):
        # Only the head is sent: a server that waited for the 50 MB body would time out here.
        answer, took = _raw(live_api, _head(path, length=50_000_000))
        assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
        assert b"www-authenticate: Bearer" in answer.lower().replace(b"bearer", b"Bearer") and took < 4


def test_unauthenticated_chunked_upload_is_refused_before_the_body(live_api):
    chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
    answer, _ = _raw(live_api, _head("/api/v1/submissions", token="tg_wrong"), body_chunks=[chunk] * 3)
    assert answer.startswith(b"HTTP/1.1 401") and b'error="invalid_token"' in answer


def test_authenticated_bodies_are_capped_with_and_without_content_length(live_api):
    token = live_api.tokens["alice"]
    limit = live_api.app.state.settings.max_upload_bytes
    answer, took = _raw(live_api, _head("/api/v1/submissions", token=token, length=limit + 10_000_000))
    assert answer.startswith(b"HTTP/1.1 413") and took < 4
    part = (b'--x\r\nContent-Disposition: form-data; name="notebook"; filename="a.ipynb"\r\n'
            b"Content-Type: application/octet-stream\r\n\r\n")
    opening = f"{len(part):x}\r\n".encode() + part + b"\r\n"
    chunk = b"100000\r\n" + b"x" * 0x100000 + b"\r\n"  # 1 MiB chunks, no Content-Length, until refused
    answer, _ = _raw(live_api, _head("/api/v1/submissions", token=token), body_chunks=[opening] + [chunk] * 12,
                     read_timeout_s=20)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    # JSON endpoints take small bodies only
    body = b'{"reason": "' + b"x" * 100_000 + b'"}'
    big = httpx.post(f"{live_api.url}/api/v1/submissions/abc/override", content=body,
                     headers={"Authorization": f"Bearer {live_api.tokens['teacher']}",
                              "Content-Type": "application/json"})
    assert big.status_code == 413 and big.json()["error"]["code"] == "too_large"


def test_trailing_slash_is_served_not_redirected(live_api):
    headers = {"Authorization": f"Bearer {live_api.tokens['alice']}"}
    resp = httpx.get(f"{live_api.url}/api/v1/submissions/", headers=headers)
    assert resp.status_code == 200 and resp.json() == {"items": []}
