"""bench_cluster_deadline.py's machinery at toy scale, so the benchmark cannot rot unnoticed: a Ray cluster of
2 simulated nodes (4 CPUs, 4 fake NPUs each), 20 uploads through `titangrade serve`'s HTTP intake, one
`titangrade worker --executor ray` with the stand-in engine. Every job must reach done through the real
queue in one attempt, and the stand-in must have held what the executor reserved for it (the NPUs for a
training job, never more NPUs on a node at once than it has) for at least its declared time."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import clusterkit as kit
from benchkit import FreshDatabase

pytestmark = pytest.mark.slow  # a Ray cluster, an API and a worker process start: about a minute on 2 cores

TRAINING_NPUS = 2
HOLD_S = {"ch07.three_step_training": 1.0, "ch05.per_tensor_param": 0.8, "*": 0.2}


def test_deadline_machinery_at_toy_scale(tmp_path):
    exercises = kit.scenario_catalogue(tmp_path, training_npus=TRAINING_NPUS)
    picked = ["ch07.three_step_training", "ch05.per_tensor_param", "ch07.wordle_reward", "ch06.mesh_shapes"]
    plan = [(0.05 * k, k % 5, picked[k % len(picked)]) for k in range(20)]  # 5 learners, 20 uploads
    cluster = kit.start_cluster(nodes=2, cpus=4, npus=4, memory_gb=64)
    db = FreshDatabase(pg_url=None, workdir=tmp_path, prefix="toy")
    api = worker = None
    try:
        env = kit.service_env(db_url=db.url, exercises=exercises)
        api, url = kit.start_api(env, tmp_path)
        tokens = kit.learner_tokens(db.engine, 5)
        wenv = kit.worker_env(env, holds=HOLD_S, slots=8, reserved=1, npus=4)
        worker = kit.start_worker(wenv, tmp_path, address=cluster.address, slots=8)
        kit.wait_registered(db.engine, timeout_s=240, alive=lambda: worker.proc.poll() is None)
        posted = kit.post_arrivals(url, plan, tokens, kit.bodies(exercises), threads=2)
        assert len(posted["accepted"]) == 20, posted["refused"]
        done = kit.wait_done(db.engine, posted["accepted"], timeout_s=400, alive=lambda: worker.proc.poll() is None)
        stats = worker.read()
    finally:
        if worker is not None:
            worker.stop()
        if api is not None:
            api.terminate()
            api.wait(30)
        nodes = {n.node_id for n in cluster.list_all_nodes() if n is not cluster.head_node}
        kit.stop_cluster(cluster)
    rows = kit.rows(db.engine)
    db.drop()
    assert done == 20 and len(rows) == 20, (tmp_path / "w.log").read_text()[-3000:]
    for r in rows:
        assert (r.status, r.job_status, r.attempts) == ("graded", "done", 1)
        assert r.engine == "standin-hold", "a real engine graded: the nodes imported another tree"
        want = HOLD_S.get(r.exercise_id, HOLD_S["*"])
        assert r.trace["held_s"] >= want and r.graded - r.started >= want
        assert r.trace["node"] in nodes
        training = r.exercise_id in ("ch07.three_step_training", "ch05.per_tensor_param")
        assert r.lane == ("long" if training else "short")
        assert r.trace["assigned"].get("NPU", 0) == (TRAINING_NPUS if training else 0)
        assert r.trace["assigned"].get("CPU", 0) == (2 if training else 1)
    use, _ = kit.node_use(rows, cpus=4, npus=4)
    assert all(n["peak_npus"] <= 4 for n in use.values())
    assert sum(n["jobs"] for n in use.values()) == 20
    assert stats["statements"] > 0 and stats["cpu_s"] > 0  # the counting wrapper saw the worker's work
