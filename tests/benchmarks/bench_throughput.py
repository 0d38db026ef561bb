"""Worker throughput benchmark (a script, not a test): light submissions graded per minute on 2 worker slots,
and a check that every one was graded exactly once.

    sudo .venv/bin/python tests/benchmarks/bench_throughput.py [--n 200] [--pg URL] [--sandbox bwrap unsafe-local]
        [--code CHECKOUT ...] [--rounds 1] [--prewarm ""] [--kernel-start exec fork]

Each row queues --n light submissions straight into a fresh database (SQLite file, or a PostgreSQL schema
with --pg): every other one is ch07.wordle_reward's reference solution, the rest cycle through the other
light, one-process course exercises' solutions. A burst worker with 2 slots (the local process pool, the
production default) then drains the queue. graded/min counts from the first claim to the last stored grade
(the pool's own start-up is reported apart). Then it verifies: every submission graded with full marks,
one job per submission, done, one `done` progress event and one outbox row each (a job retried after a
grader fault is allowed and listed with its error). CPU s/job counts every process of the run, kernels
included (a cpuacct control group per row, as root).

--code runs the same rows against other checkouts (e.g. main in a `git worktree` of its own), each row in a
fresh process with PYTHONPATH at that checkout, interleaved A B B A over --rounds (benchkit.in_round_order: use
an even number), so "before" and "after" share one machine state. Print `uptime` with the figures: the machine
is shared.

--kernel-start exec fork measures both ways a sandboxed kernel starts (TITANGRADE_SANDBOX_KERNEL_START, the
fork server of grading/sandbox/forkserver.py) side by side, interleaved like --code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "training")  # kernel families that are not "light, 1 process"


def light_exercises(catalogue) -> list:
    """Light, one-process exercises with a solution notebook, ch07.wordle_reward first."""
    out = []
    for ex in catalogue:
        m, r = ex.manifest, ex.manifest.resources
        if m.kernel_family in HEAVY or r.world_size != 1 or r.devices or not ex.solution_path.exists():
            continue
        out.append(ex)
    out.sort(key=lambda ex: (ex.id != "ch07.wordle_reward", ex.id))
    return out


def workload(catalogue, n: int) -> list:
    """n exercises: every other one ch07.wordle_reward, the rest cycling through the other light ones."""
    exercises = light_exercises(catalogue)
    first, others = exercises[0], exercises[1:] or exercises[:1]
    return [first if i % 2 == 0 else others[(i // 2) % len(others)] for i in range(n)]


def enqueue(sessions, exercises: list) -> list[str]:
    from service.db import transaction
    from service.queue import service as queue
    from service.submissions.models import Submission

    ids = []
    notebooks: dict[str, bytes] = {}
    with transaction(sessions) as s:
        for i, ex in enumerate(exercises):
            nb = notebooks.setdefault(ex.id, ex.solution_path.read_bytes())
            sub = Submission(
                id=uuid.uuid4().hex,
                user=f"learner{i % 50}",
                course="bench",
                exercise_id=ex.id,
                lang="en",
                attempt=1,
                notebook=nb,
                status="queued",
                max_score=ex.manifest.max_score,
                message="",
            )
            s.add(sub)
            s.flush()
            queue.enqueue(s, submission_id=sub.id, lane="short", priority=0, devices=0, world_size=1, max_attempts=3)
            ids.append(sub.id)
    return ids


def verify(sessions, ids: list[str]) -> dict:
    """Exactly once: one job each, claimed once and done; graded full marks; one done event, one outbox row."""
    from sqlalchemy import func, select

    from service.outbox.models import OutboxEvent
    from service.queue.models import Job
    from service.submissions.models import ProgressEvent, Submission

    with sessions() as s:
        subs = {x.id: x for x in s.scalars(select(Submission))}
        jobs = list(s.scalars(select(Job)))
        outbox = dict(
            s.execute(select(OutboxEvent.submission_id, func.count()).group_by(OutboxEvent.submission_id)).all()
        )
        done = dict(
            s.execute(
                select(ProgressEvent.submission_id, func.count())
                .where(ProgressEvent.event == "done")
                .group_by(ProgressEvent.submission_id)
            ).all()
        )
        events = s.scalar(select(func.count()).select_from(ProgressEvent)) or 0
    per_sub: dict[str, list] = {}
    for j in jobs:
        per_sub.setdefault(j.submission_id, []).append(j)
    problems = []
    for i in ids:
        sub, js = subs.get(i), per_sub.get(i, [])
        if sub is None or sub.status != "graded" or sub.score != sub.max_score:
            problems.append(f"{i}: {getattr(sub, 'status', None)} {getattr(sub, 'score', None)}")
        if len(js) != 1 or js[0].status != "done":
            problems.append(f"{i}: jobs {[(j.status, j.attempts) for j in js]}")
        if outbox.get(i) != 1 or done.get(i) != 1:
            problems.append(f"{i}: outbox rows {outbox.get(i)}, done events {done.get(i)}")
    retried = [f"{j.attempts} attempts: {j.last_error[:120]}" for j in jobs if j.attempts > 1]
    first = min(x.started_at for x in subs.values() if x.started_at)
    last = max(x.graded_at for x in subs.values() if x.graded_at)
    graded = sum(1 for i in ids if subs[i].status == "graded")
    return {
        "graded": graded,
        "span_s": (last - first).total_seconds(),
        "problems": problems,
        "retried": retried,
        "events_per_job": events / len(ids),
        "grading_s_p50": statistics.median(x.grading_s for x in subs.values() if x.grading_s is not None),
    }


CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1; the sandbox's run groups use other controllers


class CpuMeter:
    """CPU seconds of this process and all its descendants: a cpuacct group of its own where cgroup v1 has
    one (it counts sandboxed kernels too, which rusage misses: bwrap's pid namespace never reaps them into
    ours), else rusage of this process and the children it reaped."""

    def __init__(self) -> None:
        self.group: Path | None = CPUACCT / f"tgbench-{os.getpid()}"
        try:
            self.group.mkdir()
            (self.group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            self.group = None

    def read_s(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    def close(self) -> None:
        if self.group is not None:
            (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
            for _ in range(50):  # leftover processes of the run leave with their sandboxes
                try:
                    self.group.rmdir()
                    return
                except OSError:
                    time.sleep(0.1)


def child(args: argparse.Namespace) -> None:
    """One row: fresh database, enqueue, drain with a 2-slot burst worker, verify; prints one JSON line."""
    sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
    from bench_service import Database

    from grading.exercise import Catalogue
    from service.config import Settings
    from service import bootstrap
    from service.db import make_engine
    from service.wiring import build_worker

    if args.pg:
        os.environ["TITANGRADE_TEST_PG_URL"] = args.pg
        import bench_service

        bench_service.PG_URL = args.pg
    workdir = Path(tempfile.mkdtemp(prefix="tgbench-tp-"))
    db = Database("postgres" if args.pg else "sqlite", workdir)
    engine = make_engine(db.url)
    sessions = bootstrap.sessions(engine)
    try:
        exercises = workload(Catalogue(), args.n)
        ids = enqueue(sessions, exercises)
        settings = Settings(
            mode="dev",
            database_url=db.url,
            secret_key="b" * 40,
            sandbox=args.sandbox[0],
            sandbox_prewarm=args.prewarm,
            worker_slots=2,
            short_reserved_slots=1,
            poll_s=0.05,
        )
        meter = CpuMeter()
        cpu0, t0 = meter.read_s(), time.perf_counter()
        build_worker(settings, sessions=sessions).run(burst=True)
        wall = time.perf_counter() - t0
        for proc in multiprocessing.active_children():  # reap the pool processes (rusage counts them then)
            proc.join(10)
        cpu = meter.read_s() - cpu0
        meter.close()
        out = verify(sessions, ids)
        out.update(
            wall_s=wall,
            cpu_per_job_s=cpu / args.n,
            n=args.n,
            exercises=len({e.id for e in exercises}),
            load=os.getloadavg()[0],
            code=args.label,
        )
        print("RESULT " + json.dumps(out), flush=True)
    finally:
        engine.dispose()
        db.drop()


def run_row(
    code: Path, label: str, args: argparse.Namespace, sandbox: str, pg: str | None, kernel_start: str = "exec"
) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--n", str(args.n), "--sandbox", sandbox,
           "--prewarm", args.prewarm, "--label", label]  # fmt: skip
    if pg:
        cmd += ["--pg", pg]
    env = dict(os.environ, PYTHONPATH=str(code), TITANGRADE_SANDBOX_KERNEL_START=kernel_start)
    proc = subprocess.Popen(cmd, env=env, cwd=str(code), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stdout, stderr = proc.communicate(timeout=3600)
    for _ in range(100):  # the row's cpuacct group, once its last sandbox process is gone
        with contextlib.suppress(OSError):
            (CPUACCT / f"tgbench-{proc.pid}").rmdir()
        if not (CPUACCT / f"tgbench-{proc.pid}").exists():
            break
        time.sleep(0.1)
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise SystemExit(f"row {label}/{sandbox} failed:\n{stdout[-3000:]}\n{stderr[-3000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="submissions per row")
    ap.add_argument("--pg", help="also run every row on this PostgreSQL URL (a scratch schema is made and dropped)")
    ap.add_argument("--sandbox", nargs="+", default=["bwrap", "unsafe-local"], choices=("bwrap", "unsafe-local"))
    ap.add_argument("--code", nargs="*", default=[], help="other checkouts to measure side by side (before)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--prewarm", default="", help='TITANGRADE_SANDBOX_PREWARM for the worker, e.g. "light=1"')
    ap.add_argument("--kernel-start", nargs="+", default=["exec"], choices=("exec", "fork"))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--label", default="this", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        sys.path.insert(0, str(Path.cwd()))
        child(args)
        return 0
    from benchkit import in_round_order  # this script's own directory

    codes = [(Path(c).resolve(), Path(c).name, "exec") for c in args.code]
    codes += [(REPO, "this" if start == "exec" else f"this-{start}", start) for start in args.kernel_start]
    dbs = [None, args.pg] if args.pg else [None]
    print(f"uptime: {os.popen('uptime').read().strip()}; {os.cpu_count()} CPUs; n={args.n}; prewarm={args.prewarm!r}")
    rows: dict[tuple, list[dict]] = {}
    for rnd in range(args.rounds):
        for pg in dbs:
            for sandbox in args.sandbox:
                for code, label, start in in_round_order(codes, rnd):
                    if sandbox != "bwrap" and start != "exec":
                        continue  # the fork server is the bwrap sandbox's
                    r = run_row(code, label, args, sandbox, pg, start)
                    key = (label, "postgresql" if pg else "sqlite", sandbox)
                    rows.setdefault(key, []).append(r)
                    rate = 60 * r["graded"] / r["span_s"]
                    print(
                        f"{label:>12} {key[1]:>10} {sandbox:>12}: {r['graded']}/{r['n']} graded, {rate:6.1f}/min "
                        f"(first claim -> last grade {r['span_s']:.1f} s, worker wall {r['wall_s']:.1f} s), "
                        f"CPU {r['cpu_per_job_s']:.2f} s/job, grading_s p50 {r['grading_s_p50']:.2f}, "
                        f"{r['events_per_job']:.1f} events/job, "
                        f"load {r['load']:.1f}, exactly once: {'yes' if not r['problems'] else r['problems'][:5]}"
                        + (f", retried after a grader fault: {r['retried'][:3]}" if r["retried"] else ""),
                        flush=True,
                    )
    print(f"uptime: {os.popen('uptime').read().strip()}")
    bad = any(r["problems"] for rs in rows.values() for r in rs)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
