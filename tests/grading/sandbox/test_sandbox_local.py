"""The unsafe-local sandbox's kernels talk ZMQ over ipc: no TCP port is picked by jupyter_client and bound
later by the kernel, so kernels started together cannot collide ("Address already in use" cost a job an
attempt in CI, test_faults). (The kernel's own IOPub pipe binds a random loopback port atomically.)"""
from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from sandbox_helpers import Runner

from grading.exercise import Limits
from grading.sandbox import KernelRequest
from grading.sandbox.local import UnsafeLocalSandbox

LIMITS = Limits(memory_mb=1024, max_processes=32, max_file_mb=8, scratch_mb=32, cpu_time_s=20)


def _tcp_ports(pid: int) -> set[int]:
    return {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}


@pytest.mark.slow
def test_an_unsafe_local_kernel_listens_on_no_tcp_port_and_leaves_no_socket_behind():
    session = UnsafeLocalSandbox().start(KernelRequest(limits=LIMITS))
    run = Runner(session)
    try:
        info = json.loads(Path(session.km.connection_file).read_text())
        assert info["transport"] == "ipc" and info["ip"].startswith(str(session.sockets))
        status, out = run("import os\nprint(os.getpid())")
        assert status == "ok"
        channels = {info[f"{name}_port"] for name in ("shell", "iopub", "stdin", "control", "hb")}
        assert not channels & _tcp_ports(int(out))  # no channel is a TCP port
        sockets = sorted(p.name for p in session.sockets.iterdir() if p.is_socket())
        assert {"k-1", "k-2", "k-4"} <= set(sockets), sockets  # shell, iopub, control: unix sockets here
        assert not str(session.sockets).startswith(str(session.workdir))  # not in the kernel's HOME
    finally:
        run.close()
        session.close()
    assert not session.sockets.exists() and not session.workdir.exists()


@pytest.mark.slow
def test_kernels_started_together_all_start():
    sandbox = UnsafeLocalSandbox()
    n = max(4, min(8, 2 * (os.cpu_count() or 2)))
    with ThreadPoolExecutor(n) as pool:
        sessions = list(pool.map(lambda _: sandbox.start(KernelRequest(limits=LIMITS)), range(n)))
    try:
        assert len({str(s.sockets) for s in sessions}) == n
        assert all(s.km.is_alive() for s in sessions)
    finally:
        for s in sessions:
            s.close()


def test_no_room_for_the_socket_directory_is_a_grader_fault_that_leaves_nothing(monkeypatch):
    """A full disk when the sockets' directory is made: the host's fault (retried, never the learner's zero),
    and the kernel's scratch directory made just before is removed."""
    import tempfile

    from grading.errors import GraderFault

    made, real = [], tempfile.mkdtemp

    def mkdtemp(prefix=None, **kw):
        if prefix == "tg-zmq-":
            raise OSError(28, "No space left on device")
        made.append(real(prefix=prefix, **kw))
        return made[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    with pytest.raises(GraderFault, match="No space left"):
        UnsafeLocalSandbox().start(KernelRequest(limits=LIMITS))
    assert made and not any(os.path.exists(d) for d in made)
