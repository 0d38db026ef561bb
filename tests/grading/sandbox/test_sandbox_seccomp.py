"""The kernel's system-call filter (grading/sandbox/seccomp.py) in a real kernel in the real sandbox: each
refused call fails with EPERM from a learner's cell, and what notebooks need (threads, subprocesses,
multiprocessing, torch with gloo between two ranks) still works."""
from __future__ import annotations

import json
import textwrap

import pytest
from sandbox_helpers import Runner, needs_bwrap

from grading.exercise import Limits
from grading.sandbox import KernelRequest, seccomp

pytestmark = [needs_bwrap, pytest.mark.slow]
LIMITS = Limits(memory_mb=4096, max_processes=64, scratch_mb=64, cpu_time_s=60)
NAMES = ("unshare", "clone", "clone3", "setns", "mount", "keyctl", "bpf", "userfaultfd", "perf_event_open",
         "ptrace", "personality", "kexec_load", "init_module", "reboot", "io_uring_setup")
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, SIGCHLD = 0x20000, 0x10000000, 0x40000000, 17

# Each probe runs in a child interpreter (an unfiltered kernel would change its own namespaces or be
# traced) and prints the errno name of the call under test, or "ok". The arguments are chosen so the kernel
# itself would accept the call (or answer something other than EPERM) without the filter.
PROBES = {
    "unshare(CLONE_NEWUSER)": "r = call('unshare', CLONE_NEWUSER)",
    "unshare(CLONE_NEWUSER | CLONE_NEWNET)": "r = call('unshare', CLONE_NEWUSER | CLONE_NEWNET)",
    "clone(CLONE_NEWUSER)": "r = call('clone', CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)\nif r == 0: os._exit(0)",
    "setns(-1, 0)": "r = call('setns', -1, 0)",  # EBADF without the filter
    "mount tmpfs in a new user+mount namespace": (
        "call('unshare', CLONE_NEWUSER | CLONE_NEWNS)\n"
        "r = call('mount', b'none', b'/tmp', b'tmpfs', 0, None)"
    ),
    "keyctl(JOIN_SESSION_KEYRING)": "r = call('keyctl', 1, None)",
    "bpf(unknown command)": "r = call('bpf', 9999, None, 0)",  # EINVAL without the filter
    "userfaultfd(UFFD_USER_MODE_ONLY)": "r = call('userfaultfd', 1)",
    "perf_event_open(NULL)": "r = call('perf_event_open', None, 0, -1, -1, 0)",  # EFAULT without it
    "ptrace(TRACEME)": "r = call('ptrace', 0, 0, None, None)",
    "ptrace(ATTACH, own child)": (
        "child = os.fork()\nif child == 0: time.sleep(30); os._exit(0)\n"
        "r = call('ptrace', 16, child, None, None)\nos.kill(child, 9)"
    ),
    "ptrace(ATTACH, pid 1)": "r = call('ptrace', 16, 1, None, None)",
    "personality(ADDR_NO_RANDOMIZE)": "r = call('personality', 0x0040000)",
    "kexec_load": "r = call('kexec_load', 0, 0, None, 0)",
    "init_module": "r = call('init_module', None, 0, b'')",
    "reboot(invalid magic)": "r = call('reboot', 0, 0, 0, None)",  # EINVAL without the filter
    "io_uring_setup(NULL)": "r = call('io_uring_setup', 1, None)",
}


def _cell(probe: str, numbers: dict[str, int]) -> str:
    child = textwrap.dedent("""
        import ctypes, errno, json, os, sys, time
        NR = json.loads(sys.argv[1])
        libc = ctypes.CDLL(None, use_errno=True)
        CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET, SIGCHLD = {ns}, {user}, {net}, {sigchld}
        def call(name, *args):
            ctypes.set_errno(0)
            return libc.syscall(NR[name], *args)
    """).format(ns=CLONE_NEWNS, user=CLONE_NEWUSER, net=CLONE_NEWNET, sigchld=SIGCHLD) + probe + (
        "\nprint('ok' if r >= 0 else errno.errorcode[ctypes.get_errno()])\n"
    )
    return (
        "import subprocess, sys\n"
        f"p = subprocess.run([sys.executable, '-c', {child!r}, {json.dumps(numbers)!r}], capture_output=True, "
        "text=True, timeout=20)\n"
        "print(p.stdout.strip() or p.stderr.strip()[-300:])\n"
    )


@pytest.fixture(scope="module")
def numbers():
    sc = seccomp.load_bindings()
    return {name: sc.resolve_syscall(sc.Arch(), name) for name in NAMES}


@pytest.fixture(scope="module")
def kernel(bwrap_sandbox):
    session = bwrap_sandbox.start(KernelRequest(limits=LIMITS))
    run = Runner(session)
    yield run
    run.close()
    session.close()


def test_the_kernel_runs_under_a_seccomp_filter(kernel):
    status, out = kernel("print([l.strip() for l in open('/proc/self/status') if l.startswith('Seccomp')])")
    assert status == "ok"
    assert "'Seccomp:\\t2'" in out and "'Seccomp_filters:\\t1'" in out, out


@pytest.mark.parametrize("probe", list(PROBES))
def test_each_refused_call_fails_with_eperm(kernel, numbers, probe):
    status, out = kernel(_cell(PROBES[probe], numbers))
    assert status == "ok", out
    assert out.strip() == "EPERM", f"{probe}: {out}"


def test_clone3_says_enosys_so_glibc_falls_back_to_clone(kernel, numbers):
    status, out = kernel(_cell("r = call('clone3', None, 0)", numbers))
    assert status == "ok" and out.strip() == "ENOSYS", out


def test_what_notebooks_need_still_works(kernel):
    code = textwrap.dedent("""
        import multiprocessing as mp, os, subprocess, threading, ctypes
        out = []
        t = threading.Thread(target=out.append, args=("thread",)); t.start(); t.join()
        out.append(subprocess.run(["/bin/echo", "subprocess"], capture_output=True, text=True).stdout.strip())
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        out.append(f"fork {os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])}")
        for method in ("fork", "spawn", "forkserver"):
            with mp.get_context(method).Pool(2) as pool:
                out.append(f"{method} {sum(pool.map(abs, [-1, -2, -3]))}")
        libc = ctypes.CDLL(None, use_errno=True)
        out.append(f"unshare(CLONE_FILES) {libc.unshare(0x400)}")  # not a namespace: allowed
        print(out)
    """)
    status, out = kernel(code, timeout=60)
    assert status == "ok", out
    assert out.strip() == str(["thread", "subprocess", "fork 7", "fork 6", "spawn 6", "forkserver 6",
                               "unshare(CLONE_FILES) 0"])


GLOO = textwrap.dedent("""
    import os, socket, torch, torch.distributed as dist, torch.multiprocessing as mp

    def rank(r, port, q):
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=r, world_size=2)
        t = torch.tensor([float(r + 1)] * 4)
        dist.all_reduce(t)
        q.put((r, t.tolist()))
        dist.destroy_process_group()

    if __name__ == "__main__":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        ctx = mp.get_context("spawn")
        q = ctx.SimpleQueue()
        procs = [ctx.Process(target=rank, args=(r, port, q)) for r in range(2)]
        for p in procs:
            p.start()
        got = sorted(q.get() for _ in procs)
        for p in procs:
            p.join(60)
        print(got, [p.exitcode for p in procs])
""")


def test_torch_gloo_all_reduce_between_two_processes_works(kernel):
    # spawn pickles `rank` by reference, so it must live in an importable file, not in the cell
    status, out = kernel(f"open('gloo_job.py', 'w').write({GLOO!r})\n"
                         "import subprocess, sys\n"
                         "p = subprocess.run([sys.executable, 'gloo_job.py'], capture_output=True, text=True)\n"
                         "print(p.stdout.strip() or p.stderr[-2000:])", timeout=180)
    assert status == "ok", out
    assert out.strip() == "[(0, [3.0, 3.0, 3.0, 3.0]), (1, [3.0, 3.0, 3.0, 3.0])] [0, 0]", out
