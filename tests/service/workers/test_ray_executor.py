"""The Ray executor on a real Ray test cluster on this machine (`ray.cluster_utils.Cluster`): a head with no
CPUs, a CPU node and a node with 2 NPUs. The NPU count is a FAKE inventory (a custom resource on a node with
no NPU hardware; Ray still assigns ids and sets ASCEND_RT_VISIBLE_DEVICES), and a FAKE `npu-smi` on the
nodes' PATH reports the devices listed in a flag file as held (the real parser reads its table). Real
kernels, real database. One cluster per module (it takes ~8 s to start on 2 cores); torn down at the end."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select

from service.db import transaction
from service.outbox.models import OutboxEvent
from service.queue.models import Job
from service.submissions.models import ProgressEvent, Submission
from service.wiring import build_worker

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

NPU_TOML = """id = "ch05.svc_npu"
chapter = 5
notebook = "svc_npu.ipynb"
lane = "long"

[title]
en = "Service test exercise svc_npu (2 ranks on 2 NPUs)"
zh = "服务测试练习 svc_npu"

[limits]
cell_timeout_s = 30
run_timeout_s = 60
memory_mb = 2048

[resources]
world_size = 2
devices = 2
device_kinds = ["npu"]

[[answers]]
name = "total"

[[answers]]
name = "visible"

[[checks]]
name = "total_value"
answer = "total"
kind = "exact"
points = 2

[[checks]]
name = "visible_devices"
answer = "visible"
kind = "exact"
points = 1
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _npu_exercise(root: Path) -> None:
    """svc_npu: its solution reports the visible-device variable its kernel sees (expected: both NPUs)."""
    import json

    import nbformat

    def nb(*cells: str):
        book = nbformat.v4.new_notebook()
        book.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
        book.metadata["titangrade"] = {"exercise_id": "ch05.svc_npu"}
        book.cells = [nbformat.v4.new_code_cell(c) for c in cells]
        return book

    ex, ref = root / "exercises" / "ch05" / "svc_npu", root / "reference" / "ch05.svc_npu"
    ex.mkdir(parents=True)
    ref.mkdir(parents=True)
    (ex / "exercise.toml").write_text(NPU_TOML, encoding="utf-8")
    nbformat.write(nb("total = None", "visible = None"), ex / "svc_npu.ipynb")
    nbformat.write(
        nb(
            "import os, time\ntime.sleep(float(os.environ.get('TG_TEST_SLEEP', '0')))\ntotal = 2 + 3",
            "visible = os.environ.get('ASCEND_RT_VISIBLE_DEVICES')",
        ),
        ref / "solution.ipynb",
    )
    answer = {
        "exercise_id": "ch05.svc_npu",
        "checks": {
            "total_value": {"expected": 5, "feedback": {"en": "add", "zh": "加"}},
            "visible_devices": {"expected": "0,1", "feedback": {"en": "both NPUs", "zh": "两张 NPU"}},
        },
    }
    (ref / "svc_npu_answer.txt").write_text(json.dumps(answer), encoding="utf-8")


@pytest.fixture(scope="module")
def catalogue_dir(svc, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("raycat")
    shutil.copytree(svc.catalogue_dir / "exercises", root / "exercises")
    shutil.copytree(svc.catalogue_dir / "reference", root / "reference")
    _npu_exercise(root)
    return root


def _fake_npu_smi(tmp: Path) -> Path:
    """A FAKE `npu-smi info` in CANN's table format: the ids in <tmp>/npu-busy have a process on them."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "npu-smi"
    tool.write_text(
        "#!/bin/sh\n"
        "echo '| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |'\n"
        f"[ -f {tmp}/npu-busy ] && for i in $(cat {tmp}/npu-busy); do\n"
        "  echo \"| $i       0                 | 4242          | python                   | 3100  |\"\n"
        "done\n"
        "exit 0\n"
    )
    tool.chmod(0o755)
    return bin_dir


@pytest.fixture(scope="module")
def cluster():
    """Head (0 CPUs: the driver only), node `cpu` (2 CPUs) and node `npu` (2 CPUs, NPU: 2, fake)."""
    from ray.cluster_utils import Cluster

    tmp = tempfile.mkdtemp(prefix="tgray", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    old = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = tmp  # Ray writes its "current cluster" file there, not in a shared /tmp/ray
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{_fake_npu_smi(Path(tmp))}:{old_path}"  # the nodes inherit it
    small = {"object_store_memory": 80 * 2**20, "memory": 4 * 2**30}
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
    nodes = {"cpu": c.add_node(num_cpus=2, **small), "npu": c.add_node(num_cpus=2, resources={"NPU": 2}, **small)}
    c.wait_for_nodes()
    c.tmp, c.named = tmp, nodes
    try:
        yield c
    finally:
        c.shutdown()
        os.environ["PATH"] = old_path
        if old is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = old
        shutil.rmtree(tmp, ignore_errors=True)


def _settings(svc, db_url, catalogue_dir, cluster, **extra):
    values = {
        "executor": "ray",
        "ray_address": cluster.address,
        "exercises_root": catalogue_dir / "exercises",
        "reference_root": catalogue_dir / "reference",
        "worker_slots": 4,
        "short_reserved_slots": 1,
        "ray_node_cooldown_s": 60,
    }
    values.update(extra)
    return svc.settings(db_url, **values)


def _burst(settings, sessions):
    worker = build_worker(settings, sessions=sessions)
    worker.run(burst=True)  # drains, then shuts the executor down (ray.shutdown)
    return worker


def _nb(svc, catalogue_dir, exercise_id="ch05.svc_sum", slow_s=0.0, solved=True) -> bytes:
    import nbformat

    if exercise_id != "ch05.svc_npu":
        return svc.notebook(exercise_id, slow_s=slow_s, solved=solved)
    nb = nbformat.read(catalogue_dir / "reference" / "ch05.svc_npu" / "solution.ipynb", as_version=4)
    if slow_s:
        nb.cells.insert(0, nbformat.v4.new_code_cell(f"import time\ntime.sleep({slow_s})"))
    return nbformat.writes(nb).encode()


def _add(s, add_submission, svc, catalogue_dir, exercise_id="ch05.svc_sum", *, slow_s=0.0, lane=None, **kw):
    spec = {"ch05.svc_npu": ("long", 2, 2), "ch05.svc_long": ("long", 0, 1)}.get(exercise_id, ("short", 0, 1))
    sub, job = add_submission(
        s,
        exercise_id=exercise_id,
        lane=lane or spec[0],
        devices=spec[1],
        notebook=_nb(svc, catalogue_dir, exercise_id, slow_s),
        **kw,
    )
    job.world_size = spec[2]
    return sub


def _placed(sessions, sub_id) -> list[dict]:
    with sessions() as s:
        return [
            e.data
            for e in s.scalars(
                select(ProgressEvent).where(ProgressEvent.submission_id == sub_id, ProgressEvent.event == "placed")
            )
        ]


def _events(sessions, sub_id) -> list[str]:
    with sessions() as s:
        return [
            e.event
            for e in s.scalars(
                select(ProgressEvent).where(ProgressEvent.submission_id == sub_id).order_by(ProgressEvent.id)
            )
        ]


def _sqlite_only():
    return pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)


@_sqlite_only()
def test_npu_job_lands_on_the_npu_node_and_its_bwrap_kernel_sees_both_devices(
    cluster, catalogue_dir, db_url, sessions, svc, add_submission
):
    from grading.sandbox import probe

    found = probe()
    if not found.usable:
        pytest.skip(f"bwrap unusable here: {found.reason}")
    with transaction(sessions) as s:
        npu = _add(s, add_submission, svc, catalogue_dir, "ch05.svc_npu")
        cpu = _add(s, add_submission, svc, catalogue_dir)
    worker = _burst(_settings(svc, db_url, catalogue_dir, cluster, sandbox="bwrap"), sessions)
    assert worker.stored == 2
    with sessions() as s:
        got = {x.id: (s.get(Submission, x.id).status, s.get(Submission, x.id).score) for x in (npu, cpu)}
        checks = {c["name"]: c["passed"] for c in s.get(Submission, npu.id).result["checks"]}
        assert s.get(Submission, npu.id).result["sandbox"] == "bwrap"
        assert s.get(Submission, npu.id).result["device"] == "npu"
    assert got == {npu.id: ("graded", 3.0), cpu.id: ("graded", 3.0)}, checks
    assert _placed(sessions, npu.id) == [
        {"node": cluster.named["npu"].node_id, "device_kind": "npu", "device_ids": [0, 1]}
    ]
    # a CPU job keeps off the accelerator node while a CPU-only node is free
    assert _placed(sessions, cpu.id) == [{"node": cluster.named["cpu"].node_id, "device_kind": "cpu", "device_ids": []}]
    events = _events(sessions, npu.id)
    assert events[:4] == ["queued", "claimed", "placed", "started"] and events[-2:] == ["checks", "done"]


@_sqlite_only()
def test_training_waits_in_the_queue_and_short_jobs_interleave(
    cluster, catalogue_dir, db_url, sessions, svc, add_submission
):
    """Two 2-NPU jobs, one NPU node: the second waits in the DB (never claimed, never inside Ray) while
    short CPU jobs keep running beside the first; a grader fault retries and ends not_gradable."""
    with transaction(sessions) as s:
        npu1 = _add(s, add_submission, svc, catalogue_dir, "ch05.svc_npu", slow_s=6)
        npu2 = _add(s, add_submission, svc, catalogue_dir, "ch05.svc_npu")
        shorts = [_add(s, add_submission, svc, catalogue_dir) for _ in range(3)]
        broken = add_submission(
            s, exercise_id="ch05.svc_broken", max_attempts=2, notebook=svc.notebook("ch05.svc_broken")
        )[0]
    _burst(_settings(svc, db_url, catalogue_dir, cluster), sessions)
    with sessions() as s:
        subs = {x.id: s.get(Submission, x.id) for x in (npu1, npu2, *shorts, broken)}
        jobs = {j.submission_id: j for j in s.scalars(select(Job))}
        n2 = subs[npu2.id]
        assert [(subs[x.id].status, subs[x.id].score) for x in shorts] == [("graded", 3.0)] * 3
        # unsafe-local kernels get the granted devices' variables too, as bwrap ones do
        assert [(subs[x.id].status, subs[x.id].score) for x in (npu1, npu2)] == [("graded", 3.0)] * 2
        n1_checked = s.scalar(
            select(ProgressEvent.created_at).where(
                ProgressEvent.submission_id == npu1.id, ProgressEvent.event == "checks"
            )
        )
        assert all(subs[x.id].started_at < n1_checked for x in shorts)  # short jobs ran beside training
        assert n2.started_at >= n1_checked  # the second waited until the NPUs were free, in the queue
        assert [jobs[x.id].attempts for x in (npu1, npu2, *shorts)] == [1] * 5
        assert (subs[broken.id].status, jobs[broken.id].attempts) == ("not_gradable", 2)
        assert s.scalar(select(func.count()).select_from(OutboxEvent)) == 6


@pytest.mark.parametrize("db_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
def test_node_killed_mid_job_is_regraded_once_elsewhere(cluster, catalogue_dir, db_url, sessions, svc, add_submission):
    """A third node (3 CPUs, so CPU jobs prefer it) dies while grading: Ray reports the task lost, the job
    goes back to the queue, runs on another node, and exactly one grade and one outbox row are stored."""
    import threading

    victim = cluster.add_node(num_cpus=3, object_store_memory=80 * 2**20, memory=4 * 2**30)
    cluster.wait_for_nodes()
    with transaction(sessions) as s:
        sub = _add(s, add_submission, svc, catalogue_dir, slow_s=4)
    worker = build_worker(_settings(svc, db_url, catalogue_dir, cluster), sessions=sessions)
    thread = threading.Thread(target=worker.run, kwargs={"burst": True}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not _placed(sessions, sub.id) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _placed(sessions, sub.id)[0]["node"] == victim.node_id
        time.sleep(1.0)  # mid-job: the kernel sleeps in its first cell
        cluster.remove_node(victim, allow_graceful=False)
        thread.join(90)
        assert not thread.is_alive()
    finally:
        worker.stop.set()
        thread.join(20)
    with sessions() as s:
        got = s.get(Submission, sub.id)
        job = s.scalar(select(Job).where(Job.submission_id == sub.id))
        assert (got.status, got.score, job.status, job.attempts) == ("graded", 3.0, "done", 2)
        assert "Ray task failed" in job.last_error or "node" in job.last_error.lower()
        assert s.scalar(select(func.count()).select_from(OutboxEvent)) == 1
    nodes = [p["node"] for p in _placed(sessions, sub.id)]
    assert nodes[0] == victim.node_id and nodes[1] != victim.node_id and len(nodes) == 2


@_sqlite_only()
def test_a_node_killed_moments_ago_costs_no_attempt(cluster, catalogue_dir, db_url, sessions, svc, add_submission):
    """Ray lists a killed node as alive until its health checks fail (seconds). A job pinned to it in that
    window is unschedulable: it never started, so it goes back to the queue without using an attempt
    (even a job with a single attempt), and is graded once on a live node."""
    ghost = cluster.add_node(num_cpus=3, object_store_memory=80 * 2**20, memory=4 * 2**30)  # CPU jobs prefer it
    cluster.wait_for_nodes()
    cluster.remove_node(ghost, allow_graceful=False)
    with transaction(sessions) as s:
        sub = _add(s, add_submission, svc, catalogue_dir, max_attempts=1)
    worker = _burst(_settings(svc, db_url, catalogue_dir, cluster), sessions)
    assert worker.stored == 1
    with sessions() as s:
        got = s.get(Submission, sub.id)
        job = s.scalar(select(Job).where(Job.submission_id == sub.id))
        reasons = [
            e.data["reason"]
            for e in s.scalars(
                select(ProgressEvent).where(ProgressEvent.submission_id == sub.id, ProgressEvent.event == "requeued")
            )
        ]
        assert (got.status, got.score, job.status, job.attempts) == ("graded", 3.0, "done", 1), reasons
    # the ghost was chosen (still listed), refused the task, and was avoided afterwards
    assert len(reasons) == 1 and reasons[0].startswith("not started: Ray could not start the task"), reasons
    assert "TaskUnschedulableError" in reasons[0]
    assert [p["node"] for p in _placed(sessions, sub.id)] != [ghost.node_id]
    assert len(_placed(sessions, sub.id)) == 1


def test_a_failed_task_is_classified_by_whether_it_could_have_run():
    """Only an unschedulable task is known not to have run; a crash or a lost node may have run learner
    code, so it is a grader fault that uses an attempt."""
    from service.workers.executor import Faulted, NotStarted
    from service.workers.ray_executor import _task_failure

    errors = ray.exceptions
    unschedulable = _task_failure(errors.TaskUnschedulableError("node gone"), errors)
    crashed = _task_failure(errors.WorkerCrashedError(), errors)
    assert isinstance(unschedulable, NotStarted) and "TaskUnschedulableError: " in unschedulable.reason
    assert isinstance(crashed, Faulted) and crashed.retryable and crashed.reason.startswith("Ray task failed")


@_sqlite_only()
def test_worker_killed_with_a_job_on_ray_is_graded_once_after_the_lease(
    cluster, catalogue_dir, db_url, sessions, svc, add_submission, e2e, tmp_path
):
    """SIGKILL the `titangrade worker --executor ray` process mid-job: its Ray task dies with its owner,
    the lease expires, a second worker grades the job, and nothing is stored twice."""
    with transaction(sessions) as s:
        sub = _add(s, add_submission, svc, catalogue_dir, slow_s=4)
    env = e2e.service_env(db_url, catalogue_dir, RAY_TMPDIR=cluster.tmp)
    victim = e2e.Proc(
        ["worker", "--executor", "ray", "--address", cluster.address, "--slots", "2"], env, tmp_path / "victim.log"
    )
    try:
        e2e.wait_for(lambda: _placed(sessions, sub.id), 60, "the job to be placed", victim)
        time.sleep(1.0)
        victim.kill(signal.SIGKILL)
        settings = _settings(svc, db_url, catalogue_dir, cluster, lease_s=8.0)  # its own lease: slack under load
        rescuer = _burst(settings, sessions)
    finally:
        victim.kill()
    assert rescuer.stored == 1
    with sessions() as s:
        got = s.get(Submission, sub.id)
        job = s.scalar(select(Job).where(Job.submission_id == sub.id))
        history = [
            (e.event, e.data)
            for e in s.scalars(
                select(ProgressEvent).where(ProgressEvent.submission_id == sub.id).order_by(ProgressEvent.id)
            )
            if e.event != "cell"
        ]
        assert (got.status, got.score, job.status, job.attempts) == ("graded", 3.0, "done", 2), history
        assert "lease expired" in " ".join(
            e.data.get("reason", "")
            for e in s.scalars(
                select(ProgressEvent).where(ProgressEvent.submission_id == sub.id, ProgressEvent.event == "requeued")
            )
        )
        assert s.scalar(select(func.count()).select_from(OutboxEvent)) == 1
    assert len(_placed(sessions, sub.id)) == 2


@_sqlite_only()
def test_a_device_left_busy_is_withheld_until_clean(cluster, catalogue_dir, db_url, sessions, svc, add_submission):
    """The first 2-NPU job leaves a process on NPU 1 (the fake npu-smi says so). Ray would hand NPU 1 to the
    next task at once; the executor withholds it, so the second 2-NPU job waits in the queue, never placed,
    until a probe finds NPU 1 clean, and is then graded on its first attempt."""
    import threading

    flag = Path(cluster.tmp) / "npu-busy"
    with transaction(sessions) as s:
        first = _add(s, add_submission, svc, catalogue_dir, "ch05.svc_npu", slow_s=3)
        second = _add(s, add_submission, svc, catalogue_dir, "ch05.svc_npu")
    settings = _settings(svc, db_url, catalogue_dir, cluster, ray_device_hold_s=0.5, ray_device_probe_s=0.3)
    worker = build_worker(settings, sessions=sessions)
    thread = threading.Thread(target=worker.run, kwargs={"burst": True}, daemon=True)
    thread.start()

    def status(sub_id):
        with sessions() as s:
            return s.get(Submission, sub_id).status

    try:
        deadline = time.monotonic() + 60
        # past the start checks (the node's, then the kernel's): a flag set before them would make the
        # first job itself not start, and then NPU 1 is withheld from its retry too (CI saw exactly that)
        while "started" not in _events(sessions, first.id):
            assert time.monotonic() < deadline, "the first job never started"
            time.sleep(0.1)
        flag.write_text("1\n")  # a process the first job started outlives it on NPU 1
        while status(first.id) != "graded":
            assert time.monotonic() < deadline, "the first job was never graded"
            time.sleep(0.1)
        time.sleep(2.0)  # several probes find NPU 1 still held
        assert _placed(sessions, second.id) == [] and status(second.id) == "queued"
        flag.unlink()
        thread.join(60)
        assert not thread.is_alive()
    finally:
        worker.stop.set()
        thread.join(20)
        flag.unlink(missing_ok=True)
    with sessions() as s:
        job = s.scalar(select(Job).where(Job.submission_id == second.id))
        assert (s.get(Submission, second.id).status, job.attempts) == ("graded", 1)
    assert [p["device_ids"] for p in _placed(sessions, second.id)] == [[0, 1]]


@_sqlite_only()
def test_the_heartbeat_offers_the_clusters_devices_not_the_worker_hosts(cluster, catalogue_dir, db_url, sessions, svc):
    """The worker host has no NPU (TITANGRADE_WORKER_DEVICES is empty); its Ray cluster's largest node has 2:
    the heartbeat says 2, so intake accepts a 2-NPU exercise (it refused it before)."""
    from service.queue.models import WorkerBeat

    worker = build_worker(_settings(svc, db_url, catalogue_dir, cluster), sessions=sessions)
    try:
        assert worker.devices.count == 0
        worker._beat()
        worker._beat()  # a beat of a registered worker updates the offer too
    finally:
        worker.executor.shutdown()
    with sessions() as s:
        beat = s.get(WorkerBeat, worker.id)
        assert (beat.devices, beat.device_kind) == (2, "npu")


def test_the_heartbeat_offer_survives_a_ray_that_does_not_answer():
    """ray.nodes() failing (the GCS restarting) must not stop the heartbeat: the last offer stands."""
    from service.workers.ray_executor import RayExecutor

    class Gone:
        @staticmethod
        def nodes():
            raise ConnectionError("GCS unreachable")

    class Up:
        @staticmethod
        def nodes():
            return [{"Alive": True, "Resources": {"CPU": 8.0, "GPU": 4.0}}, {"Alive": False, "Resources": {"NPU": 8}}]

    executor = RayExecutor.__new__(RayExecutor)
    executor._offered, executor._ray = None, Gone()
    assert executor.offered_devices() is None  # nothing seen yet: the worker's own inventory
    executor._ray = Up()
    assert executor.offered_devices() == (4, "cuda")  # a dead node's NPUs are not offered
    executor._ray = Gone()
    assert executor.offered_devices() == (4, "cuda")
