"""Service benchmark (a script, not a test): submit-to-graded latency and intake rate, SQLite vs PostgreSQL.

    .venv/bin/python tests/benchmarks/bench_service.py [--n 8] [--intake 100] [--sandbox auto|unsafe-local]

Latency: `titangrade serve --workers 2` grades ch07.wordle_reward's reference solution (falls back to the
service test catalogue if the course exercise is missing, and says so), one at a time ("sequential") and
all at once ("burst"). Intake: an API-only server (`--workers 0`) accepts --intake submissions from 4 client
threads; every request is validated with load_submission and written with its job in one transaction.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from benchkit import FreshDatabase, start_serve  # noqa: E402

PG_URL = os.environ.get("TITANGRADE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
TEST_CATALOGUE = REPO / "tests" / "fixtures" / "service_catalogue"


def pick_exercise():
    from grading.exercise import Catalogue

    real = Catalogue()
    if "ch07.wordle_reward" in real:
        ex = real.get("ch07.wordle_reward")
        return ex.solution_path.read_bytes(), ex.id, {}, ""
    ex = Catalogue(TEST_CATALOGUE / "exercises", TEST_CATALOGUE / "reference").get("ch05.svc_sum")
    return (ex.solution_path.read_bytes(), ex.id,
            {"TITANGRADE_EXERCISES_ROOT": str(TEST_CATALOGUE / "exercises"),
             "TITANGRADE_REFERENCE_ROOT": str(TEST_CATALOGUE / "reference")},
            "NOTE: ch07.wordle_reward missing; measured the test catalogue's ch05.svc_sum instead")


class Database(FreshDatabase):
    """A fresh SQLite file or PostgreSQL schema, migrated, dropped afterwards."""

    def __init__(self, kind: str, workdir: Path) -> None:
        super().__init__(pg_url=None if kind == "sqlite" else PG_URL, workdir=workdir, prefix="bench")
        self.kind = kind


def start_server(db: Database, env_extra: dict, workers: int, workdir: Path, sandbox: str):
    env = dict(os.environ, PYTHONPATH=str(REPO), TITANGRADE_DATABASE_URL=db.url, TITANGRADE_SANDBOX=sandbox,
               TITANGRADE_SECRET_KEY="b" * 40, TITANGRADE_POLL_S="0.1", **env_extra)
    log = workdir / f"server-{db.kind}-{workers}.log"
    return start_serve(args=["--workers", str(workers)], env=env, workdir=workdir, log=log, ready="/healthz")


def submit(client: httpx.Client, nb: bytes, exercise_id: str) -> str:
    resp = client.post("/api/v1/submissions", files={"notebook": ("nb.ipynb", nb)}, data={"exercise_id": exercise_id})
    resp.raise_for_status()
    return resp.json()["id"]


def wait_graded(client: httpx.Client, sid: str) -> str:
    while True:
        status = client.get(f"/api/v1/submissions/{sid}").json()["status"]
        if status in ("graded", "error", "not_gradable"):
            return status
        time.sleep(0.05)


def latency(url: str, token: str, nb: bytes, exercise_id: str, n: int) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=300) as client:
        wait_graded(client, submit(client, nb, exercise_id))  # warm-up: pool processes start lazily
        sequential = []
        for _ in range(n):
            t0 = time.perf_counter()
            status = wait_graded(client, submit(client, nb, exercise_id))
            assert status == "graded", status
            sequential.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ids = [submit(client, nb, exercise_id) for _ in range(n)]
        burst, pending = {}, set(ids)
        while pending:
            for sid in list(pending):
                if client.get(f"/api/v1/submissions/{sid}").json()["status"] in ("graded", "error", "not_gradable"):
                    burst[sid] = time.perf_counter() - t0
                    pending.discard(sid)
            time.sleep(0.05)
    return {"sequential": sequential, "burst": list(burst.values())}


def intake(url: str, token: str, nb: bytes, exercise_id: str, n: int, threads: int = 4) -> float:
    headers = {"Authorization": f"Bearer {token}"}
    clients = [httpx.Client(base_url=url, headers=headers, timeout=60) for _ in range(threads)]
    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda i: submit(clients[i % threads], nb, exercise_id), range(n)))
    elapsed = time.perf_counter() - t0
    for c in clients:
        c.close()
    return n / elapsed


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8, help="graded submissions per latency mode")
    parser.add_argument("--intake", type=int, default=100, help="submissions for the intake rate")
    parser.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "unsafe-local"))
    parser.add_argument("--db", nargs="+", default=["sqlite", "postgres"], choices=("sqlite", "postgres"))
    args = parser.parse_args()
    nb, exercise_id, env_extra, note = pick_exercise()
    workdir = Path(tempfile.mkdtemp(prefix="tg-bench-"))
    rows: dict[str, dict] = {}
    for kind in args.db:
        db = Database(kind, workdir)
        token = db.token()
        try:
            proc, url = start_server(db, env_extra, 2, workdir, args.sandbox)
            try:
                lat = latency(url, token, nb, exercise_id, args.n)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(30)
            proc, url = start_server(db, env_extra, 0, workdir, args.sandbox)
            try:
                rate = intake(url, token, nb, exercise_id, args.intake)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(30)
        finally:
            db.drop()
        rows[kind] = {"seq_p50": pct(lat["sequential"], 0.5), "seq_p95": pct(lat["sequential"], 0.95),
                      "burst_p50": pct(lat["burst"], 0.5), "burst_p95": pct(lat["burst"], 0.95),
                      "intake": rate}
    print(f"\nexercise {exercise_id}, sandbox {args.sandbox}, 2 worker slots, n={args.n}, intake={args.intake}, "
          f"{os.cpu_count()} CPUs")
    if note:
        print(note)
    kinds = list(rows)
    print(f"{'metric':38}" + "".join(f"{k:>12}" for k in kinds) + ("   pg/sqlite" if len(kinds) == 2 else ""))
    labels = {"seq_p50": "submit->graded p50, sequential (s)", "seq_p95": "submit->graded p95, sequential (s)",
              "burst_p50": f"submit->graded p50, burst of {args.n} (s)",
              "burst_p95": f"submit->graded p95, burst of {args.n} (s)", "intake": "intake (accepted submissions/s)"}
    for key, label in labels.items():
        vals = [rows[k][key] for k in kinds]
        ratio = f"{vals[1] / vals[0]:>12.2f}" if len(vals) == 2 and vals[0] else ""
        print(f"{label:38}" + "".join(f"{v:>12.2f}" for v in vals) + ratio)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
