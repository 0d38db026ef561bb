"""Slow clients cannot hold connections open (service/http_deadlines.py), over real sockets against the real
app under uvicorn with the options `serve` uses: a connection that sends nothing, headers trickled a byte at a
time and an upload body trickled in are each answered 408 and closed; an oversized head is 431; a normal
keep-alive client and an open event stream (past the body deadline) are not affected."""
from __future__ import annotations

import json
import select
import shutil
import socket
import threading
import time

import pytest

HEADER_S, BODY_S = 1.0, 1.5
GIVE_UP_S = 20.0  # the old code never answered: the tests fail after this, they do not hang


@pytest.fixture(scope="module")
def server(sqlite_template, tmp_path_factory, test_catalogue, svc):
    import uvicorn

    from service.app import create_app
    from service.http_deadlines import uvicorn_options

    db = tmp_path_factory.mktemp("deadlines") / "tg.db"
    shutil.copyfile(sqlite_template, db)
    settings = svc.settings(f"sqlite:///{db}", http_header_timeout_s=HEADER_S, http_body_timeout_s=BODY_S,
                            http_max_header_bytes=8192)
    app = create_app(settings, catalogue=test_catalogue)
    tokens = svc.tokens(app.state.sessions)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off",
                            **uvicorn_options(settings))
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the test server did not start"
        time.sleep(0.02)
    yield type("S", (), {"port": port, "tokens": tokens, "app": app, "notebook": svc.notebook()})
    srv.should_exit = True
    thread.join(10)
    app.state.engine.dispose()


def _connect(server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=GIVE_UP_S)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or GIVE_UP_S passes: then fail)."""
    data = b""
    end = time.monotonic() + GIVE_UP_S
    while time.monotonic() < end:
        ready, _, _ = select.select([sock], [], [], 0.2)
        if ready:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    pytest.fail(f"the server kept the connection open; it sent {data[:200]!r}")


def _trickle(sock: socket.socket, chunks) -> bytes:
    """Send `chunks` one every 0.2 s until the server answers; return what it sent before closing."""
    end = time.monotonic() + GIVE_UP_S
    for chunk in chunks:
        if time.monotonic() > end:
            break
        ready, _, _ = select.select([sock], [], [], 0.2)
        if ready:
            return _read_all(sock)
        try:
            sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            return _read_all(sock)
    pytest.fail("the server took the trickled request for as long as it lasted")


def _status(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1])


def _json_body(raw: bytes) -> dict:
    return json.loads(raw.split(b"\r\n\r\n", 1)[1])


def test_a_connection_that_sends_nothing_is_answered_408_and_closed(server):
    with _connect(server) as sock:
        raw = _read_all(sock)
    assert _status(raw) == 408 and b"connection: close" in raw.lower()
    assert _json_body(raw)["error"]["code"] == "request_timeout"


def test_headers_trickled_a_byte_at_a_time_are_cut_off(server):
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        raw = _trickle(sock, (b"a" for _ in range(10_000)))
    assert _status(raw) == 408


def test_an_upload_body_trickled_in_is_408_request_timeout(server):
    boundary = "tgboundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"notebook\"; filename=\"nb.ipynb\"\r\n"
            "Content-Type: application/json\r\n\r\n").encode()
    body = head + server.notebook + f"\r\n--{boundary}--\r\n".encode()
    with _connect(server) as sock:
        sock.sendall(
            (f"POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.tokens['alice']}\r\n"
             f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {len(body)}\r\n\r\n").encode())
        raw = _trickle(sock, (body[i:i + 8] for i in range(0, len(body), 8)))
    assert _status(raw) == 408, raw[:300]
    assert _json_body(raw)["error"]["code"] == "request_timeout"


def test_an_oversized_head_is_431_and_closed(server):
    with _connect(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n")
        raw = _read_all(sock)
    assert _status(raw) == 431


def test_a_prompt_keep_alive_client_and_an_open_event_stream_are_not_cut(server):
    import httpx

    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as client:
        assert client.get("/healthz").status_code in (200, 503)
        made = client.post("/api/v1/submissions", files={"notebook": ("nb.ipynb", server.notebook)},
                           data={"exercise_id": "ch05.svc_sum"},
                           headers={"Authorization": f"Bearer {server.tokens['alice']}"})
        assert made.status_code == 202, made.text  # a whole body sent at once is in well within its deadline
        sid = made.json()["id"]
        with client.stream("GET", f"/api/v1/submissions/{sid}/events",
                           headers={"Authorization": f"Bearer {server.tokens['alice']}"}) as stream:
            frames = stream.iter_lines()
            seen = [next(frames) for _ in range(6)]  # retry, then the queued event's id/event/data lines
            assert any(line.startswith("event: queued") for line in seen), seen
            time.sleep(BODY_S + HEADER_S)  # past both deadlines: the stream's reads are not bounded
            from service.db import transaction
            from service.submissions.models import ProgressEvent

            with transaction(server.app.state.sessions) as s:
                s.add(ProgressEvent(submission_id=sid, event="claimed", data={}))
            rest = []
            for line in frames:
                rest.append(line)
                if line.startswith("event: claimed"):
                    break
            assert rest and rest[-1] == "event: claimed", rest


def test_a_body_arriving_with_its_head_does_not_count_as_head(server):
    """A client that writes head and body at once (the first request of a connection, or a later one) hands
    the server both in one read: the head cap must count the head only. It counted the whole read, so a
    request with a body over HTTP_MAX_HEADER_BYTES (8192 here) was refused 431 whenever the two came
    together."""
    body = json.dumps({"learner": {"subject": "s"}, "notebook": "x" * 30_000}).encode()
    request = (f"POST /api/v1/intake/submissions?integration=none HTTP/1.1\r\nHost: x\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    with _connect(server) as sock:
        sock.sendall(request + request.replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nConnection: close\r\n", 1))
        raw = _read_all(sock)
    statuses = [int(answer.split(b" ", 1)[0]) for answer in raw.split(b"HTTP/1.1 ")[1:]]
    assert statuses == [401, 401], raw[:400]  # the intake's own answer (no signature), never 431
