"""The bwrap sandbox at kernel level: identity, filesystem view, network, environment, limits, teardown."""
from __future__ import annotations

import os
import socket
import threading

import pytest

from grading.exercise import REPO_ROOT, Limits
from grading.sandbox import KernelRequest, make_sandbox
from grading.sandbox.users import UidPool

from sandbox_helpers import Runner, needs_bwrap, procs_with, uid_is_clean, wait_gone

pytestmark = [needs_bwrap, pytest.mark.slow]
SMALL = Limits(memory_mb=1024, max_processes=32, max_file_mb=8, scratch_mb=32, cpu_time_s=20)


@pytest.fixture
def session(bwrap_sandbox):
    s = bwrap_sandbox.start(KernelRequest(limits=SMALL, env={"TG_EXTRA": "from-request"}))
    run = Runner(s)
    yield s, run
    run.close()
    s.close()


def test_kernel_runs_as_sandbox_user_without_capabilities(session):
    s, run = session
    status, out = run("import os\nprint(os.getuid(), os.geteuid(), os.getgroups())\n"
                      "print([l for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm', 'NoNewPrivs'))])")
    assert status == "ok"
    uid = s.user.pw_uid
    assert out.startswith(f"{uid} {uid} []") and uid != 0
    assert "CapEff:\\t0000000000000000" in out and "CapPrm:\\t0000000000000000" in out and "NoNewPrivs:\\t1" in out


def test_only_runtime_is_visible_and_readonly(session):
    _, run = session
    status, out = run(f"import os\nprint(sorted(os.listdir({str(REPO_ROOT)!r})))\n"
                      "import exercises.lab, exercises\nprint(exercises.__file__)")
    assert status == "ok", out
    listing = eval(out.splitlines()[0])  # the repo root as the kernel sees it: the runtime (and a venv inside)
    assert "exercises" in listing and set(listing) <= {".venv", "exercises"}
    for path in (REPO_ROOT / "reference", REPO_ROOT / "grading", REPO_ROOT / "service", "/root/.ssh", "/etc/shadow"):
        status, out = run(f"open({str(path)!r}).read()")
        assert status == "error" and ("FileNotFoundError" in out or "IsADirectoryError" in out), (path, out)
    status, out = run(f"open({str(REPO_ROOT / 'exercises' / '__init__.py')!r}, 'a').write('x')")
    assert status == "error" and ("Read-only file system" in out or "Permission denied" in out)
    status, out = run("import grading")
    assert status == "error" and "ModuleNotFoundError" in out


def test_environment_is_allow_listed(session, monkeypatch):
    _, run = session
    status, out = run("import os\nprint(sorted(os.environ))\nprint(os.environ['TG_EXTRA'], os.environ['HOME'])")
    assert status == "ok"
    assert "from-request /scratch/work" in out
    # the one grader variable a kernel gets is the device kind it was given (exercises.lab.device reads it)
    assert "'TITANGRADE_DEVICE'" in out
    assert "TITANGRADE" not in out.replace("'TITANGRADE_DEVICE'", "") and "JPY_" not in out.replace("JPY_PARENT_PID", "")


def test_secret_in_grader_env_is_invisible(bwrap_sandbox, monkeypatch):
    monkeypatch.setenv("TITANGRADE_SECRET_KEY", "s3cr3t-value-for-the-sandbox-test")
    with bwrap_sandbox.start(KernelRequest(limits=SMALL)) as s:
        run = Runner(s)
        status, out = run("import glob\nleaks = []\nfor p in glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline'):\n"
                          "    try:\n        leaks += [p] if b's3cr3t-value' in open(p, 'rb').read() else []\n"
                          "    except OSError:\n        pass\nprint('leaks', leaks)")
        run.close()
    assert status == "ok" and "leaks []" in out


def test_no_network_but_own_loopback(session):
    s, run = session
    arrived = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(4)
    port = listener.getsockname()[1]

    def accept():
        try:
            arrived.append(listener.accept())
        except OSError:
            pass

    t = threading.Thread(target=accept)
    t.start()
    status, out = run(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)")
    t.join()
    listener.close()
    assert status == "error" and "ConnectionRefusedError" in out
    assert arrived == []
    status, out = run("import socket\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
                      "c = socket.create_connection(s.getsockname()); print('loopback ok')\n"
                      "print(sorted(i[1] for i in socket.if_nameindex()))")
    assert status == "ok" and "loopback ok" in out and "['lo']" in out
    status, out = run("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)")
    assert status == "error" and ("unreachable" in out or "OSError" in out)


def test_scratch_is_private_and_visible_to_host(session):
    s, run = session
    status, out = run("open('note.txt', 'w').write('hello'); import os; print(os.getcwd())")
    assert status == "ok" and "/scratch/work" in out
    assert (s.workdir / "note.txt").read_text() == "hello"


def test_memory_file_size_and_process_limits_are_reported(bwrap_sandbox):
    s = bwrap_sandbox.start(KernelRequest(limits=SMALL))
    run = Runner(s)
    assert run("big = bytearray(3 * 1024**3)")[0] == "error"
    status, out = run("open('f.bin', 'wb').write(b'0' * (16 << 20))")
    assert status == "error" and "File too large" in out
    status, out = run("import subprocess\nps = [subprocess.Popen(['sleep', '30']) for _ in range(64)]")
    assert status == "error" and ("BlockingIOError" in out or "Resource temporarily unavailable" in out), out
    run.close()
    hits = s.close()
    assert {"memory limit", "file size limit", "process limit"} <= set(hits)
    assert uid_is_clean(bwrap_sandbox, s.user)


def test_cpu_time_limit_kills_kernel(bwrap_sandbox):
    s = bwrap_sandbox.start(KernelRequest(limits=Limits(cpu_time_s=2)))
    run = Runner(s)
    run.kc.execute("while True: pass")
    assert wait_gone(lambda: not s.km.is_alive(), timeout=20)  # SIGXCPU after 2 CPU-seconds
    run.close()
    assert "cpu time limit" in s.close()


def test_close_kills_every_process_of_the_run(bwrap_sandbox):
    s = bwrap_sandbox.start(KernelRequest(limits=SMALL))
    run = Runner(s)
    status, _ = run("import subprocess, sys\nsubprocess.Popen(['sleep', '876543'])\n"
                    "subprocess.Popen([sys.executable, '-c', 'import os, time\\nif os.fork() == 0:\\n"
                    "    os.setsid(); time.sleep(876543)'], start_new_session=True)")
    assert status == "ok"
    assert wait_gone(lambda: len(procs_with("876543")) >= 2)
    run.close()
    s.close()
    assert wait_gone(lambda: not procs_with("876543"))
    assert uid_is_clean(bwrap_sandbox, s.user)
    assert not s.runtime.exists()


def test_kernel_exit_takes_the_namespace_down(bwrap_sandbox):
    s = bwrap_sandbox.start(KernelRequest(limits=SMALL))
    run = Runner(s)
    run("import subprocess\nsubprocess.Popen(['sleep', '765432'])")
    assert wait_gone(lambda: procs_with("765432"))
    run.kc.execute("import os\nos._exit(0)")
    assert wait_gone(lambda: not s.km.is_alive())
    assert wait_gone(lambda: not procs_with("765432"))
    run.close()
    assert s.close() == []


def test_output_flood_is_interrupted(bwrap_sandbox):
    from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

    small_cap = BwrapSandbox(BwrapConfig(output_hard_cap_mb=2))
    s = small_cap.start(KernelRequest())
    run = Runner(s)
    status, out = run("import time\nwhile True:\n    print('y' * 100_000)\n    time.sleep(0.001)\n", timeout=30)
    assert status == "error" and "KeyboardInterrupt" in out
    assert run("print('still alive')")[1].strip().endswith("still alive")
    run.close()
    assert "output limit" in s.close()


def test_wall_clock_backstop_kills_a_runaway_sandbox():
    from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

    sb = BwrapSandbox(BwrapConfig(wall_grace_s=0.5))
    s = sb.start(KernelRequest(limits=Limits(run_timeout_s=2)))
    assert wait_gone(lambda: not s.km.is_alive(), timeout=15)
    assert "time limit" in s.close()


def test_uid_pool_never_shares_a_user_across_pools_and_says_how_to_fix_exhaustion(tmp_path):
    pool, other_worker = UidPool(("tgsbx6", "tgsbx7"), str(tmp_path)), UidPool(("tgsbx6", "tgsbx7"), str(tmp_path))
    a = pool.acquire()
    b = other_worker.acquire()  # a second worker process sees the first one's flock
    assert a.pw_uid != b.pw_uid
    with pytest.raises(Exception, match="TITANGRADE_SANDBOX_USERS"):
        pool.acquire()
    pool.release(a)
    assert other_worker.acquire().pw_uid == a.pw_uid


def test_make_sandbox_auto_is_bwrap_here():
    assert make_sandbox("auto").mode == "bwrap"
    assert make_sandbox("unsafe-local").mode == "unsafe-local"
    with pytest.raises(ValueError, match="unknown sandbox mode"):
        make_sandbox("docker")
