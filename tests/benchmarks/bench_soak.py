"""Soak benchmark (a script, not a test): does `titangrade serve` keep memory it no longer needs?

    .venv/bin/python tests/benchmarks/bench_soak.py [--n 600] [--clients 4] [--workers 1] [--trace]
        [--pg URL] [--env MALLOC_ARENA_MAX=2 ...] [--wait poll|events|none]

It runs the real `serve` (service.cli main, in a child process started by this script) on a fresh
SQLite file (or a PostgreSQL schema with --pg), and sends --n uploads of a light exercise
(ch07.wordle_reward's solution) from --clients keep-alive clients. Each client polls its submission
until it is graded (`--wait events`: reads its SSE stream to the end first; `--wait none`: reads it once
and goes on, for an API-only soak with `--workers 0`).
The server's RSS (VmRSS of the serve process, not its grading pool) is sampled at four points: after a
warm-up of 20 uploads, after half of them, after all of them, and after the queue has drained plus
30 s of idle time. With --trace the child also runs tracemalloc (25 frames), and the top allocation
sites that grew between the warm-up and the drain are printed. tracemalloc itself costs memory, so take
RSS figures from a run without --trace.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from benchkit import FreshDatabase, free_port  # noqa: E402

BOUNDARY = "tgsoakboundary4f2a"


def child(argv: list[str]) -> None:
    """The server side: real `serve`, plus a SIGUSR1 handler that writes RSS (and a tracemalloc snapshot)."""
    import tracemalloc

    out_dir = Path(os.environ["TG_SOAK_DIR"])
    if os.environ.get("TG_SOAK_TRACE") == "1":
        tracemalloc.start(25)
    count = [0]

    def dump(*_a) -> None:
        count[0] += 1
        (out_dir / f"rss-{count[0]}.txt").write_text(str(rss_kib(os.getpid())))
        if tracemalloc.is_tracing():
            tracemalloc.take_snapshot().dump(str(out_dir / f"snap-{count[0]}.bin"))
        (out_dir / f"done-{count[0]}").write_text("")

    signal.signal(signal.SIGUSR1, dump)
    from service.cli import main

    sys.exit(main(argv))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def multipart(nb: bytes, exercise_id: str) -> bytes:
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="exercise_id"\r\n\r\n{exercise_id}\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="notebook"; filename="nb.ipynb"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode() + nb + f"\r\n--{BOUNDARY}--\r\n".encode()


def send(url: str, tokens: list[str], body: bytes, n: int, clients: int, wait: str) -> list[str]:
    """`n` uploads from `clients` threads; each waits for its submission to end (poll or SSE)."""
    import httpx

    ids: list[str] = []
    lock = threading.Lock()
    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}

    def run(k: int, count: int) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tokens[k]}"}, timeout=300) as c:
            for _ in range(count):
                r = c.post("/api/v1/submissions", content=body, headers=headers)
                if r.status_code != 202:
                    raise SystemExit(f"upload answered {r.status_code}: {r.text[:300]}")
                sid = r.json()["id"]
                if wait == "events":
                    with c.stream("GET", f"/api/v1/submissions/{sid}/events") as s:
                        for _line in s.iter_lines():
                            pass
                while c.get(f"/api/v1/submissions/{sid}").json()["status"] in ("queued", "running"):
                    if wait == "none":
                        break
                    time.sleep(0.2)
                with lock:
                    ids.append(sid)

    shares = [n // clients + (1 if k < n % clients else 0) for k in range(clients)]
    pool = [threading.Thread(target=run, args=(k, shares[k])) for k in range(clients)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return ids


def sample(proc: subprocess.Popen, out_dir: Path, k: int) -> int:
    os.kill(proc.pid, signal.SIGUSR1)
    for _ in range(600):
        if (out_dir / f"done-{k}").exists():
            return int((out_dir / f"rss-{k}.txt").read_text())
        time.sleep(0.1)
    raise SystemExit("the server did not answer SIGUSR1")


def top_growth(out_dir: Path, first: int, last: int, top: int = 15) -> list[str]:
    import tracemalloc

    a = tracemalloc.Snapshot.load(str(out_dir / f"snap-{first}.bin"))
    b = tracemalloc.Snapshot.load(str(out_dir / f"snap-{last}.bin"))
    keep = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib*")]
    diff = b.filter_traces(keep).compare_to(a.filter_traces(keep), "traceback")
    lines = []
    for stat in diff[:top]:
        frames = [f"{f.filename.replace(str(REPO) + '/', '')}:{f.lineno}" for f in stat.traceback[-4:]]
        lines.append(f"{stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks  {' <- '.join(reversed(frames))}")
    total = sum(s.size_diff for s in diff) / 1024
    lines.append(f"{total:+9.1f} KiB in all")
    return lines


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=600)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--trace", action="store_true")
    p.add_argument("--wait", choices=("poll", "events", "none"), default="poll", help="how a client waits for a grade")
    p.add_argument("--pg", default=None)
    p.add_argument("--idle-s", type=float, default=30.0)
    p.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server, e.g. MALLOC_ARENA_MAX=2")
    args = p.parse_args()

    from grading.exercise import Catalogue

    ex = Catalogue(REPO / "exercises", REPO / "reference").get("ch07.wordle_reward")
    body = multipart(ex.solution_path.read_bytes(), ex.id)
    work = Path(tempfile.mkdtemp(prefix="tg-soak-"))
    db = FreshDatabase(pg_url=args.pg, workdir=work, prefix="soak")
    tokens = [db.token(user=f"l{k}", role="learner") for k in range(args.clients)]
    port = free_port()
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        TG_SOAK_DIR=str(work),
        TG_SOAK_TRACE="1" if args.trace else "0",
        TITANGRADE_DATABASE_URL=db.url,
        TITANGRADE_SECRET_KEY="s" * 40,
        TITANGRADE_SUBMISSIONS_PER_MINUTE="1000000",
        TITANGRADE_MAX_ATTEMPTS_PER_EXERCISE="0",
        TITANGRADE_EXERCISES_ROOT=str(REPO / "exercises"),
        TITANGRADE_REFERENCE_ROOT=str(REPO / "reference"),
    )
    env.update(kv.split("=", 1) for kv in args.env)
    serve = ["serve", "--port", str(port), "--workers", str(args.workers)]
    log = (work / "serve.log").open("wb")
    proc = subprocess.Popen([sys.executable, __file__, "--child", *serve], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    import httpx

    for _ in range(600):
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
        if proc.poll() is not None:
            raise SystemExit(f"serve exited; see {work / 'serve.log'}")
    try:
        t0 = time.monotonic()
        rss0 = rss_kib(proc.pid)
        send(url, tokens, body, 20, args.clients, args.wait)
        points = [("started", rss0), ("after 20 warm-up uploads", sample(proc, work, 1))]
        half = args.n // 2
        send(url, tokens, body, half, args.clients, args.wait)
        points.append((f"after {20 + half} uploads", sample(proc, work, 2)))
        send(url, tokens, body, args.n - half, args.clients, args.wait)
        points.append((f"after {20 + args.n} uploads", sample(proc, work, 3)))
        time.sleep(args.idle_s)
        points.append((f"drained + {args.idle_s:.0f} s idle", sample(proc, work, 4)))
        took = time.monotonic() - t0
        print(f"serve --workers {args.workers}, {db.kind}, {args.clients} clients, wait {args.wait}, {took:.0f} s, "
              f"env {args.env}")
        for what, kib in points:
            print(f"  RSS {kib / 1024:7.1f} MiB  {what}")
        growth = (points[4][1] - points[1][1]) / 1024
        per = growth * 1024 / max(args.n, 1)
        print(f"  after the drain vs after the warm-up: {growth:+.1f} MiB ({per:+.1f} KiB per upload)")
        print(json.dumps({"rss_mib": {w: round(k / 1024, 1) for w, k in points}, "growth_mib": round(growth, 1)}))
        if args.trace:
            print("top growth between the warm-up and the drain (tracemalloc):")
            print("\n".join(top_growth(work, 1, 4)))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        db.drop()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        main()
