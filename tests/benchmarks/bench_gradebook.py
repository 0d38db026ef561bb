"""Gradebook benchmark (a script, not a test): the staff page's first byte, the CSV and the JSON at 300
learners x every exercise of the catalogue, on SQLite and PostgreSQL.

    PYTHONPATH=$PWD .venv/bin/python tests/benchmarks/bench_gradebook.py [--learners 300] [--attempts 1]
        [--n 10] [--dbs sqlite postgres] [--repo TREE] [--pg URL]

A fresh database is seeded by direct inserts (this tree's models): `--learners` learner members of course
`bench`, each with `--attempts` graded attempts at every exercise of the real catalogue, a real
notebook in every row, except every fifth learner, who submitted 4 exercises only (missing work). Then an
API-only `titangrade serve` from `--repo` (default: this tree; give another checkout to compare) answers,
after one warm-up each, `--n` rounds of: the page `/teach/courses/bench/gradebook` (time to the response
headers = first byte, and to the last byte), the page's CSV and `GET /api/v1/courses/bench/gradebook` as
JSON. Printed: median and max per request, and the sizes. The goals (page first byte 300 ms, CSV 1 s)
are reported, not asserted.

`--seed api` makes the same course through the HTTP API of the `serve` under test instead (issue 27
section 7): an admin token (the one direct insert) creates each learner's token (POST /api/v1/tokens, which
enrols them), every learner uploads the exercise's own template notebook (POST /api/v1/submissions), and
the instructor sets each score with POST /api/v1/submissions/{id}/override. No worker grades them (grading
5,100 notebooks would take the hour), so the cells show the overridden score with the status "queued";
the page renders the same cells either way. `--seed both` runs the two side by side.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from benchkit import FreshDatabase, start_serve  # noqa: E402

PG_URL = os.environ.get("TITANGRADE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
COURSE = "bench"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def seed(db: FreshDatabase, *, learners: int, attempts: int) -> int:
    """Members, their submissions (a real notebook each) and an instructor; returns the submissions made."""
    from sqlalchemy import insert

    from grading.exercise import Catalogue
    from service import bootstrap
    from service.auth.models import Identity, Membership
    from service.db import transaction
    from service.submissions.models import Submission

    catalogue = list(Catalogue())
    notebook = (REPO / "reference" / "ch07.wordle_reward" / "solution.ipynb").read_bytes()
    t0 = dt.datetime(2026, 11, 1)
    with transaction(bootstrap.sessions(db.engine)) as s:
        ids = [
            s.execute(
                insert(Identity)
                .values(issuer="titangrade", subject=f"learner{n:03d}", name=f"Learner {n:03d}", created_at=t0)
                .returning(Identity.id)
            ).scalar_one()
            for n in range(learners)
        ]
        s.execute(insert(Membership), [{"identity_id": i, "course": COURSE, "role": "learner"} for i in ids])
        rows = []
        for n, ident in enumerate(ids):
            for ex in catalogue[:4] if n % 5 == 0 else catalogue:
                top = float(ex.manifest.max_score)
                for a in range(attempts):
                    at = t0 + dt.timedelta(minutes=len(rows))
                    rows.append({
                        "id": uuid.uuid4().hex, "identity_id": ident, "user": f"Learner {n:03d}", "course": COURSE,
                        "exercise_id": ex.id, "lang": "en", "attempt": a + 1, "notebook": notebook,
                        "status": "graded", "score": round(top * ((n + a) % 7) / 6, 2), "max_score": top,
                        "result": {"checks": [{"name": "c", "passed": True, "points": 1.0}]}, "message": "",
                        "created_at": at, "graded_at": at + dt.timedelta(seconds=5), "run": 1,
                    })  # fmt: skip
        for start in range(0, len(rows), 1000):
            s.execute(insert(Submission), rows[start : start + 1000])
    return len(rows)


def seed_api(url: str, *, admin: str, instructor: str, learners: int, threads: int = 8) -> int:
    """The course through the API alone (see the module docstring); returns the submissions made."""
    from concurrent.futures import ThreadPoolExecutor

    from grading.exercise import Catalogue

    catalogue = list(Catalogue())
    templates = {ex.id: ex.notebook_path.read_bytes() for ex in catalogue}
    tops = {ex.id: float(ex.manifest.max_score) for ex in catalogue}
    local = threading.local()

    def client(token: str) -> httpx.Client:
        if not hasattr(local, "c"):
            local.c = httpx.Client(base_url=url, timeout=120)
        local.c.headers["Authorization"] = f"Bearer {token}"
        return local.c

    def learner(n: int) -> list[tuple[str, float]]:
        body = {"subject": f"learner{n:03d}", "name": f"Learner {n:03d}", "role": "learner", "course": COURSE}
        made = client(admin).post("/api/v1/tokens", json=body)
        made.raise_for_status()
        token, out = made.json()["token"], []
        for ex in catalogue[:4] if n % 5 == 0 else catalogue:
            files = {"notebook": (f"{ex.id}.ipynb", templates[ex.id], "application/x-ipynb+json")}
            up = client(token).post("/api/v1/submissions", files=files, data={"exercise_id": ex.id})
            if up.status_code != 202:
                raise SystemExit(f"the API refused {ex.id} for learner {n}: {up.status_code} {up.text[:300]}")
            out.append((up.json()["id"], round(tops[ex.id] * (n % 7) / 6, 2)))
        return out

    def score(item: tuple[str, float]) -> None:
        sid, points = item
        client(instructor).post(f"/api/v1/submissions/{sid}/override",
                                json={"score": points, "reason": "bench seed"}).raise_for_status()  # fmt: skip

    with ThreadPoolExecutor(threads) as pool:
        made = [item for items in pool.map(learner, range(learners)) for item in items]
        list(pool.map(score, made))
    return len(made)


def signed_in(url: str, token: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=120)
    page = client.get("/login")
    client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1)})
    return client


def timed(client: httpx.Client, path: str, **kw) -> tuple[float, float, int, int]:
    """(first byte s, last byte s, bytes, status): the headers' arrival stands for the first byte."""
    start = time.perf_counter()
    with client.stream("GET", path, **kw) as resp:
        first = time.perf_counter() - start
        size = sum(len(chunk) for chunk in resp.iter_raw())
        return first, time.perf_counter() - start, size, resp.status_code


def run(kind: str, args, workdir: Path, how: str = "db") -> None:
    db = FreshDatabase(pg_url=None if kind == "sqlite" else args.pg, workdir=workdir, prefix="gbook")
    proc = None
    try:
        made = seed(db, learners=args.learners, attempts=args.attempts) if how == "db" else 0
        token = db.token(user="bench_teacher", role="instructor", course=COURSE)
        env = dict(os.environ, PYTHONPATH=str(args.repo), TITANGRADE_DATABASE_URL=db.url,
                   TITANGRADE_SECRET_KEY="b" * 40, TITANGRADE_SANDBOX="unsafe-local",
                   TITANGRADE_SUBMISSIONS_PER_MINUTE="1000000")  # fmt: skip
        proc, url = start_serve(args=["--workers", "0", "--no-deliver"], env=env, workdir=Path(args.repo),
                                log=workdir / f"serve-{kind}-{how}.log", ready="/healthz")  # fmt: skip
        if how == "api":
            started = time.perf_counter()
            admin = db.token(user="bench_admin", role="admin", course=None)
            made = seed_api(url, admin=admin, instructor=token, learners=args.learners)
            print(f"{kind}: seeded {made} submissions through the API in {time.perf_counter() - started:.1f} s")
        page, bearer = signed_in(url, token), {"Authorization": f"Bearer {token}"}
        api = httpx.Client(base_url=url, timeout=120, headers=bearer)
        probes = {
            "page": (page, f"/teach/courses/{COURSE}/gradebook", {}),
            "page sorted by total, desc, page 3": (
                page,
                f"/teach/courses/{COURSE}/gradebook",
                {"params": {"sort": "total", "dir": "desc", "page": "3"}},
            ),
            "page CSV": (page, f"/teach/courses/{COURSE}/gradebook.csv", {}),
            "API JSON": (api, f"/api/v1/courses/{COURSE}/gradebook", {}),
            "API CSV": (api, f"/api/v1/courses/{COURSE}/gradebook", {"params": {"format": "csv"}}),
        }
        times: dict[str, list[tuple[float, float, int, int]]] = {name: [] for name in probes}
        for client, path, kw in probes.values():
            timed(client, path, **kw)  # warm-up: imports, template compile, caches
        for _ in range(args.n):
            for name, (client, path, kw) in probes.items():
                times[name].append(timed(client, path, **kw))
        from grading.exercise import Catalogue

        print(
            f"\n{kind}, seeded through the {how}: {args.learners} learners x {len(Catalogue())} exercises, {made} "
            f"submissions, "
            f"tree {args.repo}"
        )
        for name, got in times.items():
            firsts, lasts = [g[0] for g in got], [g[1] for g in got]
            print(f"  {name:38s} first byte median {statistics.median(firsts) * 1000:7.1f} ms "
                  f"(max {max(firsts) * 1000:7.1f}), last byte median {statistics.median(lasts) * 1000:7.1f} ms "
                  f"(max {max(lasts) * 1000:7.1f}), {got[-1][2] / 1000:.0f} kB, HTTP {got[-1][3]}")  # fmt: skip
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        db.drop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--learners", type=int, default=300)
    ap.add_argument("--attempts", type=int, default=1, help="graded attempts per learner and exercise")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--dbs", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"])
    ap.add_argument("--repo", default=str(REPO), help="the checkout whose `serve` answers (compare trees)")
    ap.add_argument("--pg", default=PG_URL)
    ap.add_argument("--seed", default="db", choices=["db", "api", "both"], help="how the course is made")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.dbs:
            for how in ("db", "api") if args.seed == "both" else (args.seed,):
                run(kind, args, Path(tmp), how)


if __name__ == "__main__":
    main()
