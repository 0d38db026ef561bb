"""Faults for the fault suite: a private PostgreSQL the test may kill, and a small filesystem it may fill.

Both are real: `PrivatePostgres` runs initdb and pg_ctl on a free port under a temporary directory (as the
`postgres` user when run as root, since initdb refuses root), `SmallDisk` mounts a tmpfs of a few MiB.
"""
from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_bindir() -> Path | None:
    """The newest installed PostgreSQL's bin directory (Debian layout, else PATH), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb and shutil.which("pg_ctl") else None


class PrivatePostgres:
    """A PostgreSQL server of the test's own: `kill()` stops it at once (as a crash would), `start()` brings
    it back on the same port and data directory."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="tg-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        self._as = []
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            shutil.chown(self.root, "postgres", "postgres")
            self._as = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.running = False
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run([*self._as, str(self.bindir / tool), *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed: {done.stdout}{done.stderr}{self.log_text()}")

    def log_text(self) -> str:
        log = self.root / "server.log"
        return log.read_text(errors="replace")[-4000:] if log.exists() else ""

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "120",
                  "-o", options, "start")
        self.running = True

    def kill(self) -> None:
        """Stop without a clean shutdown: every connection is cut, as when the server crashes."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        self.running = False

    def close(self) -> None:
        if self.running:
            with contextlib.suppress(Exception):
                self.kill()
        shutil.rmtree(self.root, ignore_errors=True)


class SmallDisk:
    """A tmpfs of `size_mb` MiB mounted on a fresh directory; `fill()` takes every free byte, `free()` gives
    them back. Root only (mount)."""

    def __init__(self, size_mb: int = 16) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="tg-disk-"))
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(self.path)],
                       check=True, capture_output=True, timeout=30)
        self.filler = self.path / "filler"

    def fill(self) -> int:
        """Write until the filesystem refuses (ENOSPC); returns the bytes taken."""
        taken = 0
        with self.filler.open("wb", buffering=0) as fh:
            for chunk in (1 << 20, 1 << 14, 1 << 10, 1 << 6, 1):
                block = b"\0" * chunk
                while True:
                    try:
                        taken += fh.write(block)
                    except OSError:
                        break
        return taken

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def close(self) -> None:
        self.free()
        subprocess.run(["umount", "-l", str(self.path)], capture_output=True, timeout=30)
        with contextlib.suppress(OSError):
            self.path.rmdir()
