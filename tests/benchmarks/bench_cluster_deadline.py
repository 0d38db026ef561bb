"""A deadline hour on a Ray cluster of many simulated nodes (a script, not a test).

    nice .venv/bin/python tests/benchmarks/bench_cluster_deadline.py [--learners 20] [--nodes 4] [--npus 8]
        [--cpus 32] [--compress 20] [--training-npus 2] [--training-s S] [--db sqlite|postgres] [--pg URL]
        [--saturation 200] [--slots 16] [--out FILE.json]

The defaults run in a few minutes on a quiet 2-core machine; the issue's scale is
`--learners 1000 --nodes 8 --compress 10 --db postgres`, which needs a dispatcher that keeps up with
47 jobs/s (docs/cluster.md: it did not on a loaded 2-core machine).

Every learner submits each of the 17 course exercises once during the hour before the deadline, arrivals
growing towards it (t = hour * sqrt(U), as bench_fair_share.py). Everything is the production path but the
grading engine: uploads go through `titangrade serve`'s HTTP intake (one token per learner), jobs through
the database queue with fair share, one `titangrade worker --executor ray` process claims them (placeable
shapes, leases, fenced storing) and the real Ray executor pins each to a node of a `ray.cluster_utils`
cluster on this host: a head with no CPUs and --nodes nodes declaring --cpus CPUs and --npus NPUs each (a
fake inventory: Ray assigns NPU ids, there is no hardware). The engine is the stand-in
(TITANGRADE_GRADING_ENGINE=standin-hold, service/workers/standin.py): it holds the task's reserved CPUs,
memory and NPUs for the exercise's duration / --compress and grades nothing.

Durations: each exercise's measured CPU run time in the README's exercise table (its solution graded end
to end in the bwrap sandbox, quiet 2-core machine: light 0.4-0.6 s, torch 2.5-5.5 s, the 3 training
exercises 8.8-20 s), or --training-s for the training ones (a scenario, e.g. minutes on real NPUs). With
--training-npus K (default 2) the training exercises ask for K NPUs (an NPU course; today's manifests train
on CPU ranks, --training-npus 0 keeps them so).

Time is compressed by --compress: the hour lasts 3600/F s and every hold duration/F s. Real-time
equivalents multiply the measured waits by F, which also multiplies the fixed per-job dispatch latency
(tens of ms), so they are upper bounds. F is fine only while the compressed arrival rate stays under what
one worker dispatches (measured by --saturation: N light jobs queued first, then claimed and dispatched
with zero-length holds by one burst worker, then by two at once).

Reported: p50/p95 wait (submitted -> claimed) per lane and over learners (each learner's mean wait), per
node jobs and CPU/NPU utilisation (from the stand-in's own records of what Ray assigned to it), the
worker's CPU-seconds and SQL statements per job, the slot (Ray worker process) RSS, and a sizing table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
import clusterkit as kit  # noqa: E402
from benchkit import FreshDatabase  # noqa: E402

HOUR_S = 3600.0
PG_URL = os.environ.get("TITANGRADE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def arrivals(*, learners: int, exercises: list[str], window_s: float, seed: int) -> list[tuple[float, int, str]]:
    rng = random.Random(seed)
    return sorted((window_s * math.sqrt(rng.random()), i, e) for i in range(learners) for e in exercises)


def slot_rss_sampler(stop: threading.Event, out: list[float]) -> None:
    """RSS (MB) of every Ray worker process running a grading task (`ray::grade_on_node`), every 2 s."""
    while not stop.wait(2.0):
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::grade_on_node"):
                    continue
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    out.append(int(line.split()[1]) / 1024)


def deadline_run(args, *, env, cluster, db, tokens, body, holds, workdir) -> dict:
    wenv = kit.worker_env(env, holds=holds, slots=args.slots, reserved=args.reserved, npus=args.npus)
    worker = kit.start_worker(wenv, workdir, address=cluster.address, slots=args.slots, tag="deadline")
    time.sleep(args.settle_s)  # its imports, ray.init and registration: not the deadline's cost
    alive = lambda: worker.proc.poll() is None  # noqa: E731
    kit.wait_registered(db.engine, timeout_s=args.drain_timeout_s, alive=alive)
    if not alive():
        raise SystemExit(f"the worker exited ({worker.proc.returncode}); see {workdir / 'deadline.log'}")
    # Warm nodes, as an hour into term they are: each Ray worker process imports the grading stack once
    # (seconds) before its first job. These uploads are graded first and left out of every figure.
    light = sorted(e for e in body if e in args.light)
    warm = [(0.0, i % len(tokens), light[i % len(light)]) for i in range(args.warm_per_node * args.nodes)]
    warm_ids = set(kit.post_arrivals(args.url, warm, tokens, body, threads=args.threads)["accepted"])
    warmed = kit.wait_done(db.engine, list(warm_ids), timeout_s=args.drain_timeout_s, alive=alive)
    print(f"warm-up: {warmed}/{len(warm)} graded", flush=True)
    before = worker.read()
    exercises = sorted(body)
    plan = arrivals(learners=args.learners, exercises=exercises, window_s=HOUR_S / args.compress, seed=args.seed)
    stop, rss = threading.Event(), []
    threading.Thread(target=slot_rss_sampler, args=(stop, rss), daemon=True).start()
    t0 = time.time()
    posted = kit.post_arrivals(args.url, plan, tokens, body, threads=args.threads)
    posted_s = time.time() - t0
    done = kit.wait_done(db.engine, [*warm_ids, *posted["accepted"]], timeout_s=args.drain_timeout_s, alive=alive)
    done -= len(warm_ids)
    after = worker.read()
    stop.set()
    worker.stop()
    rs = [r for r in kit.rows(db.engine) if r.id not in warm_ids]
    jobs = len(rs)
    args.done_ids = {r.id for r in kit.rows(db.engine)}  # the saturation runs measure only their own
    return {
        "submitted": len(plan),
        "accepted": len(posted["accepted"]),
        "refused": posted["refused"][:5],
        "post_late_p95_s": posted["late_p95_s"],
        "posted_s": posted_s,
        "graded": done,
        "all_done_once": all(r.job_status == "done" and r.attempts == 1 for r in rs),
        "all_held_by_standin": all(r.engine == "standin-hold" and r.trace for r in rs),
        "waits_s": kit.waits(rs),
        "nodes": kit.node_use(rs, cpus=args.cpus, npus=args.npus)[0],
        "span_s": kit.node_use(rs, cpus=args.cpus, npus=args.npus)[1],
        "worker_cpu_s_per_job": (after["cpu_s"] - before["cpu_s"]) / max(jobs, 1),
        "worker_statements_per_job": (after["statements"] - before["statements"]) / max(jobs, 1),
        "worker_commits_per_job": (after["commits"] - before["commits"]) / max(jobs, 1),
        "worker_max_rss_mb": after["max_rss_mb"],
        "slot_rss_mb": {"samples": len(rss), "p50": kit.pct(rss, 0.5), "max": max(rss, default=float("nan"))},
    }


def saturation(args, *, env, cluster, db, tokens, body, workdir, workers: int) -> dict:
    """N light jobs queued first, then claimed and dispatched (zero holds) by `workers` burst workers."""
    light = sorted(e for e in body if e in args.light)
    plan = [(0.0, i % len(tokens), light[i % len(light)]) for i in range(args.saturation)]
    ids = set(kit.post_arrivals(args.url, plan, tokens, body, threads=args.threads)["accepted"])
    wenv = kit.worker_env(env, holds={"*": 0.0}, slots=args.slots, reserved=args.reserved, npus=args.npus)
    procs = [
        kit.start_worker(wenv, workdir, address=cluster.address, slots=args.slots, burst=True, tag=f"sat{workers}-{k}")
        for k in range(workers)
    ]
    for p in procs:
        p.proc.wait(args.drain_timeout_s)
    rs = [r for r in kit.rows(db.engine) if r.id in ids]
    assert not ids & args.done_ids
    first = min(r.started for r in rs if r.started)
    last = max(r.graded for r in rs if r.graded)
    stats = [p.read() for p in procs]
    n = sum(1 for r in rs if r.status == "graded")
    return {
        "workers": workers,
        "jobs": len(ids),
        "graded": n,
        "jobs_per_s": n / (last - first) if last > first else float("nan"),
        "worker_cpu_s_per_job": sum(s["cpu_s"] for s in stats) / max(n, 1),  # whole processes, start-up included
        "worker_statements_per_job": sum(s["statements"] for s in stats) / max(n, 1),
    }


def sizing(
    durations: dict[str, float],
    lanes: dict[str, str],
    *,
    npus_per_job: int,
    npus: int,
    cpus: int,
    dispatch_per_s: float | None,
    utilisation: float = 0.8,
) -> list[str]:
    """Nodes for N learners x 17 exercises within a window: NPU-seconds (training) and CPU-seconds (each
    job's reserved CPUs x its duration) per learner over node capacity x window x `utilisation`."""
    npu_s = sum(d * npus_per_job for e, d in durations.items() if lanes[e] == "long")
    cpu_s = sum(d * (2 if lanes[e] == "long" else 1) for e, d in durations.items())
    lines = ["| learners | window | NPU-h | nodes (NPU) | nodes (CPU) | nodes | peak jobs/s (2x mean) | one worker |"]
    lines.append("|---|---|---|---|---|---|---|---|")
    for n in (100, 1000, 5000):
        for w_h in (1, 3):
            w = w_h * HOUR_S
            by_npu = math.ceil(n * npu_s / (w * npus * utilisation)) if npus and npus_per_job else 0
            by_cpu = math.ceil(n * cpu_s / (w * cpus * utilisation))
            peak = 2 * n * len(durations) / w
            fits = "n/a" if dispatch_per_s is None else ("enough" if peak < dispatch_per_s / 2 else "NOT enough")
            lines.append(
                f"| {n:,} | {w_h} h | {n * npu_s / 3600:.0f} | {by_npu} | {by_cpu} | {max(by_npu, by_cpu, 1)} "
                f"| {peak:.1f} | {fits} |"
            )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--learners", type=int, default=20)
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--cpus", type=int, default=32, help="CPUs each node declares")
    ap.add_argument("--npus", type=int, default=8, help="NPUs each node declares (fake inventory)")
    ap.add_argument("--memory-gb", type=int, default=256, help="memory each node declares to Ray")
    ap.add_argument("--training-npus", type=int, default=2, help="NPUs a training exercise asks for (0: CPU ranks)")
    ap.add_argument("--training-s", type=float, default=None, help="training duration instead of the measured one")
    ap.add_argument("--compress", type=float, default=20.0, help="time compression factor")
    ap.add_argument("--slots", type=int, default=16, help="the worker's slots: the most jobs it keeps on the cluster")
    ap.add_argument("--reserved", type=int, default=4, help="slots (and cluster room) kept for the short lane")
    ap.add_argument("--threads", type=int, default=6, help="HTTP client threads")
    ap.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--pg", default=PG_URL)
    ap.add_argument("--saturation", type=int, default=200, help="light jobs per dispatch-rate run (0: skip)")
    ap.add_argument("--settle-s", type=float, default=8.0)
    ap.add_argument("--warm-per-node", type=int, default=3, help="light uploads per node graded before the hour")
    ap.add_argument("--drain-timeout-s", type=float, default=1800.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    args = ap.parse_args()

    from grading.exercise import Catalogue

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run still takes its cluster down

    workdir = Path(tempfile.mkdtemp(prefix="tgbench-deadline-"))
    exercises = kit.scenario_catalogue(workdir, training_npus=args.training_npus)
    catalogue = Catalogue(exercises, REPO / "reference")
    lanes = {e.id: e.manifest.lane for e in catalogue}
    durations = kit.measured_run_s()
    if args.training_s is not None:
        durations = {e: args.training_s if lanes[e] == "long" else d for e, d in durations.items()}
    holds = {e: d / args.compress for e, d in durations.items()}
    args.light = {e for e, lane in lanes.items() if lane == "short"}
    print(
        f"load average before: {os.getloadavg()[0]:.2f}; {args.learners} learners x {len(lanes)} exercises, "
        f"{args.nodes} nodes x ({args.cpus} CPUs, {args.npus} NPUs), compress {args.compress:g}x, db {args.db}"
    )
    print("durations (s, real):", json.dumps(durations))
    cluster = kit.start_cluster(nodes=args.nodes, cpus=args.cpus, npus=args.npus, memory_gb=args.memory_gb)
    print(f"cluster started in {cluster.start_s:.1f} s", flush=True)
    db = FreshDatabase(pg_url=args.pg if args.db == "postgres" else None, workdir=workdir, prefix="deadline")
    api = None
    figures: dict = {"args": {k: v for k, v in vars(args).items() if k not in ("light", "out")}}
    try:
        env = kit.service_env(db_url=db.url, exercises=exercises)
        api, args.url = kit.start_api(env, workdir)
        tokens = kit.learner_tokens(db.engine, args.learners)
        body = kit.bodies(exercises)
        common = {"env": env, "cluster": cluster, "db": db, "tokens": tokens, "body": body, "workdir": workdir}
        figures["deadline"] = deadline_run(args, holds=holds, **common)
        if args.saturation:
            figures["saturation"] = [saturation(args, workers=w, **common) for w in (1, 2)]
    finally:
        if api is not None:
            api.terminate()
            api.wait(30)
        db.drop()
        kit.stop_cluster(cluster)
    one = figures.get("saturation", [{}])[0].get("jobs_per_s")
    figures["sizing"] = sizing(
        durations, lanes, npus_per_job=args.training_npus, npus=args.npus, cpus=args.cpus, dispatch_per_s=one
    )
    report(figures, compress=args.compress)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1, default=str))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    d = figures["deadline"]
    return 0 if d["all_done_once"] and d["all_held_by_standin"] and d["graded"] == d["submitted"] else 1


def report(f: dict, *, compress: float) -> None:
    d = f["deadline"]
    print(
        f"\naccepted {d['accepted']}/{d['submitted']} (posts late p95 {d['post_late_p95_s']:.2f} s), "
        f"graded {d['graded']}, every job done in one attempt: {d['all_done_once']}, every one held by the "
        f"stand-in: {d['all_held_by_standin']}; span {d['span_s']:.0f} s "
        f"(= {d['span_s'] * compress / 60:.0f} min real)"
    )
    print("\n| wait (submitted -> claimed) | n | p50 measured | p95 measured | p50 real-time | p95 real-time |")
    print("|---|---|---|---|---|---|")
    for k, w in d["waits_s"].items():
        print(
            f"| {k} | {w['n']} | {w['p50']:.3f} s | {w['p95']:.3f} s | {w['p50'] * compress:.1f} s "
            f"| {w['p95'] * compress:.1f} s |"
        )
    print("\n| node | jobs | CPU util | NPU util | peak NPUs held |")
    print("|---|---|---|---|---|")
    for node, n in sorted(d["nodes"].items()):
        print(f"| {node[:8]} | {n['jobs']} | {n['cpu_util']:.1%} | {n['npu_util']:.1%} | {n['peak_npus']:g} |")
    print(
        f"\nworker: {d['worker_cpu_s_per_job'] * 1000:.1f} ms CPU/job, {d['worker_statements_per_job']:.1f} SQL "
        f"statements/job, {d['worker_commits_per_job']:.1f} commits/job, max RSS {d['worker_max_rss_mb']:.0f} MB; "
        f"slot (ray::grade_on_node) RSS p50 {d['slot_rss_mb']['p50']:.0f} MB, max {d['slot_rss_mb']['max']:.0f} MB "
        f"({d['slot_rss_mb']['samples']} samples)"
    )
    for s in f.get("saturation", []):
        print(
            f"dispatch, {s['workers']} worker(s): {s['graded']}/{s['jobs']} in {s['jobs_per_s']:.1f} jobs/s; "
            f"{s['worker_cpu_s_per_job'] * 1000:.1f} ms CPU/job, {s['worker_statements_per_job']:.1f} statements/job"
        )
    print("\nsizing (80% target utilisation):")
    print("\n".join(f["sizing"]))


if __name__ == "__main__":
    sys.exit(main())
