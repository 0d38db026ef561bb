"""Intake benchmark (a script, not a test): accepted submissions per second from 8 clients.

    .venv/bin/python tests/benchmarks/bench_intake.py [--pg URL] [--n 2000] [--clients 8] [--procs 4]
        [--modes idle busy] [--serve-args "--api-workers 2"] [--repo OTHER_TREE ...] [--rounds 1]

It starts `titangrade serve` itself on a fresh SQLite file (and a fresh PostgreSQL schema with --pg) and
sends --n light submissions (ch07.wordle_reward's solution) from --clients keep-alive httpx clients spread
over --procs client processes, each as one of 64 learners (rate limit raised, the limit check still runs).
Modes: `idle` is the API with no grading going on (`--workers 0`); `busy` is `serve --workers 2` with a
backlog queued first, so both slots grade throughout the measurement (checked at its start and end).
Afterwards every accepted submission must be in the database exactly once, with exactly one job.
Reported: accepted/s, latency p50/p99, and the CPU milliseconds per request of the server and of the
clients (the clients share the machine's cores, so their cost is part of the picture).
With --repo (another checkout, e.g. `git archive main | tar -x -C /tmp/base`), each round runs every tree
in turn (A B, then B A: benchkit.in_round_order), so figures taken side by side on a shared machine can
be compared as ratios.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from benchkit import FreshDatabase, in_round_order, start_serve  # noqa: E402

LEARNERS = 64
COURSE = "bench"
BOUNDARY = "tgbenchboundary7d1c"


def notebook() -> tuple[bytes, str]:
    from grading.exercise import Catalogue

    ex = Catalogue(REPO / "exercises", REPO / "reference").get("ch07.wordle_reward")
    return ex.solution_path.read_bytes(), ex.id


def multipart(nb: bytes, exercise_id: str) -> bytes:
    """The request body, encoded once: the client's per-request cost stays the HTTP exchange itself."""
    return (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="exercise_id"\r\n\r\n{exercise_id}\r\n'
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="notebook"; filename="nb.ipynb"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode() + nb + f"\r\n--{BOUNDARY}--\r\n".encode()


class Database(FreshDatabase):
    """A fresh SQLite file or PostgreSQL schema, migrated by the `serve` under test, with learner tokens."""

    def __init__(self, kind: str, workdir: Path, pg_url: str | None) -> None:
        super().__init__(pg_url=None if kind == "sqlite" else pg_url, workdir=workdir, prefix="intake", migrate=False)
        self.kind = kind
        self.tokens: list[str] = []

    def add_tokens(self) -> None:
        """Learner tokens, once `serve` has migrated the schema (each tree migrates its own)."""
        from service.auth.service import create_token
        from service import bootstrap
        from service.db import transaction

        with transaction(bootstrap.sessions(self.engine)) as s:
            self.tokens = [create_token(s, user=f"l{i:03d}", role="learner", course=COURSE) for i in range(LEARNERS)]

    def count(self, sql: str, **params) -> int:
        from sqlalchemy import text

        with self.engine.connect() as conn:
            return int(conn.execute(text(sql), params).scalar() or 0)

    def verify(self, ids: list[str]) -> str:
        """'ok' when every accepted id is one submission row with one job and one queued event."""
        from sqlalchemy import text

        if len(set(ids)) != len(ids):
            return f"FAIL: {len(ids) - len(set(ids))} ids returned twice"
        found: dict[str, tuple[int, int]] = {}
        with self.engine.connect() as conn:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                rows = conn.execute(
                    text(
                        "SELECT s.id, (SELECT count(*) FROM jobs j WHERE j.submission_id = s.id), "
                        "(SELECT count(*) FROM progress_events e WHERE e.submission_id = s.id "
                        "AND e.event = 'queued') FROM submissions s WHERE s.id IN :ids"
                    ).bindparams(__import__("sqlalchemy").bindparam("ids", expanding=True)),
                    {"ids": chunk},
                ).all()
                found.update({r[0]: (r[1], r[2]) for r in rows})
        missing = len(ids) - len(found)
        bad = sum(1 for jobs, queued in found.values() if jobs != 1 or queued != 1)
        return "ok" if not missing and not bad else f"FAIL: {missing} missing, {bad} without exactly one job/event"


def start_server(repo: Path, db: Database, workers: int, workdir: Path, serve_args: str):
    env = dict(
        os.environ,
        PYTHONPATH=str(repo),
        TITANGRADE_DATABASE_URL=db.url,
        TITANGRADE_SECRET_KEY="b" * 40,
        TITANGRADE_SUBMISSIONS_PER_MINUTE="1000000",
        TITANGRADE_EXERCISES_ROOT=str(REPO / "exercises"),
        TITANGRADE_REFERENCE_ROOT=str(REPO / "reference"),
    )
    log = workdir / f"server-{db.kind}-{workers}-{uuid.uuid4().hex[:6]}.log"
    args = ["--workers", str(workers), *shlex.split(serve_args)]
    return start_serve(args=args, env=env, workdir=workdir, log=log, ready="/healthz", new_session=True)


def stop_server(proc) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def tree_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of the server's process group (in busy mode that includes grading)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pid:  # the process group `serve` leads
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def client_proc(url, tokens, body, count, threads, go, out) -> None:
    """One client process: `threads` keep-alive clients, each sending its share of `count` requests."""
    import httpx

    results: list = []
    lock = threading.Lock()
    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}

    def run(i: int, n: int) -> None:
        token = tokens[i % len(tokens)]
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=120) as c:
            c.get("/healthz")  # connect before the clock starts
            go.wait()
            mine = []
            for _ in range(n):
                t0 = time.perf_counter()
                r = c.post("/api/v1/submissions", content=body, headers=headers)
                mine.append((r.status_code, r.json().get("id") if r.status_code == 202 else r.text[:200],
                             time.perf_counter() - t0))
        with lock:
            results.extend(mine)

    shares = [count // threads + (1 if k < count % threads else 0) for k in range(threads)]
    cpu0 = time.process_time()
    pool = [threading.Thread(target=run, args=(k, shares[k])) for k in range(threads)]
    for t in pool:
        t.start()
    go.wait()
    t_start = time.time()
    for t in pool:
        t.join()
    out.put({"results": results, "start": t_start, "end": time.time(), "cpu_s": time.process_time() - cpu0})


def intake(url: str, db: Database, body: bytes, n: int, clients: int, procs: int) -> dict:
    ctx = mp.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    per = [clients // procs + (1 if k < clients % procs else 0) for k in range(procs)]
    counts = [n * p // clients for p in per]
    counts[0] += n - sum(counts)
    token_sets = [db.tokens[k::procs] for k in range(procs)]
    workers = [
        ctx.Process(target=client_proc, args=(url, token_sets[k], body, counts[k], per[k], go, out))
        for k in range(procs)
    ]
    for w in workers:
        w.start()
    time.sleep(1.0)  # let every client connect
    go.set()
    reports = [out.get() for _ in workers]
    for w in workers:
        w.join()
    results = [r for rep in reports for r in rep["results"]]
    elapsed = max(r["end"] for r in reports) - min(r["start"] for r in reports)
    accepted = [r[1] for r in results if r[0] == 202]
    refused = [r for r in results if r[0] != 202]
    lat = sorted(r[2] for r in results)
    return {
        "elapsed": elapsed,
        "accepted": accepted,
        "refused": refused,
        "rate": len(accepted) / elapsed,
        "p50_ms": 1e3 * lat[len(lat) // 2],
        "p99_ms": 1e3 * lat[min(len(lat) - 1, int(0.99 * len(lat)))],
        "client_cpu_s": sum(r["cpu_s"] for r in reports),
    }


def running_jobs(db: Database) -> int:
    return db.count("SELECT count(*) FROM jobs WHERE status = 'running'")


def busy_backlog(url: str, db: Database, body: bytes, backlog: int) -> None:
    """Queue `backlog` submissions and wait until both slots are grading."""
    import httpx

    headers = {"Authorization": f"Bearer {db.tokens[0]}", "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as c:
        for _ in range(backlog):
            c.post("/api/v1/submissions", content=body).raise_for_status()
    deadline = time.monotonic() + 120
    while running_jobs(db) < 2:
        if time.monotonic() > deadline:
            raise SystemExit("the workers did not start grading the backlog within 120 s")
        time.sleep(0.2)


def one_run(repo: Path, kind: str, mode: str, args, workdir: Path, body: bytes, serve_args: str) -> dict:
    db = Database(kind, workdir, args.pg)
    try:
        workers = 0 if mode == "idle" else 2
        proc, url = start_server(repo, db, workers, workdir, serve_args)
        db.add_tokens()
        try:
            if mode == "busy":
                busy_backlog(url, db, body, args.backlog)
                graded0 = db.count("SELECT count(*) FROM submissions WHERE status IN ('graded', 'error')")
            running0 = running_jobs(db) if mode == "busy" else 0
            cpu0 = tree_cpu_s(proc.pid)
            res = intake(url, db, body, args.n, args.clients, args.procs)
            res["server_cpu_s"] = tree_cpu_s(proc.pid) - cpu0
            if mode == "busy":
                res["slots"] = f"{running0}->{running_jobs(db)}"
                res["graded"] = (
                    db.count("SELECT count(*) FROM submissions WHERE status IN ('graded', 'error')") - graded0
                )
        finally:
            stop_server(proc)
        res["db_check"] = db.verify(res["accepted"])
        return res
    finally:
        db.drop()


def _label(tree: tuple[Path, str]) -> str:
    return tree[0].name + (f" {tree[1]}" if tree[1] else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pg", default=None, help="PostgreSQL URL (postgresql+psycopg://...); SQLite only without")
    parser.add_argument("--dbs", nargs="+", default=["sqlite", "postgres"], choices=("sqlite", "postgres"),
                        help="databases to measure (postgres needs --pg)")
    parser.add_argument("--n", type=int, default=2000, help="submissions per measurement")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--procs", type=int, default=4, help="client processes the clients are spread over")
    parser.add_argument("--modes", nargs="+", default=["idle", "busy"], choices=("idle", "busy"))
    parser.add_argument("--backlog", type=int, default=40, help="busy mode: submissions queued before measuring")
    parser.add_argument("--serve-args", nargs="+", default=[""],
                        help="extra `titangrade serve` arguments; several (quoted) are run in turn as variants")
    parser.add_argument("--repo", nargs="*", type=Path, default=[], help="other trees to compare with, in turn")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    nb, exercise_id = notebook()
    body = multipart(nb, exercise_id)
    workdir = Path(tempfile.mkdtemp(prefix="tg-intake-"))
    trees = [(tree, extra) for tree in [REPO, *[p.resolve() for p in args.repo]] for extra in args.serve_args]
    kinds = [k for k in args.dbs if k == "sqlite" or args.pg]
    rows = []
    for rnd in range(args.rounds):
        for mode in args.modes:
            for kind in kinds:
                for tree in in_round_order(trees, rnd):
                    load = os.getloadavg()[0]
                    res = one_run(tree[0], kind, mode, args, workdir, body, tree[1])
                    n = len(res["accepted"]) + len(res["refused"])
                    rows.append((rnd, mode, kind, tree, res, load))
                    print(
                        f"round {rnd} {mode:4} {kind:8} {_label(tree):24} accepted/s {res['rate']:7.1f}  "
                        f"p50 {res['p50_ms']:6.1f} ms  p99 {res['p99_ms']:6.1f} ms  "
                        f"server {1e3 * res['server_cpu_s'] / n:5.2f} ms CPU/req  "
                        f"clients {1e3 * res['client_cpu_s'] / n:5.2f} ms CPU/req  "
                        f"refused {len(res['refused'])}  DB {res['db_check']}  "
                        + (f"slots {res['slots']} graded {res['graded']}  " if mode == "busy" else "")
                        + f"load {load:.1f}",
                        flush=True,
                    )
                    for status, text, _ in res["refused"][:3]:
                        print(f"    refused {status}: {text}")
    print(f"\n{args.n} submissions of {exercise_id} ({len(nb)} bytes) per run, {args.clients} clients in "
          f"{args.procs} processes, {os.cpu_count()} CPUs")
    for mode in args.modes:
        for kind in kinds:
            meds = []
            for tree in trees:
                rates = [r[4]["rate"] for r in rows if r[1] == mode and r[2] == kind and r[3] == tree]
                meds.append(statistics.median(rates))
            ratio = "".join(f"  {m / meds[0]:.2f}x" for m in meds[1:])
            figures = "  ".join(f"{_label(t)}={m:.0f}" for t, m in zip(trees, meds, strict=True))
            print(f"{mode:4} {kind:8} median accepted/s {figures}" + (f"   (vs first:{ratio})" if ratio else ""))
    subprocess.run(["rm", "-rf", str(workdir)], check=False)


if __name__ == "__main__":
    main()
