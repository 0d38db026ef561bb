"""The system-call filter itself (grading/sandbox/seccomp.py), without bwrap: the compiled program loaded
into a real child process refuses what it should and nothing a process needs; missing bindings are refused
or warned about by policy; bwrap is handed the filter. The kernel-in-sandbox checks: test_sandbox_seccomp.py."""
from __future__ import annotations

import logging
import os
import pwd
import subprocess
import sys
import textwrap

import pytest

from grading.errors import GraderFault
from grading.sandbox import KernelRequest, seccomp
from grading.sandbox.bwrap_command import BwrapConfig, bwrap_argv

# loads the program given on stdin with prctl(PR_SET_SECCOMP) (as bwrap does), then makes each call
CHILD = textwrap.dedent("""
    import ctypes, errno, json, os, sys
    prog = sys.stdin.buffer.read()
    NR = json.loads(sys.argv[1])
    libc = ctypes.CDLL(None, use_errno=True)

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = Fprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_char_p))
    assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
    assert libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0, ctypes.get_errno()  # SECCOMP_MODE_FILTER

    def call(name, *args):
        ctypes.set_errno(0)
        r = libc.syscall(NR[name], *args)
        return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]

    out = {
        "unshare(NEWUSER)": call("unshare", 0x10000000),
        "unshare(NEWNS)": call("unshare", 0x20000),
        "unshare(NEWTIME)": call("unshare", 0x80),
        "unshare(FILES)": call("unshare", 0x400),
        "mount tmpfs": call("mount", b"none", b"/tmp", b"tmpfs", 0, None),
        "keyctl": call("keyctl", 1, None),
        "ptrace(TRACEME)": call("ptrace", 0, 0, None, None),
        "clone3": call("clone3", None, 0),
        "personality(ADDR_NO_RANDOMIZE)": call("personality", 0x0040000),
        "personality(PER_LINUX)": call("personality", 0),
        "getpid": call("getpid"),
    }
    import subprocess, threading
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    out["thread"] = "ok"
    out["subprocess"] = "ok" if subprocess.run(["/bin/true"]).returncode == 0 else "failed"
    print(json.dumps(out))
""")


def test_the_compiled_filter_refuses_namespaces_mounts_keyrings_and_ptrace_in_a_real_process():
    import json

    sc = seccomp.load_bindings()
    names = ("unshare", "mount", "keyctl", "ptrace", "clone3", "personality", "getpid")
    numbers = {name: sc.resolve_syscall(sc.Arch(), name) for name in names}
    got = subprocess.run([sys.executable, "-c", CHILD, json.dumps(numbers)], input=seccomp.program(),
                         capture_output=True, timeout=60, check=True)
    assert json.loads(got.stdout) == {
        "unshare(NEWUSER)": "EPERM", "unshare(NEWNS)": "EPERM", "unshare(NEWTIME)": "EPERM",
        "unshare(FILES)": "ok", "mount tmpfs": "EPERM", "keyctl": "EPERM", "ptrace(TRACEME)": "EPERM",
        "clone3": "ENOSYS", "personality(ADDR_NO_RANDOMIZE)": "EPERM", "personality(PER_LINUX)": "ok",
        "getpid": "ok", "thread": "ok", "subprocess": "ok",
    }


def test_the_filter_is_built_once_per_process():
    assert seccomp.program() is seccomp.program()


@pytest.fixture
def no_bindings(monkeypatch, tmp_path):
    """libseccomp's Python bindings really absent: the venv has none, and Debian's folder is an empty one."""
    monkeypatch.delitem(sys.modules, "seccomp", raising=False)  # the extension registers itself once loaded
    monkeypatch.setattr(seccomp, "DIST_PACKAGES", (str(tmp_path),))
    monkeypatch.setattr(seccomp, "_warned", False)
    seccomp.program.cache_clear()
    yield
    seccomp.program.cache_clear()


def test_missing_bindings_are_refused_when_required_and_warned_about_loudly_once_otherwise(no_bindings, caplog):
    found = seccomp.probe()
    assert not found.usable and "python3-seccomp" in found.reason and "install-system-deps.sh" in found.reason
    with pytest.raises(GraderFault, match=r"system-call filter cannot be built.*python3-seccomp") as err:
        seccomp.use_filter("require")
    assert not err.value.retryable
    with caplog.at_level(logging.WARNING, logger="grading.sandbox.seccomp"):
        assert seccomp.use_filter("auto") is False
        assert seccomp.use_filter("auto") is False
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and warnings[0].startswith("WARNING: sandboxed kernels run WITHOUT")
    assert seccomp.use_filter("off") is False
    with pytest.raises(ValueError, match="auto, require, off"):
        seccomp.use_filter("on")


def test_bwrap_is_handed_the_filter_as_an_inherited_descriptor(tmp_path):
    (tmp_path / "kernel").mkdir()
    fd = seccomp.filter_fd()
    try:
        argv = bwrap_argv(BwrapConfig(users=("root",)), KernelRequest(), pwd.getpwnam("root"), tmp_path,
                          seccomp_fd=fd)
        assert argv[argv.index("--seccomp") + 1] == str(fd) and argv.index("--seccomp") < argv.index("--")
        assert os.pread(fd, 1 << 20, 0) == seccomp.program()
    finally:
        os.close(fd)
    (tmp_path / "plain").mkdir()
    plain = bwrap_argv(BwrapConfig(users=("root",)), KernelRequest(), pwd.getpwnam("root"), tmp_path / "plain")
    assert "--seccomp" not in plain
