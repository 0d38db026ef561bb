"""Shared by the benchmarks: a fresh database and a `titangrade serve` process on a free port (bench_service,
bench_latency, bench_intake), the order side-by-side rows run in (bench_intake, bench_job_cost,
bench_throughput), and a bare kernel's connection file and CPU (bench_call_cells, bench_kernel_fork). Not a
benchmark itself."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[2]


def ipc_connection_file(directory: Path) -> Path:
    """A kernel connection file for a bare kernel started by hand, its ipc sockets in `directory`."""
    path = directory / "kernel.json"
    path.write_text(json.dumps({
        "transport": "ipc", "ip": str(directory / "k"), "shell_port": 1, "iopub_port": 2, "stdin_port": 3,
        "control_port": 4, "hb_port": 5, "key": "bench", "signature_scheme": "hmac-sha256",
    }))  # fmt: skip
    return path


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far (/proc, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_round_order(items: list, rnd: int) -> list:
    """Side-by-side rows in round `rnd`: as given in even rounds, reversed in odd ones (A B, B A, A B, ...).
    On a shared VM whose speed drifts within minutes, the row that always ran first in a round was
    favoured (measured: 4% either way between two trees, whichever ran first), so use an even --rounds."""
    return list(items) if rnd % 2 == 0 else list(reversed(items))


class FreshDatabase:
    """A fresh SQLite file in `workdir` (pg_url None) or a fresh PostgreSQL schema, dropped by `drop()`.
    `migrate=False` leaves the schema to the `serve` under test (each checkout migrates its own)."""

    def __init__(self, *, pg_url: str | None, workdir: Path, prefix: str, migrate: bool = True) -> None:
        from sqlalchemy import create_engine, text

        from service.db import make_engine, upgrade

        self.pg_url, self.schema = pg_url, None
        if pg_url is None:
            self.kind, self.url = "sqlite", f"sqlite:///{workdir / f'{prefix}-{uuid.uuid4().hex[:6]}.db'}"
        else:
            self.kind, self.schema = "postgresql", f"tg{prefix}_{uuid.uuid4().hex[:8]}"
            with create_engine(pg_url).begin() as conn:
                conn.execute(text(f'CREATE SCHEMA "{self.schema}"'))
            self.url = f"{pg_url}?options={quote(f'-csearch_path={self.schema}')}"
        self.engine = make_engine(self.url)
        if migrate:
            upgrade(self.engine)

    def token(self, *, user: str = "bench", role: str = "instructor", course: str = "bench") -> str:
        """A bearer token (the default is staff: no submission rate limit)."""
        from service.auth.service import create_token
        from service import bootstrap
        from service.db import transaction

        with transaction(bootstrap.sessions(self.engine)) as s:
            return create_token(s, user=user, role=role, course=course)

    def drop(self) -> None:
        from sqlalchemy import create_engine, text

        self.engine.dispose()
        if self.schema and self.pg_url:
            with create_engine(self.pg_url).begin() as conn:
                conn.execute(text(f'DROP SCHEMA "{self.schema}" CASCADE'))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(
    *, args: list[str], env: dict, workdir: Path, log: Path, ready: str = "/readyz", new_session: bool = False
) -> tuple[subprocess.Popen, str]:
    """`python -m service.cli serve --port P *args` with `env`, its output in `log`; returns once `ready`
    answers 200 (or exits naming the log)."""
    import httpx

    port = free_port()
    cmd = [sys.executable, "-m", "service.cli", "serve", "--port", str(port), *args]
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        proc = subprocess.Popen(
            cmd, env=env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, start_new_session=new_session
        )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(url + ready, timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"server did not start; see {log}")
