"""A sandboxed kernel's start and teardown: the start-up handshake, the kernel's lighter boot, the reap."""
from __future__ import annotations

import os
import threading

import pytest
import zmq
from jupyter_client.session import Session
from sandbox_helpers import Runner, needs_bwrap, uid_is_clean

from grading.exercise import Limits
from grading.sandbox import KernelRequest
from grading.sandbox.bwrap import _SandboxKernelManager, await_kernel_info
from grading.sandbox.watch import LimitWatcher

SMALL = Limits(memory_mb=1024, max_processes=32, max_file_mb=8, scratch_mb=32, cpu_time_s=20)


@needs_bwrap
@pytest.mark.slow
def test_kernel_boots_without_jupyter_client_managers_and_learners_still_get_them(bwrap_sandbox):
    s = bwrap_sandbox.start(KernelRequest(limits=SMALL))
    run = Runner(s)
    try:
        status, out = run("import sys\nprint(sorted(m for m in ('jupyter_client.manager', "
                          "'jupyter_client.asynchronous', 'jupyter_client.provisioning') if m in sys.modules))")
        assert (status, out.strip()) == ("ok", "[]")  # ipykernel never needed them (_kernel_boot.py)
        status, out = run("import jupyter_client\nprint(jupyter_client.KernelManager.__name__, "
                          "jupyter_client.AsyncKernelClient.__name__, jupyter_client.__version__ > '')")
        assert (status, out.strip()) == ("ok", "KernelManager AsyncKernelClient True")
        status, out = run("import jupyter_client\njupyter_client.no_such_name")
        assert status == "error" and "AttributeError" in out
    finally:
        run.close()
        s.close()


@needs_bwrap
@pytest.mark.slow
def test_kernel_skips_empty_flushes_and_loses_no_output(bwrap_sandbox):
    """_kernel_boot.py's flush returns at once with nothing buffered; whatever was written still arrives,
    in order, before the cell's reply is handled: prints, explicit flushes, both streams, a subprocess."""
    s = bwrap_sandbox.start(KernelRequest(limits=SMALL))
    run = Runner(s)
    try:
        status, out = run("import sys\nprint(type(sys.stdout).flush.__name__)")
        assert (status, out.strip()) == ("ok", "flush_if_buffered")
        status, out = run("import sys\nfor i in range(300):\n    print(i, end=' ')\n    if i % 7 == 0:\n"
                          "        sys.stdout.flush()\nsys.stdout.flush()\nsys.stdout.flush()")
        assert status == "ok" and out.split() == [str(i) for i in range(300)]
        status, out = run("import os, sys\nprint('a')\nsys.stdout.flush()\nos.system('echo b')\n"
                          "print('c', file=sys.stderr)")
        assert status == "ok" and sorted(out.split()) == ["a", "b", "c"]  # two streams: no order between them
    finally:
        run.close()
        s.close()


@needs_bwrap
@pytest.mark.slow
def test_kernel_names_cells_with_crc32_and_tracebacks_still_show_their_source(bwrap_sandbox):
    """_kernel_boot.py replaces ipykernel's pure-Python murmur2 cell-name hash with zlib's crc32: distinct
    cells keep distinct files, and a traceback still quotes the line of the cell that raised."""
    s = bwrap_sandbox.start(KernelRequest(limits=SMALL))
    run = Runner(s)
    try:
        status, out = run("from ipykernel import compiler\nprint(compiler.murmur2_x86.__name__, "
                          "compiler.get_file_name('a = 1') != compiler.get_file_name('a = 2'))")
        assert (status, out.strip()) == ("ok", "crc32_x86 True")
        status, out = run("def f():\n    raise ValueError('boom ' + 'here')\n")
        assert status == "ok"
        status, out = run("import traceback\ntry:\n    f()\nexcept ValueError:\n    traceback.print_exc()")
        assert status == "ok" and "raise ValueError('boom ' + 'here')" in out and "f()" in out
    finally:
        run.close()
        s.close()


@needs_bwrap
@pytest.mark.slow
def test_close_reaps_the_killed_kernel_itself(bwrap_sandbox, monkeypatch):
    """Not jupyter_client's shutdown_kernel, which interrupts the dead kernel and polls for its exit."""
    calls = []
    monkeypatch.setattr(_SandboxKernelManager, "shutdown_kernel", lambda self, **kw: calls.append(kw))
    s = bwrap_sandbox.start(KernelRequest(limits=SMALL))
    proc = s.km.provisioner.process
    assert s.close() == []
    assert calls == []
    assert proc.returncode is not None  # bwrap reaped, not left a zombie
    assert uid_is_clean(bwrap_sandbox, s.user)
    assert not s.runtime.exists()


def test_kernel_info_handshake_reports_a_dead_kernel(tmp_path):
    with pytest.raises(RuntimeError, match="died"):
        await_kernel_info(f"ipc://{tmp_path}/shell", Session(key=b"k"), timeout_s=30, is_alive=lambda: False)


def test_kernel_info_handshake_times_out_without_a_kernel(tmp_path):
    with pytest.raises(TimeoutError):
        await_kernel_info(f"ipc://{tmp_path}/shell", Session(key=b"k"), timeout_s=0.3, is_alive=lambda: True)


def test_kernel_info_handshake_waits_for_a_kernel_that_binds_late(tmp_path):
    """The handshake may connect before the kernel binds its socket: it retries the connect."""
    url, session = f"ipc://{tmp_path}/shell", Session(key=b"k")
    ctx = zmq.Context()
    bound = threading.Event()

    def kernel() -> None:
        sock = ctx.socket(zmq.ROUTER)
        sock.bind(url)
        bound.set()
        idents, msg = session.recv(sock, mode=0)
        assert msg["msg_type"] == "kernel_info_request"
        session.send(sock, "kernel_info_reply", {"status": "ok"}, parent=msg, ident=idents)
        sock.close(linger=1000)

    thread = threading.Timer(0.3, kernel)
    thread.start()
    try:
        await_kernel_info(url, session, timeout_s=30, is_alive=lambda: True)
        assert bound.is_set()
    finally:
        thread.join()
        ctx.term()


def test_stopped_watchers_leave_no_descriptors_behind(tmp_path):
    urls = {"iopub": f"ipc://{tmp_path}/iopub", "control": f"ipc://{tmp_path}/control"}
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(10):
        watcher = LimitWatcher(urls, Session(key=b"k"), output_cap_bytes=1 << 20, deadline=None, kill=lambda: None)
        watcher.start()
        assert watcher.wait_subscribed()
        watcher.stop()
        assert not watcher.is_alive()
    assert len(os.listdir("/proc/self/fd")) <= before + 2  # a pytest log file may open meanwhile
