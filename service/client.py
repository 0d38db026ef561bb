"""The `titangrade submit` client (upload, follow the event stream, print the result) and
`titangrade submissions notebook` (download what was uploaded)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import quote

import httpx

from grading.text import clean_text, clean_value
from service.states import SubmissionStatus


def _about(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def describe_estimate(event: dict) -> str:
    """One line for a queued submission: its position and when it should start and finish."""
    text = f"  queued: position {event['position']}"
    if event.get("start_in_s") is None:
        reason = "no worker that can run it is up" if not event.get("worker_slots") else "no grading history yet"
        return f"{text}, no estimate ({reason})"
    return (
        f"{text}, starts in about {_about(event['start_in_s'])}, result in about "
        f"{_about(event['finish_in_s'])} ({event['worker_slots']} slot(s); this exercise usually takes "
        f"{_about(event['typical_s'])})"
    )


def _describe(event: dict) -> str | None:
    kind = event.get("event")
    if not isinstance(kind, str):
        return None
    if kind == "estimate":
        return describe_estimate(event)
    if kind == "done" and event.get("status") == SubmissionStatus.SUPERSEDED:
        return f"  superseded by your newer attempt {event.get('superseded_by')}; only that one is graded"
    if kind == "cell":
        return f"  running cell {event.get('index', 0) + 1} of {event.get('total', '?')}"
    return {
        "queued": "  queued",
        "claimed": "  picked up by a worker",
        "started": "  kernel started",
        "checks": "  checking answers",
        "requeued": "  retrying on another worker",
    }.get(kind)


def _follow(client: httpx.Client, sub_id: str) -> None:
    """Print progress until the run's `done`; a stream that ends at its time limit is resumed from the last
    event id, and 204 means the run is already done."""
    last_id: str | None = None
    while True:
        headers = {"Last-Event-ID": last_id} if last_id else {}
        with client.stream("GET", f"/api/v1/submissions/{sub_id}/events", headers=headers, timeout=None) as resp:
            if resp.status_code == 204:
                return
            resp.raise_for_status()
            for line in resp.iter_lines():
                if line.startswith("id: "):
                    last_id = line[4:].strip()
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                if (text := _describe(event)) is not None:
                    print(text, file=sys.stderr, flush=True)
                if event.get("event") == "done":
                    return


def submit_and_follow(
    *, url: str, token: str, notebook: str, exercise_id: str | None, lang: str | None, as_json: bool
) -> int:
    path = Path(notebook)
    if not path.is_file():
        sys.exit(f"titangrade: {notebook} does not exist")
    headers = {"Authorization": f"Bearer {token}"}
    if lang:
        headers["Accept-Language"] = lang
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        data = {"exercise_id": exercise_id} if exercise_id else {}
        resp = client.post("/api/v1/submissions", files={"notebook": (path.name, path.read_bytes())}, data=data)
        if resp.status_code >= 400:
            code, message = _error_parts(resp)
            sys.exit(f"titangrade: rejected ({resp.status_code} {code}): {message}")
        sub_id = resp.json()["id"]
        print(f"submitted {path.name} as {sub_id}", file=sys.stderr)
        _follow(client, sub_id)
        got = client.get(f"/api/v1/submissions/{sub_id}")
        if got.status_code != 200:
            code, message = _error_parts(got)
            sys.exit(
                f"titangrade: could not read the result of {sub_id}: {got.status_code} {code}: {message}; "
                "try again later"
            )
        sub = got.json()
    _safe_streams()
    print(json.dumps(clean_value(sub), indent=2) if as_json else render_submission(sub))
    return 0 if sub.get("status") == SubmissionStatus.GRADED else 1


def download_notebook(*, url: str, token: str, submission_id: str, out: str) -> int:
    """Write the submission's notebook, byte for byte as uploaded, to `out` ("-": standard output)."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        resp = client.get(f"/api/v1/submissions/{quote(submission_id, safe='')}/notebook")
    if resp.status_code != 200:
        code, message = _error_parts(resp)
        sys.exit(f"titangrade: could not download {clean_text(submission_id)}: {resp.status_code} {code}: {message}")
    if out == "-":
        sys.stdout.buffer.write(resp.content)
        sys.stdout.flush()
    else:
        Path(out).write_bytes(resp.content)
        print(f"wrote {out} ({len(resp.content)} bytes)", file=sys.stderr)
    return 0


def _error_parts(resp: httpx.Response) -> tuple[str, str]:
    """(code, message) of the error schema, else ("", the body's start), cleaned: the message can quote the
    notebook (its exercise id). Never a KeyError on a body of another shape."""
    try:
        err = resp.json().get("error", {}) if "json" in resp.headers.get("content-type", "") else {}
    except (ValueError, AttributeError):
        err = {}
    if not isinstance(err, dict):
        err = {}
    return clean_text(str(err.get("code", ""))), clean_text(str(err.get("message", resp.text[:300])))


def _safe_streams() -> None:
    """A terminal whose encoding lacks a character gets an escape, not a UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def render_submission(sub: dict) -> str:
    """The terminal report of one submission as the API sent it; every string is normalised again
    (grading/text.py), so nothing the server stored can move the cursor, recolour or reorder a terminal."""
    sub = clean_value(sub)
    lines = [
        f"{sub.get('exercise_id', '?')} attempt {sub.get('attempt', '?')}: {sub.get('status', '?')}, "
        f"score {sub.get('score')} / {sub.get('max_score')}"
    ]
    for check in sub.get("checks") or []:
        mark = "PASS" if check.get("passed") else "FAIL"
        lines.append(
            f"  [{mark}] {check.get('name', '?')}: {check.get('score')}/{check.get('max_score')} "
            f"{check.get('feedback', '')}".rstrip()
        )
    if sub.get("message"):
        lines.append(f"  {sub['message']}")
    return "\n".join(lines)
