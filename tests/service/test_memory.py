"""service/memory.py: few malloc arenas, and freed memory handed back, measured in fresh processes (glibc only).
The soak figures behind it are a benchmark: tests/benchmarks/bench_soak.py."""
from __future__ import annotations

import platform
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc arenas and malloc_trim are glibc's")


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_trim_hands_back_memory_that_fragmentation_keeps():
    out = _run("""
        from pathlib import Path
        from service import memory

        def rss_mib():
            line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS"))
            return int(line.split()[1]) / 1024

        blocks = [bytes(2000) for _ in range(60_000)]  # ~120 MiB in malloc'd blocks (> pymalloc's 512 B)
        kept = blocks[::50]  # one block in 50 stays: the heap cannot shrink from its top
        del blocks
        before = rss_mib()
        trimmed = memory.trim()
        print(f"{before:.1f} {rss_mib():.1f} {trimmed} {len(kept)}")
    """)
    before, after, trimmed, _ = out.split()
    assert trimmed == "True" and float(before) - float(after) > 60, out


def test_the_arena_limit_holds_for_threads_that_contend():
    out = _run("""
        import ctypes, threading, time
        from service import memory

        assert memory.limit_arenas(1)
        stop = time.monotonic() + 1.0

        def churn():
            while time.monotonic() < stop:
                junk = [bytes(3000) for _ in range(200)]
                del junk

        threads = [threading.Thread(target=churn) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ctypes.CDLL("libc.so.6").malloc_stats()  # one "Arena N:" section per arena, on stderr
    """)
    assert out.count("Arena ") == 1, out


def test_the_api_trims_while_it_runs_and_stops_trimming_at_shutdown(db_url, svc, test_catalogue):
    from fastapi.testclient import TestClient

    from service.app import create_app

    app = create_app(svc.settings(db_url, malloc_trim_s=0.05), catalogue=test_catalogue)

    def trimmers():
        return [t for t in threading.enumerate() if t.name == "tg-malloc-trim"]

    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
        assert len(trimmers()) == 1
    assert trimmers() == []
    app.state.engine.dispose()
    off = create_app(svc.settings(db_url, malloc_trim_s=0), catalogue=test_catalogue)
    with TestClient(off):
        assert trimmers() == []
    off.state.engine.dispose()
