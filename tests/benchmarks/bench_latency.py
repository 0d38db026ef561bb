"""Latency benchmark (a script, not a test): HTTP submit -> graded on an idle `titangrade serve`, side by
side with `jupyter execute` of the same notebook, interleaved; plus the service's memory.

    .venv/bin/python tests/benchmarks/bench_latency.py [--n 10] [--pg URL] [--sandbox auto] [--pause-s 2]

It starts `titangrade serve` itself with its default settings (a fresh SQLite file, or a fresh schema in
the PostgreSQL database at --pg), grades ch07.wordle_reward's reference solution once per worker slot to
start the pool, then alternates (A B, B A, ...): one submission followed on its event stream until `done`
(what `titangrade submit` does), and one `jupyter execute` of the same notebook (nbclient's own CLI, a
whole process, no grading). Between runs it pauses --pause-s so the service is idle again (warm kernels
refilled). It reports medians, the ratio, where a submission's time goes (progress events), and memory:
the server's idle RSS and the RSS (and PSS, shared pages split) per worker slot of its pool processes and
warm kernels.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from benchkit import FreshDatabase, start_serve  # noqa: E402

NOTEBOOK = REPO / "reference" / "ch07.wordle_reward" / "solution.ipynb"
EXERCISE = "ch07.wordle_reward"


class Database(FreshDatabase):
    """A fresh SQLite file or PostgreSQL schema, migrated; a PostgreSQL schema is dropped afterwards."""

    def __init__(self, pg_url: str | None, workdir: Path) -> None:
        super().__init__(pg_url=pg_url, workdir=workdir, prefix="lat")

    def timeline(self, submission_id: str) -> list[tuple[str, float]]:
        """(event, seconds after the submission row was written) for every progress event of its run."""
        from sqlalchemy import select

        from service import bootstrap
        from service.submissions.models import ProgressEvent, Submission

        with bootstrap.sessions(self.engine)() as s:
            created = s.get(Submission, submission_id).created_at
            rows = s.execute(
                select(ProgressEvent.event, ProgressEvent.created_at)
                .where(ProgressEvent.submission_id == submission_id)
                .order_by(ProgressEvent.id)
            ).all()
        return [(event, (at - created).total_seconds()) for event, at in rows]


def start_server(db: Database, workdir: Path, sandbox: str) -> tuple[subprocess.Popen, str]:
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        TITANGRADE_DATABASE_URL=db.url,
        TITANGRADE_SANDBOX=sandbox,
        TITANGRADE_SECRET_KEY="b" * 40,
    )
    return start_serve(args=["--no-deliver"], env=env, workdir=workdir, log=workdir / "server.log")


def submit_and_follow(client: httpx.Client, nb: bytes) -> tuple[str, float, float]:
    """Submit, follow the event stream until `done` (as `titangrade submit` does); (id, seconds, POST seconds)."""
    t0 = time.perf_counter()
    resp = client.post("/api/v1/submissions", files={"notebook": ("nb.ipynb", nb)}, data={"exercise_id": EXERCISE})
    resp.raise_for_status()
    posted = time.perf_counter() - t0
    sid = resp.json()["id"]
    with client.stream("GET", f"/api/v1/submissions/{sid}/events", timeout=300) as events:
        for line in events.iter_lines():
            if line.startswith("data: ") and json.loads(line[6:]).get("event") == "done":
                data = json.loads(line[6:])
                break
        else:
            raise SystemExit(f"event stream of {sid} ended without done")
    elapsed = time.perf_counter() - t0
    if data.get("status") != "graded" or data.get("score") != data.get("max_score"):
        raise SystemExit(f"{sid}: expected full marks, got {data}")
    return sid, elapsed, posted


def jupyter_execute(workdir: Path) -> float:
    copy = workdir / "plain.ipynb"
    shutil.copy(NOTEBOOK, copy)
    jupyter = Path(sys.executable).with_name("jupyter")
    t0 = time.perf_counter()
    subprocess.run([str(jupyter), "execute", str(copy)], check=True, capture_output=True, cwd=workdir)
    return time.perf_counter() - t0


def _pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def memory(server: subprocess.Popen) -> dict:
    """RSS/PSS (MB) of the server process and of its descendants (pool processes, sandboxes, kernels)."""
    root = psutil.Process(server.pid)
    kids = root.children(recursive=True)
    rss = {"server": root.memory_info().rss, "children": 0}
    pss = {"server": _pss_kb(root.pid) * 1024, "children": 0}
    for p in kids:
        try:
            rss["children"] += p.memory_info().rss
            pss["children"] += _pss_kb(p.pid) * 1024
        except psutil.NoSuchProcess:
            pass
    return {
        "rss_mb": {k: round(v / 2**20) for k, v in rss.items()},
        "pss_mb": {k: round(v / 2**20) for k, v in pss.items()},
        "processes": len(kids),
    }


def median_timeline(db: Database, ids: list[str]) -> list[tuple[str, float]]:
    per_event: dict[str, list[float]] = {}
    for sid in ids:
        seen: set[str] = set()
        for event, at in db.timeline(sid):
            if event not in seen:  # the first of each kind (cell events repeat)
                seen.add(event)
                per_event.setdefault(event, []).append(at)
    return sorted(((e, statistics.median(v)) for e, v in per_event.items()), key=lambda x: x[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10, help="runs of each, interleaved")
    ap.add_argument("--pg", default=None, help="PostgreSQL URL (postgresql+psycopg://...); default SQLite")
    ap.add_argument("--sandbox", default="auto", help="TITANGRADE_SANDBOX for the server")
    ap.add_argument("--pause-s", type=float, default=2.0, help="idle time before each run")
    args = ap.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="tg-bench-latency-"))
    db = Database(args.pg, workdir)
    nb = NOTEBOOK.read_bytes()
    t_start = time.perf_counter()
    server, url = start_server(db, workdir, args.sandbox)
    ready_s = time.perf_counter() - t_start
    try:
        time.sleep(args.pause_s)
        idle = memory(server)
        slots = int(os.environ.get("TITANGRADE_WORKER_SLOTS", "2"))
        headers = {"Authorization": f"Bearer {db.token()}"}
        with httpx.Client(base_url=url, headers=headers, timeout=300) as client:
            first = [submit_and_follow(client, nb)[1] for _ in range(slots)]  # each pool process grades once
            service, plain, ids, posts = [], [], [], []
            for i in range(args.n):
                order = ("A", "B") if i % 2 == 0 else ("B", "A")
                for which in order:
                    time.sleep(args.pause_s)
                    if which == "A":
                        sid, elapsed, posted = submit_and_follow(client, nb)
                        ids.append(sid)
                        posts.append(posted)
                        service.append(elapsed)
                    else:
                        plain.append(jupyter_execute(workdir))
            time.sleep(args.pause_s)
            busy = memory(server)
        timeline = median_timeline(db, ids)
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        db.drop()

    med_a, med_b = statistics.median(service), statistics.median(plain)
    print(f"load average {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs); database {db.kind}; n={args.n}")
    print(f"server ready (readyz 200) after {ready_s:.2f} s; first grade per slot {[round(x, 2) for x in first]} s")
    print(f"HTTP submit -> graded (SSE done), p50 {med_a:.3f} s  (all: {' '.join(f'{x:.2f}' for x in service)})")
    print(f"jupyter execute, whole process, p50 {med_b:.3f} s  (all: {' '.join(f'{x:.2f}' for x in plain)})")
    print(f"ratio titangrade / jupyter execute: {med_a / med_b:.2f}")
    print(f"of which the POST (intake, 202), p50 {statistics.median(posts):.3f} s")
    print("median timeline after the submission row (s): " + ", ".join(f"{e} {t:.3f}" for e, t in timeline))
    print(f"memory idle, before any job: {idle}")
    print(f"memory idle after the runs ({slots} slots): {busy}")
    per_slot = {k: round(v["children"] / slots) for k, v in (("rss", busy["rss_mb"]), ("pss", busy["pss_mb"]))}
    print(f"per worker slot (pool process + warm kernels), MB: RSS {per_slot['rss']}, PSS {per_slot['pss']}")
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
