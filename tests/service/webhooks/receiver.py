"""A webhook receiver in its own process: a real HTTP server that verifies every request with the
`standardwebhooks` library and appends what it saw to a JSON-lines file.

    python receiver.py PORT LOG SECRET[,SECRET...] [--status N] [--redirect URL] [--body-bytes N]

Each line: {"webhook_id", "timestamp", "valid", "error", "event_id", "type", "signatures", "scores"}. A valid
request is answered 204 (or --status); an invalid one 400. Used by tests/service/webhooks/ and
tests/benchmarks/bench_webhooks.py.
"""
from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("log")
    parser.add_argument("secrets")
    parser.add_argument("--status", type=int, default=204)
    parser.add_argument("--redirect", default=None)
    parser.add_argument("--body-bytes", type=int, default=0, help="answer with this many bytes of body")
    args = parser.parse_args()
    hooks = [Webhook(s) for s in args.secrets.split(",")]
    lock = threading.Lock()
    out = open(args.log, "a", buffering=1)  # noqa: SIM115 (lives as long as the server)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            headers = dict(self.headers.items())
            entry = {"webhook_id": self.headers.get("webhook-id"), "timestamp": self.headers.get("webhook-timestamp"),
                     "signatures": len((self.headers.get("webhook-signature") or "").split()), "valid": False,
                     "error": "", "event_id": None, "type": None, "path": self.path}
            for hook in hooks:
                try:
                    body = hook.verify(raw, headers)
                except Exception as exc:
                    entry["error"] = str(exc)
                    continue
                entry.update(valid=True, error="", event_id=body["data"]["event_id"], type=body["type"],
                             submission_id=body["data"]["submission_id"], learner=body["data"].get("learner"),
                             scores={k: body["data"].get(k) for k in ("score", "auto_score", "manual_score")})
                break
            with lock:
                out.write(json.dumps(entry) + "\n")
            if args.redirect:
                self.send_response(302)
                self.send_header("Location", args.redirect)
            else:
                self.send_response(args.status if entry["valid"] else 400)
            self.send_header("content-length", str(args.body_bytes))
            self.end_headers()
            try:
                for _ in range(args.body_bytes // 65536):
                    self.wfile.write(b"x" * 65536)
                self.wfile.write(b"x" * (args.body_bytes % 65536))
            except OSError:  # the sender stopped reading: what the bounded read is for
                self.close_connection = True

        def log_message(self, *_args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
