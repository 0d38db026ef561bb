"""`titangrade submit` (service/client.py) over real HTTP: a result with hostile strings from a kernel is printed
safely, and a route that fails is reported in words, never as a KeyError traceback."""

from __future__ import annotations

import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

UNSAFE_OUTPUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
FEEDBACK = "got '\ud800' \x1b[2J\x1b]0;owned\x07\u202eevil\r\x00"


def _grade_when_queued(state, *, feedback: str) -> threading.Thread:
    """A grader thread: claims the upload's job once it is queued and stores a result as a worker would."""
    from service.db import transaction
    from grading.result import GradeResult
    from service.grades.service import record_grade
    from service.queue import service as queue

    def run() -> None:
        deadline = time.monotonic() + 30
        job = None
        while job is None and time.monotonic() < deadline:
            with transaction(state.sessions) as s:
                job = queue.claim(s, worker_id="w", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)
            time.sleep(0.05)
        assert job is not None
        result = {"exercise_id": "ch05.svc_sum", "status": "error", "score": 0.0, "max_score": 3.0,
                  "checks": [{"name": "total_value", "score": 0.0, "max_score": 2.0, "passed": False,
                              "feedback": feedback, "title": ""}],
                  "message": "cell 1 raised ValueError: \x1b[31mred\u202e\r", "duration_s": 0.1}
        with transaction(state.sessions) as s:
            assert queue.complete(s, job=job)
            record_grade(s, submission_id=job.submission_id, result=GradeResult.from_dict(result))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("as_json", [False, True])
def test_submit_prints_a_result_with_hostile_strings_safely(live_api, svc, tmp_path, capsys, as_json):
    """A lone surrogate in feedback made GET /submissions/{id} answer 500 and `titangrade submit` crash with a
    KeyError on the error body; ESC, OSC, CR, NUL and U+202E would have reached the terminal."""
    import json

    from service.client import submit_and_follow

    notebook = tmp_path / "a.ipynb"
    notebook.write_bytes(svc.notebook())
    grader = _grade_when_queued(live_api.app.state, feedback=FEEDBACK)
    code = submit_and_follow(url=live_api.url, token=live_api.tokens["alice"], notebook=str(notebook),
                             exercise_id=None, lang=None, as_json=as_json)
    grader.join(30)
    out = capsys.readouterr().out
    assert code == 1  # an error grade, not a crash
    assert UNSAFE_OUTPUT.search(out.replace("\n", " ")) is None, ascii(out)
    feedback = json.loads(out)["checks"][0]["feedback"] if as_json else out
    assert "got '\ufffd' \\u202eevil\n\\x00" in feedback


class _FailingReads(BaseHTTPRequestHandler):
    """An API whose upload works, whose run is already done (204) and whose result read fails with a 500."""

    def _send(self, code: int, body: bytes = b"") -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send(202, b'{"id": "s1", "status": "queued"}')

    def do_GET(self) -> None:
        if self.path.endswith("/events"):
            self._send(204)
        else:
            self._send(500, b'{"error": {"code": "internal_error", "message": "boom \\u001b[2J"}}')

    def log_message(self, *_args) -> None:
        pass


def test_submit_reports_a_failing_result_read_in_words(svc, tmp_path):
    """A result read that answers an error ends with the route's status, code and message (cleaned), not a
    KeyError on the error body."""
    from service.client import submit_and_follow

    notebook = tmp_path / "a.ipynb"
    notebook.write_bytes(svc.notebook())
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FailingReads)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(SystemExit) as ended:
            submit_and_follow(url=f"http://127.0.0.1:{server.server_port}", token="t", notebook=str(notebook),
                              exercise_id=None, lang=None, as_json=False)
    finally:
        server.shutdown()
        server.server_close()
    assert ended.value.code == "titangrade: could not read the result of s1: 500 internal_error: boom ; try again later"
