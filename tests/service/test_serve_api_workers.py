"""`titangrade serve --api-workers N` on PostgreSQL: N API processes in front of the one worker pool."""

from __future__ import annotations

import concurrent.futures as cf
import signal
import time
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
def test_two_api_processes_accept_and_the_pool_grades_everything(e2e, svc, tmp_path, db_url):
    sessions = e2e.sessions_for(db_url)
    token = svc.tokens(sessions)["alice"]
    port = e2e.free_port()
    url = f"http://127.0.0.1:{port}"
    server = e2e.Proc(["serve", "--port", str(port), "--workers", "2", "--api-workers", "2"],
                      e2e.service_env(db_url, svc.catalogue_dir), tmp_path / "serve.log")
    try:
        e2e.wait_for(lambda: _ok(url), 90, "the API", server)
        assert "2 API processes" in server.output()
        api_pids = [p for p in _children(server.p.pid) if _listens_on(p, port)]
        assert len(api_pids) == 2, server.output()
        nb = svc.notebook()
        with cf.ThreadPoolExecutor(4) as pool:
            ids = list(pool.map(lambda _: e2e.submit(url, token, nb), range(8)))
        assert len(set(ids)) == 8
        for sid in ids:
            assert e2e.final(url, token, sid, proc=server)["status"] == "graded"
    finally:
        server.kill(signal.SIGTERM)
    assert server.p.returncode == 0, server.output()


def _ok(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.TransportError:
        time.sleep(0.2)
        return False


def _listens_on(pid: int, port: int) -> bool:
    """Whether process `pid` holds the listening socket of `port` (the API processes share it)."""
    inodes = {
        fields[9]
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
        if (fields := line.split()) and fields[1].endswith(f":{port:04X}") and fields[3] == "0A"
    }
    try:
        links = [p.readlink().name for p in Path(f"/proc/{pid}/fd").iterdir()]
    except OSError:
        return False
    return any(link == f"socket:[{inode}]" for link in links for inode in inodes)
