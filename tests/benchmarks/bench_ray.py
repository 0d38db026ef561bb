"""Ray executor benchmark (a script, not a test): graded submissions per minute with the local executor vs the
Ray executor on a 1-node and a 2-node test cluster, side by side, and Ray's added latency per job.

    .venv/bin/python tests/benchmarks/bench_ray.py [--n 12] [--seq 5] [--db postgres|sqlite]

Each run grades the same --n light submissions (ch07.wordle_reward's reference solution; the service test
catalogue's ch05.svc_sum if the course exercise is missing) with a burst worker in this process:
- local: the process pool, 2 slots (one per core);
- ray-1: a `ray.cluster_utils` cluster, head with 0 CPUs + one 2-CPU node, 2 slots;
- ray-2: the same plus a second 2-CPU node, 4 slots. All nodes share this machine's cores, so a second
  node adds places, not compute: on a real cluster each node brings its own cores.
Latency: --seq jobs one at a time (1 slot), claim -> stored, the first (cold) job left out; Ray's added
latency is the median difference to local. Cluster start-up is reported on its own line.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "benchmarks"))

from bench_service import Database, pick_exercise  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_cluster(nodes: int):
    from ray.cluster_utils import Cluster

    tmp = tempfile.mkdtemp(prefix="tgbray", dir="/tmp")
    os.environ["RAY_TMPDIR"] = tmp
    small = {"object_store_memory": 80 * 2**20, "memory": 8 * 2**30}
    t0 = time.perf_counter()
    c = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 0,
            "gcs_server_port": _free_port(),
            "dashboard_agent_listen_port": _free_port(),
            "include_dashboard": False,
            "temp_dir": os.path.join(tmp, "ray"),
            **small,
        },
    )
    for _ in range(nodes):
        c.add_node(num_cpus=2, **small)
    c.wait_for_nodes()
    c.tmp, c.start_s = tmp, time.perf_counter() - t0
    return c


def enqueue(sessions, *, n: int, exercise_id: str, notebook: bytes, max_score: float) -> list[str]:
    from service.db import transaction
    from service.queue import service as queue
    from service.submissions.models import Submission

    ids = []
    with transaction(sessions) as s:
        for _ in range(n):
            sub = Submission(
                id=uuid.uuid4().hex,
                user="bench",
                course="bench",
                exercise_id=exercise_id,
                lang="en",
                attempt=1,
                notebook=notebook,
                status="queued",
                max_score=max_score,
                message="",
            )
            s.add(sub)
            s.flush()
            queue.enqueue(s, submission_id=sub.id, lane="short", priority=0, devices=0, world_size=1, max_attempts=3)
            ids.append(sub.id)
    return ids


def dispatch_s(sessions, ids: list[str]) -> list[float]:
    """Per job, claim -> the task running on its node ('placed' event): the Ray dispatch itself."""
    from sqlalchemy import select

    from service.submissions.models import ProgressEvent

    out = []
    with sessions() as s:
        for i in ids:
            at = {
                e.event: e.created_at
                for e in s.scalars(
                    select(ProgressEvent).where(
                        ProgressEvent.submission_id == i, ProgressEvent.event.in_(("claimed", "placed"))
                    )
                )
            }
            if len(at) == 2:
                out.append((at["placed"] - at["claimed"]).total_seconds())
    return out


def run(settings, sessions, ids: list[str]) -> tuple[float, list[float], int]:
    """Burst-grade the queue; returns (wall s, per-job claim->stored s in queue order, graded count)."""
    from service.submissions.models import Submission
    from service.wiring import build_worker

    t0 = time.perf_counter()
    build_worker(settings, sessions=sessions).run(burst=True)
    wall = time.perf_counter() - t0
    with sessions() as s:
        subs = [s.get(Submission, i) for i in ids]
        lat = [(x.graded_at - x.started_at).total_seconds() for x in subs if x.graded_at and x.started_at]
        graded = sum(1 for x in subs if x.status == "graded" and x.score == x.max_score)
    return wall, lat, graded


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=12, help="submissions per throughput run")
    ap.add_argument("--seq", type=int, default=5, help="sequential jobs for the latency comparison")
    ap.add_argument("--db", choices=("postgres", "sqlite"), default="postgres")
    args = ap.parse_args()

    from service.config import Settings
    from service import bootstrap
    from service.db import make_engine

    notebook, exercise_id, env, note = pick_exercise()
    if note:
        print(note)
    roots = (
        {
            "exercises_root": Path(env["TITANGRADE_EXERCISES_ROOT"]),
            "reference_root": Path(env["TITANGRADE_REFERENCE_ROOT"]),
        }
        if env
        else {}
    )
    from grading.exercise import Catalogue

    catalogue = Catalogue(roots["exercises_root"], roots["reference_root"]) if roots else Catalogue()
    max_score = catalogue.get(exercise_id).manifest.max_score
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores); exercise {exercise_id}; db {args.db}")
    workdir = Path(tempfile.mkdtemp(prefix="tgbench-ray-"))
    rows = []
    cluster = None
    try:
        for label, nodes in (("local", 0), ("ray-1", 1), ("ray-2", 2)):
            db = Database(args.db, workdir)
            engine = make_engine(db.url)
            sessions = bootstrap.sessions(engine)
            extra = {}
            if nodes:
                cluster = start_cluster(nodes)
                print(f"{label}: cluster start {cluster.start_s:.1f} s ({nodes} node(s) + head)")
                extra = {"executor": "ray", "ray_address": cluster.address}
            base = {
                "mode": "dev",
                "database_url": db.url,
                "secret_key": "b" * 40,
                "sandbox": "unsafe-local",
                "lease_s": 60,
                "heartbeat_s": 2,
                "poll_s": 0.05,
                "short_reserved_slots": 0,
                **roots,
                **extra,
            }
            ids = enqueue(sessions, n=args.n, exercise_id=exercise_id, notebook=notebook, max_score=max_score)
            wall, _, graded = run(Settings(worker_slots=2 * max(nodes, 1), **base), sessions, ids)
            seq_ids = enqueue(sessions, n=args.seq, exercise_id=exercise_id, notebook=notebook, max_score=max_score)
            _, lat, _ = run(Settings(worker_slots=1, **base), sessions, seq_ids)
            dispatch = dispatch_s(sessions, seq_ids)[1:]
            rows.append((label, args.n, graded, wall, 60 * graded / wall, lat[1:], dispatch))
            print(
                f"{label}: {graded}/{args.n} graded in {wall:.1f} s; sequential claim->stored "
                f"{[round(x, 2) for x in lat]}; claim->placed {[round(x, 3) for x in dispatch]}",
                flush=True,
            )
            engine.dispose()
            db.drop()
            if cluster is not None:
                cluster.shutdown()
                shutil.rmtree(cluster.tmp, ignore_errors=True)
                cluster = None
    finally:
        if cluster is not None:
            cluster.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)

    local_lat = statistics.median(rows[0][5])
    print(
        "\n| executor | graded | wall s | graded/min | claim->stored p50 (warm, sequential) | added vs local "
        "| claim->running on node p50 |"
    )
    print("|---|---|---|---|---|---|---|")
    for label, n, graded, wall, per_min, lat, dispatch in rows:
        p50 = statistics.median(lat)
        placed = f"{statistics.median(dispatch):.3f} s" if dispatch else "n/a"
        print(
            f"| {label} | {graded}/{n} | {wall:.1f} | {per_min:.1f} | {p50:.2f} s | {p50 - local_lat:+.2f} s "
            f"| {placed} |"
        )
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
