"""The machinery of bench_cluster_deadline.py, shared with its toy-scale test (tests/service/workers/
test_standin.py): a scenario catalogue, the measured durations, a Ray cluster of simulated nodes, the API
and `titangrade worker` processes (the worker counting its own SQL statements and CPU), learners posting
through HTTP, and the figures read back from the database. Not a benchmark itself."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
from benchkit import free_port, start_serve  # noqa: E402

COURSE = "deadline"
BOUNDARY = "tgclusterboundary5e2a"
SMALL = {"object_store_memory": 80 * 2**20}  # Ray's object store is unused here; keep each node small


# ---- what each exercise costs ------------------------------------------------------------------------


def measured_run_s(readme: Path = REPO / "README.md") -> dict[str, float]:
    """Per exercise, the measured CPU run time of its solution graded end to end in the bwrap sandbox (the
    README's exercise table, `scripts/exercise_table.py --measure`, quiet 2-core machine)."""
    out = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| `(ch\d\d\.[a-z_]+)` \|.*\| ([0-9.]+) s \|$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    if len(out) < 17:
        raise SystemExit(f"README.md's exercise table gave {len(out)} run times, expected 17: has it changed?")
    return out


def scenario_catalogue(root: Path, *, training_npus: int) -> Path:
    """A copy of the course's exercise manifests and notebooks in `root`; with training_npus > 0 the
    long-lane exercises ask for that many NPUs (as an NPU course would), else they stay CPU ranks."""
    dest = root / "exercises"
    for chapter in sorted((REPO / "exercises").glob("ch[0-9][0-9]")):
        shutil.copytree(chapter, dest / chapter.name)
    if training_npus:
        for toml in dest.glob("ch*/*/exercise.toml"):
            text = toml.read_text(encoding="utf-8")
            if re.search(r'^lane = "long"$', text, re.M):
                text = re.sub(r"^devices = \d+$", f"devices = {training_npus}", text, flags=re.M)
                text = re.sub(r"^device_kinds = .*$", 'device_kinds = ["npu"]', text, flags=re.M)
                toml.write_text(text, encoding="utf-8")
    return dest


# ---- the cluster, the API, the workers ---------------------------------------------------------------


def start_cluster(*, nodes: int, cpus: int, npus: int, memory_gb: int):
    """A `ray.cluster_utils` cluster on this host: a head with no CPUs (the driver only) and `nodes` nodes
    declaring `cpus` CPUs, `npus` NPUs (a fake inventory: Ray assigns ids, there is no hardware) and
    `memory_gb` of memory each. Returns it with `.tmp` (its private RAY_TMPDIR) and `.start_s`."""
    from ray.cluster_utils import Cluster

    tmp = tempfile.mkdtemp(prefix="tgdl", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    os.environ["RAY_TMPDIR"] = tmp
    # The nodes' Ray worker processes import `service` from this checkout, not from wherever the venv's
    # editable install points (in a worktree that is another tree, which would grade for real).
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    # Ray prestarts one Python process per declared CPU on every node and keeps as many idle ones: with 32
    # fake CPUs on each of 8 nodes that is 256 processes on a machine that has 2 cores. Start workers on
    # demand and keep few idle (a job on a node without an idle worker waits for one to start, as on a
    # cold real node).
    os.environ.setdefault("RAY_enable_worker_prestart", "0")
    os.environ.setdefault("RAY_prestart_worker_first_driver", "0")
    os.environ.setdefault("RAY_num_workers_soft_limit", str(max(2, min(cpus, 6))))
    t0 = time.perf_counter()
    head = {"num_cpus": 0, "gcs_server_port": free_port(), "dashboard_agent_listen_port": free_port()}
    c = Cluster(
        initialize_head=True,
        head_node_args={**head, "include_dashboard": False, "temp_dir": os.path.join(tmp, "ray"), **SMALL},
    )
    for _ in range(nodes):
        resources = {"NPU": npus} if npus else {}
        c.add_node(num_cpus=cpus, resources=resources, memory=memory_gb * 2**30, **SMALL)
    c.wait_for_nodes()
    c.tmp, c.start_s = tmp, time.perf_counter() - t0
    return c


def stop_cluster(c) -> None:
    c.shutdown()
    shutil.rmtree(c.tmp, ignore_errors=True)


def service_env(*, db_url: str, exercises: Path, extra: dict | None = None) -> dict:
    return dict(
        os.environ,
        PYTHONPATH=str(REPO),
        TITANGRADE_MODE="dev",
        TITANGRADE_DATABASE_URL=db_url,
        TITANGRADE_SECRET_KEY="d" * 40,
        TITANGRADE_SUBMISSIONS_PER_MINUTE="1000000",
        TITANGRADE_EXERCISES_ROOT=str(exercises),
        TITANGRADE_REFERENCE_ROOT=str(REPO / "reference"),
        **(extra or {}),
    )


def start_api(env: dict, workdir: Path):
    """`titangrade serve --workers 0`: the real intake, no grading in it."""
    log = workdir / "serve.log"
    return start_serve(args=["--workers", "0"], env=env, workdir=workdir, log=log, ready="/healthz", new_session=True)


# Runs `titangrade worker` with two counters around it: every SQL statement its engines execute and every
# commit (SQLAlchemy events on all engines), and its own CPU; written to a JSON file twice a second.
_COUNTING_WORKER = """
import json, os, resource, sys, threading, time
from sqlalchemy import event
from sqlalchemy.engine import Engine
counts = {"statements": 0, "commits": 0}
event.listen(Engine, "before_cursor_execute", lambda *a: counts.__setitem__("statements", counts["statements"] + 1))
event.listen(Engine, "commit", lambda *a: counts.__setitem__("commits", counts["commits"] + 1))
out = sys.argv[1]
def dump():
    r = resource.getrusage(resource.RUSAGE_SELF)
    data = dict(counts, cpu_s=r.ru_utime + r.ru_stime, max_rss_mb=r.ru_maxrss / 1024, t=time.time())
    with open(out + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(out + ".tmp", out)
def loop():
    while True:
        dump()
        time.sleep(0.5)
threading.Thread(target=loop, daemon=True).start()
from service.cli import main
sys.exit(main(sys.argv[2:]))
"""


@dataclass
class WorkerProc:
    proc: subprocess.Popen
    stats: Path

    def read(self) -> dict:
        try:
            return json.loads(self.stats.read_text())
        except (OSError, ValueError):
            return {"statements": 0, "commits": 0, "cpu_s": 0.0, "max_rss_mb": 0.0}

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def start_worker(env: dict, workdir: Path, *, address: str, slots: int, burst: bool = False, tag: str = "w"):
    stats = workdir / f"{tag}-stats.json"
    args = ["worker", "--executor", "ray", "--address", address, "--slots", str(slots), *(["--burst"] * burst)]
    with (workdir / f"{tag}.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", _COUNTING_WORKER, str(stats), *args],
            env=env,
            cwd=workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return WorkerProc(proc=proc, stats=stats)


def worker_env(base: dict, *, holds: dict[str, float], slots: int, reserved: int, npus: int = 0) -> dict:
    return {
        **base,
        "TITANGRADE_GRADING_ENGINE": "standin-hold",
        "TITANGRADE_STANDIN_HOLD_S": json.dumps(holds),
        "TITANGRADE_SANDBOX": "unsafe-local",  # nothing runs in it: the stand-in holds, it grades nothing
        "TITANGRADE_SANDBOX_PREWARM": "",  # no warm kernels: nothing would use them
        "TITANGRADE_WORKER_SLOTS": str(slots),
        "TITANGRADE_SHORT_RESERVED_SLOTS": str(reserved),
        "TITANGRADE_POLL_S": "0.05",
        "TITANGRADE_HEARTBEAT_S": "2",
        "TITANGRADE_LEASE_S": "120",
        # The intake refuses a device exercise unless a live worker's heartbeat offers that many devices, and a
        # Ray worker's heartbeat reports its own WORKER_DEVICES, not the cluster's NPUs (a gap: docs/cluster.md).
        # It never takes these itself (Ray grants the devices on the node), so declaring a node's count is safe.
        **({"TITANGRADE_WORKER_DEVICES": f"npu:0-{npus - 1}"} if npus else {}),
    }


def wait_registered(engine, *, timeout_s: float, alive=lambda: True) -> None:
    """Until a worker's heartbeat row exists (the intake checks device exercises against it)."""
    from sqlalchemy import text

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and alive():
        with engine.connect() as conn:
            if conn.execute(text("SELECT count(*) FROM worker_heartbeats")).scalar():
                return
        time.sleep(0.5)
    raise SystemExit("no worker registered in time (see its log)")


# ---- learners ----------------------------------------------------------------------------------------


def learner_tokens(engine, learners: int) -> list[str]:
    from service import bootstrap
    from service.auth.service import create_token
    from service.db import transaction

    with transaction(bootstrap.sessions(engine)) as s:
        return [create_token(s, user=f"learner{i:04d}", role="learner", course=COURSE) for i in range(learners)]


def bodies(exercises: Path) -> dict[str, bytes]:
    """Per exercise, a multipart upload of its published notebook (encoded once)."""
    from grading.exercise import Catalogue

    out = {}
    for ex in Catalogue(exercises, REPO / "reference"):
        nb = ex.notebook_path.read_bytes()
        out[ex.id] = (
            (
                f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="exercise_id"\r\n\r\n{ex.id}\r\n'
                f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="notebook"; filename="nb.ipynb"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n"
            ).encode()
            + nb
            + f"\r\n--{BOUNDARY}--\r\n".encode()
        )
    return out


def post_arrivals(url: str, arrivals: list[tuple[float, int, str]], tokens: list[str], body: dict[str, bytes],
                  *, threads: int = 6) -> dict:  # fmt: skip
    """Each arrival (t seconds from now, learner, exercise) posted when due by one of `threads` keep-alive
    clients; returns accepted ids, refusals and how late the posts went out (p95)."""
    import httpx

    start = time.monotonic() + 0.5
    lock, pending = threading.Lock(), sorted(arrivals, reverse=True)
    accepted: list[str] = []
    refused: list[str] = []
    late: list[float] = []
    headers = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}

    def run() -> None:
        with httpx.Client(base_url=url, timeout=120) as c:
            while True:
                with lock:
                    if not pending:
                        return
                    t, learner, exercise_id = pending.pop()
                wait = start + t - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                late.append(max(0.0, -wait))
                auth = {"Authorization": f"Bearer {tokens[learner]}", **headers}
                r = c.post("/api/v1/submissions", content=body[exercise_id], headers=auth)
                (accepted if r.status_code == 202 else refused).append(
                    r.json()["id"] if r.status_code == 202 else f"{r.status_code} {r.text[:200]}"
                )

    pool = [threading.Thread(target=run, daemon=True) for _ in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    late.sort()
    return {"accepted": accepted, "refused": refused, "late_p95_s": late[int(0.95 * (len(late) - 1))] if late else 0}


# ---- figures from the database -----------------------------------------------------------------------


def wait_done(engine, ids: list[str], *, timeout_s: float, alive=lambda: True, every_s: float = 1.0) -> int:
    """Until every submission in `ids` is graded (or the timeout, or `alive()` is false); returns how many are."""
    from sqlalchemy import text

    deadline, done = time.monotonic() + timeout_s, 0
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            done = int(conn.execute(text("SELECT count(*) FROM submissions WHERE status = 'graded'")).scalar() or 0)
        if done >= len(ids) or not alive():
            break
        time.sleep(every_s)
    return done


@dataclass(frozen=True, slots=True)
class Row:
    """One submission as the benchmark reads it back."""

    id: str
    user: str
    exercise_id: str
    lane: str
    status: str
    job_status: str
    attempts: int
    created: float  # unix seconds
    started: float | None
    graded: float | None
    trace: dict | None  # the stand-in's record of what it held
    engine: str  # the result's engine_version: the stand-in's name, or a real engine that graded


def rows(engine) -> list[Row]:
    from sqlalchemy import text

    def unix(v) -> float | None:
        if v is None:
            return None
        if isinstance(v, str):
            import datetime as dt

            v = dt.datetime.fromisoformat(v)
        import datetime as dt

        return v.replace(tzinfo=dt.UTC).timestamp() if v.tzinfo is None else v.timestamp()

    out = []
    with engine.connect() as conn:
        for r in conn.execute(
            text(
                "SELECT s.id, j.learner, s.exercise_id, j.lane, s.status, j.status, j.attempts, s.created_at, "
                "s.started_at, s.graded_at, s.result FROM submissions s JOIN jobs j ON j.submission_id = s.id"
            )
        ):
            result = r[10] if isinstance(r[10], dict) or r[10] is None else json.loads(r[10])
            trace = (result or {}).get("trace") or [None]
            engine = (result or {}).get("engine_version", "")
            out.append(
                Row(r[0], r[1], r[2], r[3], r[4], r[5], r[6], unix(r[7]), unix(r[8]), unix(r[9]), trace[0], engine)
            )
    return out


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, round(q * (len(v) - 1)))]


def waits(rs: list[Row]) -> dict:
    """p50/p95 wait (submitted -> claimed) per lane, and over learners of each learner's mean wait."""
    out: dict = {}
    for lane in sorted({r.lane for r in rs}):
        w = [r.started - r.created for r in rs if r.lane == lane and r.started is not None]
        out[lane] = {"n": len(w), "p50": pct(w, 0.5), "p95": pct(w, 0.95), "max": max(w, default=float("nan"))}
    per: dict[str, list[float]] = {}
    for r in rs:
        if r.started is not None:
            per.setdefault(r.user, []).append(r.started - r.created)
    means = [statistics.fmean(v) for v in per.values()]
    out["learner_mean"] = {"n": len(means), "p50": pct(means, 0.5), "p95": pct(means, 0.95)}
    return out


def node_use(rs: list[Row], *, cpus: int, npus: int) -> tuple[dict[str, dict], float]:
    """Per node: jobs, CPU- and NPU-seconds held (from the stand-in's records) over the span from the first
    submission to the last grade; the peak number of NPUs held at once (never above the node's)."""
    held = [r.trace for r in rs if r.trace]
    t0 = min(r.created for r in rs)
    span = max(r.graded for r in rs if r.graded) - t0
    nodes: dict[str, dict] = {}
    for h in held:
        n = nodes.setdefault(h["node"], {"jobs": 0, "cpu_s": 0.0, "npu_s": 0.0, "events": []})
        n["jobs"] += 1
        n["cpu_s"] += h["assigned"].get("CPU", 0.0) * h["held_s"]
        npu = h["assigned"].get("NPU", 0.0)
        n["npu_s"] += npu * h["held_s"]
        n["events"] += [(h["start_unix"], npu), (h["end_unix"], -npu)]
    for n in nodes.values():
        level = peak = 0.0
        for _, d in sorted(n.pop("events"), key=lambda e: (e[0], e[1])):
            level += d
            peak = max(peak, level)
        n["peak_npus"] = peak
        n["cpu_util"] = n["cpu_s"] / (cpus * span) if span > 0 else 0.0
        n["npu_util"] = n["npu_s"] / (npus * span) if span > 0 and npus else 0.0
    return nodes, span
