"""Deadline-hour simulation (a script, not a test): FIFO against fair share (and fair share + superseding).

    .venv/bin/python tests/benchmarks/bench_fair_share.py [--learners 100] [--slots 2 8] [--seed 1] [--training-scale 1]

100 learners submit during the last hour before a deadline (arrivals grow towards it: t = 3600 * sqrt(U)).
Each learner sends 6 submissions of random light exercises and 2 of random training exercises from the real
catalogue (lanes from the manifests); 10 of them also send a burst of 8 attempts at one training exercise
within a minute. A job runs for the exercise's measured CPU run time (README table) x U(0.8, 1.2).

The queue is the real one: every claim is `service.queue.service.claim` on a migrated SQLite file, on a
simulated clock, by one worker of N slots that keeps one slot for the short lane (the service's default),
and every supersede is the intake's own code. Reported per policy and slot count: p50/p95 over learners of
each learner's mean wait, the p95 wait of the 90 non-bursting learners' training jobs, Jain's fairness
index over per-learner mean waits (1 = everyone waits the same) for the 90 learners of equal demand and
for all 100 (where fair share rightly makes the bursting learners wait for their own work), worker
utilisation (busy slot-seconds / slots x time to drain), the superseded count, when the queue drained, and
the mean claim transaction time.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

# Measured CPU run time of one solution, seconds (README exercise table, quiet 2-core machine).
RUN_S = {
    "ch05.flavor_derivation": 1.2,
    "ch05.fsdp_to_torchtitan": 1.1,
    "ch05.per_tensor_param": 10.0,
    "ch05.state_dict_names": 1.1,
    "ch06.context_parallel": 8.8,
    "ch06.mesh_shapes": 1.1,
    "ch06.npu_converter": 5.5,
    "ch06.offload_memory": 1.1,
    "ch06.varlen_metadata": 2.5,
    "ch07.agent_loop": 1.3,
    "ch07.dry_run_config": 1.4,
    "ch07.grpo_math": 1.1,
    "ch07.three_step_training": 20.0,
    "ch07.wordle_reward": 1.3,
    "ch08.lr_schedule": 1.1,
    "ch08.perf_comparison": 1.3,
    "ch08.troubleshooting": 1.1,
}
HOUR_S = 3600.0


@dataclass(order=True)
class Arrival:
    t: float
    learner: str = field(compare=False)
    exercise_id: str = field(compare=False)
    burst: bool = field(compare=False, default=False)


def workload(*, learners: int, bursters: int, seed: int, catalogue) -> list[Arrival]:
    rng = random.Random(seed)
    light = sorted(e for e in RUN_S if e in catalogue and catalogue.get(e).manifest.lane == "short")
    training = sorted(e for e in RUN_S if e in catalogue and catalogue.get(e).manifest.lane == "long")
    out = []
    for i in range(learners):
        name = f"learner{i:03d}"
        for exercise_id in [rng.choice(light) for _ in range(6)] + [rng.choice(training) for _ in range(2)]:
            out.append(Arrival(HOUR_S * math.sqrt(rng.random()), name, exercise_id))
        if i < bursters:
            start, exercise_id = HOUR_S * math.sqrt(rng.random()) - 60, rng.choice(training)
            out += [Arrival(max(0.0, start + 7.5 * k), name, exercise_id, burst=True) for k in range(8)]
    return sorted(out)


def simulate(
    arrivals: list[Arrival], *, slots: int, policy: str, supersede: bool, url: str, catalogue, seed: int
) -> dict:
    from service.courses.service import supersede_policy
    from service import bootstrap
    from service.db import make_engine, transaction, upgrade
    from service.queue import service as queue
    from service.submissions.supersede import supersede_queued, supersedes
    from service.submissions.models import Submission

    engine = make_engine(url)
    upgrade(engine)
    sessions = bootstrap.sessions(engine)
    rng = random.Random(seed + 1)
    long_cap = slots - 1 if slots > 1 else 1
    submitted, started, ended, lane_of, learner_of, exercise_of = {}, {}, {}, {}, {}, {}
    running: list[tuple[float, object]] = []
    pending = list(arrivals)
    attempts: dict[tuple[str, str], int] = {}
    t, busy_s, claim_s, claims = 0.0, 0.0, 0.0, 0
    while pending or running:
        t = max(t, min(([pending[0].t] if pending else []) + [r[0] for r in running]))
        for done in [r for r in running if r[0] <= t]:
            running.remove(done)
            with transaction(sessions) as s:
                queue.complete(s, job=done[1])
        while pending and pending[0].t <= t:
            a = pending.pop(0)
            exercise = catalogue.get(a.exercise_id)
            key = (a.learner, a.exercise_id)
            attempts[key] = attempts.get(key, 0) + 1
            with transaction(sessions) as s:
                sub = Submission(
                    id=uuid.uuid4().hex,
                    user=a.learner,
                    course="bench",
                    exercise_id=a.exercise_id,
                    lang="en",
                    attempt=attempts[key],
                    notebook=b"{}",
                    status="queued",
                    max_score=10.0,
                    message="",
                )
                s.add(sub)
                s.flush()
                queue.enqueue(
                    s,
                    submission_id=sub.id,
                    lane=exercise.manifest.lane,
                    priority=0,
                    devices=0,
                    world_size=1,
                    max_attempts=3,
                    learner=a.learner,
                )
                if supersede and supersedes(supersede_policy(s, course=sub.course, default="training"), exercise):
                    supersede_queued(s, by_id=sub.id, attempt=sub.attempt, identity_id=sub.identity_id,
                                     course=sub.course, exercise_id=sub.exercise_id)
            submitted[sub.id], lane_of[sub.id], learner_of[sub.id] = a.t, exercise.manifest.lane, a.learner
            exercise_of[sub.id] = a.exercise_id
        while len(running) < slots:
            long_busy = sum(1 for r in running if lane_of[r[1].submission_id] == "long")
            lanes = ("short", "long") if long_busy < long_cap else ("short",)
            tick = time.perf_counter()
            with transaction(sessions) as s:
                job = queue.claim(
                    s, worker_id="sim", lanes=lanes, free_devices=0, max_world_size=8, lease_s=10**6, policy=policy
                )
            claim_s, claims = claim_s + time.perf_counter() - tick, claims + 1
            if job is None:
                break
            took = RUN_S[exercise_of[job.submission_id]] * rng.uniform(0.8, 1.2)
            started[job.submission_id], ended[job.submission_id] = t, t + took
            busy_s += took
            running.append((t + took, job))
    engine.dispose()
    waits_by_learner: dict[str, list[float]] = {}
    victims = []
    bursters = {a.learner for a in arrivals if a.burst}
    for sid, start in started.items():
        wait = start - submitted[sid]
        waits_by_learner.setdefault(learner_of[sid], []).append(wait)
        if lane_of[sid] == "long" and learner_of[sid] not in bursters:
            victims.append(wait)
    means = sorted(statistics.fmean(w) for w in waits_by_learner.values())
    steady = [statistics.fmean(w) for who, w in waits_by_learner.items() if who not in bursters]
    span = max(ended.values()) - min(submitted.values())
    return {
        "p50": pct(means, 0.5),
        "p95": pct(means, 0.95),
        "victim_p95": pct(sorted(victims), 0.95),
        "jain": jain_index(steady),
        "jain_all": jain_index(means),
        "util": busy_s / (slots * span),
        "superseded": len(submitted) - len(started),
        "jobs": len(submitted),
        "drain_s": max(ended.values()),
        "claim_ms": 1000 * claim_s / max(claims, 1),
    }


def jain_index(values: list[float]) -> float:
    """(sum x)^2 / (n sum x^2): 1 when every learner waits the same, 1/n when one learner does all the waiting."""
    return sum(values) ** 2 / (len(values) * sum(x * x for x in values)) if any(values) else 1.0


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def main() -> None:
    from grading.exercise import Catalogue

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=100)
    parser.add_argument("--bursters", type=int, default=10)
    parser.add_argument("--slots", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--training-scale",
        type=float,
        default=1.0,
        help="multiply training run times (e.g. 3 for longer accelerator runs)",
    )
    args = parser.parse_args()
    catalogue = Catalogue()
    for exercise_id in RUN_S:
        if exercise_id in catalogue and catalogue.get(exercise_id).manifest.lane == "long":
            RUN_S[exercise_id] *= args.training_scale
    arrivals = workload(learners=args.learners, bursters=args.bursters, seed=args.seed, catalogue=catalogue)
    workdir = Path(tempfile.mkdtemp(prefix="tg-fair-"))
    print(
        f"{len(arrivals)} submissions from {args.learners} learners ({args.bursters} bursting) in the last hour; "
        f"training run times x{args.training_scale}"
    )
    print(
        "| slots | policy | learner mean wait p50 | p95 | p95 training wait, non-bursting learners | "
        "Jain, equal-demand learners | Jain, all | utilisation | superseded | drained at | claim |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for slots in args.slots:
        for policy, supersede in (("fifo", False), ("fair", False), ("fair", True)):
            url = f"sqlite:///{workdir / f'sim-{uuid.uuid4().hex[:6]}.db'}"
            r = simulate(
                arrivals, slots=slots, policy=policy, supersede=supersede, url=url, catalogue=catalogue, seed=args.seed
            )
            name = policy + (" + supersede" if supersede else "")
            print(
                f"| {slots} | {name} | {r['p50']:.0f} s | {r['p95']:.0f} s | {r['victim_p95']:.0f} s | "
                f"{r['jain']:.2f} | {r['jain_all']:.2f} | {r['util']:.0%} | {r['superseded']} | "
                f"{r['drain_s'] / 60:.0f} min | "
                f"{r['claim_ms']:.1f} ms |",
                flush=True,
            )


if __name__ == "__main__":
    main()
