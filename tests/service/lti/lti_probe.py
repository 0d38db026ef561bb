"""A platform's network side for the "no network call inside a transaction" tests: a real HTTP server on
loopback (in this process, so it can look at the app's engine) serving a keyset, an OAuth2 token endpoint,
AGS score endpoints and a webhook receiver. While it answers a request it records how many connections of
the watched engine are checked out, and on SQLite whether another writer can take the lock at once."""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from sqlalchemy import event

KID = "probe-key-1"


class CheckoutCounter:
    """Connections of `engine` checked out of its pool right now (pool events, any pool class)."""

    def __init__(self, engine) -> None:
        self.engine, self.out, self._lock = engine, 0, threading.Lock()
        event.listen(engine, "checkout", self._checkout)
        event.listen(engine, "checkin", self._checkin)

    def _checkout(self, *_a) -> None:
        with self._lock:
            self.out += 1

    def _checkin(self, *_a) -> None:
        with self._lock:
            self.out -= 1

    def close(self) -> None:
        event.remove(self.engine, "checkout", self._checkout)
        event.remove(self.engine, "checkin", self._checkin)


def sqlite_writer_free(path: str) -> bool:
    """Can another process-level writer take SQLite's write lock without waiting?"""
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


class ProbeServer:
    """GET /jwks[/<name>] -> the keyset; POST /token -> an access token; POST /lineitems/<id>/scores and
    POST /hook -> 200; GET /memberships/<ctx> -> a roster of one; GET/POST /contexts/<ctx>/lineitems -> no
    line item / a new one. `seen` lists (path, checked-out connections, SQLite writer free) per request."""

    def __init__(self, *, counter: CheckoutCounter, sqlite_path: str | None, delay_s: float = 0.0) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.counter, self.sqlite_path, self.delay_s = counter, sqlite_path, delay_s
        self.seen: list[tuple[str, int, bool | None]] = []
        self.lock = threading.Lock()
        probe = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_a) -> None:
                pass

            def _record(self) -> None:
                free = sqlite_writer_free(probe.sqlite_path) if probe.sqlite_path else None
                with probe.lock:
                    probe.seen.append((self.path, probe.counter.out, free))
                if probe.delay_s:
                    time.sleep(probe.delay_s)

            def _reply(self, status: int, body: object) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                self._record()
                if self.path.startswith("/jwks"):
                    jwk = json.loads(RSAAlgorithm.to_jwk(probe.key.public_key()))
                    return self._reply(200, {"keys": [{**jwk, "kid": KID, "alg": "RS256", "use": "sig"}]})
                if self.path.startswith("/memberships/"):  # an NRPS membership container of one learner
                    return self._reply(200, {"id": probe.url + self.path, "members": [
                        {"user_id": "s-probe", "status": "Active",
                         "roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"]}]})
                if self.path.startswith("/contexts/"):  # an AGS line-item container with no line item yet
                    return self._reply(200, [])
                self._reply(404, {})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self._record()
                if self.path == "/token":
                    return self._reply(200, {"access_token": "probe-token", "token_type": "Bearer",
                                             "expires_in": 3600})
                if self.path.startswith("/contexts/"):  # a line item made in the container
                    return self._reply(201, {"id": probe.url + self.path + "/made-1"})
                self._reply(200, {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def sign(self, claims: dict, *, kid: str = KID) -> str:
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": kid})

    def fetches(self, path: str) -> int:
        with self.lock:
            return sum(1 for p, _, _ in self.seen if p == path)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
