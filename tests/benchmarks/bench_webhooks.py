"""Webhook delivery benchmark (a script, not a test): events per second from the outbox to a local receiver.

    .venv/bin/python tests/benchmarks/bench_webhooks.py [--events 1000] [--concurrency 1,8]

For SQLite and PostgreSQL: N grades are stored through the queue's claim/complete and record_grade (the rows real
grading writes), then one in-process delivery loop (service.outbox.delivery.Deliverer) fans them out,
signs and POSTs each to tests/service/webhooks/receiver.py (its own process; it verifies every signature
with the standardwebhooks library) until all are delivered. The figure is events/s over that drain, at
each concurrency (deliveries in flight), and the ratio of the highest to concurrency 1.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
RECEIVER = REPO / "tests" / "service" / "webhooks" / "receiver.py"


def store_grades(sessions, n: int) -> None:
    from service.auth.service import get_or_create_identity, set_membership
    from service.db import transaction
    from grading.result import GradeResult, Status
    from service.grades.service import record_grade
    from service.queue import service as queue
    from service.submissions.models import Submission

    with transaction(sessions) as s:
        who = get_or_create_identity(s, issuer="titangrade", subject="bench")
        set_membership(s, identity=who, course="bench", role="learner")
        for _ in range(n):
            sub = Submission(id=uuid.uuid4().hex, identity_id=who.id, user="bench", course="bench",
                             exercise_id="ch05.svc_sum", lang="en", attempt=1, notebook=b"{}", status="queued",
                             max_score=3.0, message="")
            s.add(sub)
            s.flush()
            queue.enqueue(s, submission_id=sub.id, lane="short", priority=0, devices=0, world_size=1, max_attempts=1)
    for _ in range(n):
        with transaction(sessions) as s:
            job = queue.claim(s, worker_id="bench", lanes=("short",), free_devices=0, max_world_size=1, lease_s=600)
            assert queue.complete(s, job=job)
            record_grade(s, submission_id=job.submission_id,
                         result=GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0))


def run(kind: str, n: int, concurrency: int, workdir: Path) -> float:
    from bench_service import Database

    from service.config import Settings
    from service import bootstrap
    from service.db import make_engine, transaction
    from service.webhooks import service
    from service.wiring import build_deliverer
    from service.outbox.models import OutboxDelivery
    from service.outbox.ssrf import AddressPolicy

    db = Database(kind, workdir)
    engine = make_engine(db.url)
    sessions = bootstrap.sessions(engine)
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = workdir / f"recv-{kind}-{concurrency}.jsonl"
    with transaction(sessions) as s:
        secret = service.create(s, course="bench", url=f"http://127.0.0.1:{port}/hook", event_types=["grade.stored"],
                                policy=AddressPolicy(enforce=False)).secret
    recv = subprocess.Popen([sys.executable, str(RECEIVER), str(port), str(log), secret], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert recv.stdout.readline().strip() == "ready"
        store_grades(sessions, n)
        settings = Settings(database_url=db.url, secret_key="b" * 40, webhook_concurrency=concurrency,
                            webhook_batch=max(64, 4 * concurrency))
        deliverer = build_deliverer(settings, sessions=sessions)
        start = time.perf_counter()
        while deliverer.run_once():
            pass
        elapsed = time.perf_counter() - start
        with sessions() as s:
            delivered = s.query(OutboxDelivery).filter(OutboxDelivery.status == "delivered").count()
            s.commit()
        lines = [json.loads(x) for x in log.read_text().splitlines()]
        assert delivered == n and len(lines) == n and all(x["valid"] for x in lines), (delivered, len(lines))
        return n / elapsed
    finally:
        recv.kill()
        engine.dispose()
        db.drop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--concurrency", default="1,8")
    parser.add_argument("--db", default="sqlite,postgres")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory(prefix="tg-bench-wh-") as tmp:
        for kind in args.db.split(","):
            rates = {c: run(kind, args.events, c, Path(tmp)) for c in levels}
            parts = ", ".join(f"concurrency {c}: {r:.0f} events/s" for c, r in rates.items())
            ratio = rates[max(levels)] / rates[min(levels)]
            print(f"{kind}: {args.events} events, {parts} ({ratio:.1f}x)", flush=True)


if __name__ == "__main__":
    main()
