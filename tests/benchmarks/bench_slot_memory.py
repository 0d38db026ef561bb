"""Memory per slot (a script, not a test): the RSS of a local worker's grading pool processes and of the
kernels they start, sampled while a burst worker grades real submissions.

    .venv/bin/python tests/benchmarks/bench_slot_memory.py [--n 12] [--slots 2] [--sandbox unsafe-local|bwrap]

A slot is one pool process (service/workers/executor.py) plus, while it grades, its kernel (and with bwrap
the sandbox's processes; a warm kernel waits beside it with pre-warming on). ch07.wordle_reward's reference
solution is graded --n times on a fresh SQLite file; every 0.2 s the RSS of each pool process and of each
process below it is read from /proc. The Ray executor's slot (a `ray::grade_on_node` worker process) is
sampled by bench_cluster_deadline.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
from benchkit import FreshDatabase  # noqa: E402


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            out.setdefault(ppid, []).append(int(pid))
    return out


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def sample(pool_pids, stop: threading.Event, pools: list[float], below: list[float]) -> None:
    """Each pool process's RSS, and the summed RSS of everything it started (kernels, sandbox)."""
    while not stop.wait(0.2):
        tree = _children()
        for pid in pool_pids():
            pools.append(_rss_mb(pid))
            stack, total = list(tree.get(pid, [])), 0.0
            while stack:
                p = stack.pop()
                total += _rss_mb(p)
                stack += tree.get(p, [])
            below.append(total)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--sandbox", default="unsafe-local", choices=("unsafe-local", "bwrap"))
    args = ap.parse_args()

    from grading.exercise import Catalogue
    from service import bootstrap
    from service.config import Settings
    from service.db import transaction
    from service.queue import service as queue
    from service.submissions.models import Submission
    from service.wiring import build_worker

    ex = Catalogue().get("ch07.wordle_reward")
    db = FreshDatabase(pg_url=None, workdir=Path(tempfile.mkdtemp(prefix="tgslot-")), prefix="slot")
    sessions = bootstrap.sessions(db.engine)
    with transaction(sessions) as s:
        for _ in range(args.n):
            sub = Submission(id=uuid.uuid4().hex, user="bench", course="bench", exercise_id=ex.id, lang="en",
                             attempt=1, notebook=ex.solution_path.read_bytes(), status="queued",
                             max_score=ex.manifest.max_score, message="")  # fmt: skip
            s.add(sub)
            s.flush()
            queue.enqueue(s, submission_id=sub.id, lane="short", priority=0, devices=0, world_size=1, max_attempts=3)
    settings, _ = Settings(
        mode="dev", database_url=db.url, secret_key="s" * 40, sandbox=args.sandbox, worker_slots=args.slots,
        short_reserved_slots=0, poll_s=0.05,
    ).resolve_sandbox()  # fmt: skip
    worker = build_worker(settings, sessions=sessions)
    pool = worker.executor._pool  # CPython's pool internals: which processes are the slots

    def pool_pids() -> list[int]:
        return [p.pid for p in (getattr(pool, "_processes", None) or {}).values() if p.pid]

    stop, pools, below = threading.Event(), [], []
    threading.Thread(target=sample, args=(pool_pids, stop, pools, below), daemon=True).start()
    worker.run(burst=True)
    stop.set()
    with sessions() as s:
        graded = sum(1 for sub in s.query(Submission) if sub.status == "graded" and sub.score == sub.max_score)
    db.drop()
    print(f"{graded}/{args.n} graded with full marks; sandbox {settings.sandbox}, {args.slots} slots")
    if pools:
        print(
            f"pool process RSS: p50 {statistics.median(pools):.0f} MB, max {max(pools):.0f} MB ({len(pools)} samples)"
        )
        print(f"processes below one pool process (kernel, sandbox): p50 {statistics.median(below):.0f} MB, "
              f"max {max(below):.0f} MB")  # fmt: skip
        print(f"one slot, both together, max: {max(p + b for p, b in zip(pools, below, strict=True)):.0f} MB")
    return 0 if graded == args.n else 1


if __name__ == "__main__":
    sys.exit(main())
