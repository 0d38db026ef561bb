"""Kernels forked from a pre-imported parent (grading/sandbox/forkserver.py), in the real bwrap sandbox
with real cgroups and the real system-call filter: what one submission leaves is invisible to the next,
each kernel keeps the uid, group, namespaces, capabilities and filter an exec'd kernel has, the parent
is replaced when its inputs change, and a broken fork server falls back to exec'd kernels."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest
from sandbox_helpers import Runner, needs_bwrap

from grading.errors import GraderFault
from grading.sandbox import KernelRequest
from grading.sandbox.bwrap import BwrapSandbox
from grading.sandbox.bwrap_command import BwrapConfig
from grading.sandbox.forkserver import ForkingSandbox

pytestmark = [needs_bwrap, pytest.mark.slow]

PROBE = r"""
import json, os, random, sys
def _status(key):
    return next(l.split(":", 1)[1].strip() for l in open("/proc/self/status") if l.startswith(key + ":"))
print(json.dumps({
    "uid": os.getresuid(), "gid": os.getresgid(), "groups": os.getgroups(),
    "caps": [_status(k) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")],
    "nnp": _status("NoNewPrivs"), "seccomp": _status("Seccomp"),
    "cgroup": open("/proc/self/cgroup").read(),
    "ns": {n: os.readlink(f"/proc/self/ns/{n}") for n in ("mnt", "net", "pid", "ipc", "uts", "cgroup")},
    "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
    "fd_targets": {int(fd): os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
                   if os.path.exists(f"/proc/self/fd/{fd}")},
    "env": dict(os.environ), "environ": open("/proc/self/environ", "rb").read().decode(errors="replace"),
    "random": random.random(), "modules": sorted(sys.modules), "pid": os.getpid(), "sid": os.getsid(0),
    "cwd": os.getcwd(),
}))
"""

LEAVE_TRACES = r"""
import os, random, xml.dom.minidom
LEFT_BY_A = 42
os.environ["LEFT_BY_A"] = "1"
open("/scratch/work/left_by_a.txt", "w").write("a")
open("/tmp/left_by_a.txt", "w").write("a")
open("/dev/shm/left_by_a", "w").write("a")
random.seed(1234)
held = open("/scratch/work/held_open.txt", "w")
print("ok")
"""

LOOK_FOR_TRACES = r"""
import json, os, random, sys
print(json.dumps({
    "module": "xml.dom.minidom" in sys.modules,
    "global": "LEFT_BY_A" in globals(),
    "env": "LEFT_BY_A" in os.environ,
    "files": [p for p in ("/scratch/work/left_by_a.txt", "/tmp/left_by_a.txt", "/dev/shm/left_by_a")
              if os.path.exists(p)],
    "random": random.random(),
}))
"""


def shape(targets: dict[str, str]) -> list[str]:
    """Descriptors 1 and up, told apart by what they are (inode numbers and the run's user aside)."""
    return sorted(re.sub(r"\[\d+\]", "[]", re.sub(r"tgsbx\d+", "tgsbxN", t)) for fd, t in targets.items() if fd != "0")


def probe(session) -> dict:
    run = Runner(session)
    try:
        status, out = run(PROBE)
        assert status == "ok", out
        return json.loads(out)
    finally:
        run.close()


@pytest.fixture(scope="module")
def forking():
    sandbox = ForkingSandbox(BwrapConfig(kernel_start="fork"))
    yield sandbox
    sandbox.close()


def test_a_forked_kernel_is_locked_down_as_an_execd_one(forking):
    plain = BwrapSandbox(BwrapConfig(kernel_start="exec"))
    before = forking.forked
    with forking.start(KernelRequest()) as forked_session, plain.start(KernelRequest()) as exec_session:
        assert forking.forked == before + 1, "the kernel was not forked (the fork path fell back)"
        forked, execd = probe(forked_session), probe(exec_session)
    uid = forked_session.user.pw_uid
    assert forked["uid"] == [uid] * 3 and forked["gid"] == [forked_session.user.pw_gid] * 3 and forked["groups"] == []
    assert uid != 0 and forked_session.user.pw_uid != exec_session.user.pw_uid
    assert forked["caps"] == ["0000000000000000"] * 5  # an empty bounding set too (exec'd: what bwrap kept)
    assert execd["caps"][1:3] == ["0000000000000000"] * 2  # exec'd: bwrap leaves an inheritable set
    assert forked["nnp"] == "1" and forked["seccomp"] == execd["seccomp"] == "2"
    assert forked["cgroup"] == execd["cgroup"]  # its own cgroup namespace: the run's group is its root "/"
    group = Path(forked_session.group.procs_files()[0]).parent.name
    assert group == f"titangrade-{forked_session.user.pw_name}"
    assert forked["ns"] != execd["ns"] and all(forked["ns"][n] != execd["ns"][n] for n in forked["ns"])
    host_ns = {n: os.readlink(f"/proc/self/ns/{n}") for n in forked["ns"]}
    assert all(forked["ns"][n] != host_ns[n] for n in host_ns)
    assert forked["env"] == execd["env"]  # the same allow-listed environment, nothing of the grader's or zygote's
    # the one grader variable a kernel gets is the device kind it was given (exercises.lab.device reads it)
    environ = forked["environ"].replace("TITANGRADE_DEVICE=cpu\x00", "")
    assert "TITANGRADE_DEVICE=cpu" in forked["environ"] and "TITANGRADE" not in environ and "SECRET" not in environ
    assert forked["cwd"] == execd["cwd"] and forked["sid"] == forked["pid"]
    # the kinds of descriptor an exec'd kernel has (ipykernel's pipes, sockets and eventfds, its history
    # database), nothing of the zygote's or another run's; stdin is /dev/null (an exec'd kernel's is the
    # kernel manager's pipe to bwrap)
    assert forked["fd_targets"]["0"] == "/dev/null"
    assert shape(forked["fd_targets"]) and set(shape(forked["fd_targets"])) <= set(shape(execd["fd_targets"])) | {
        "/scratch/work/.ipython/profile_default/history.sqlite-journal"
    }, (forked["fd_targets"], execd["fd_targets"])
    assert forked["modules"] == execd["modules"]  # sys.modules as an exec'd kernel's: nothing more of the zygote
    for hidden in ("grading", "service", "reference"):
        assert not [m for m in forked["modules"] if m == hidden or m.startswith(hidden + ".")]


def test_two_consecutive_forked_kernels_share_nothing(forking):
    with forking.start(KernelRequest()) as first:
        run = Runner(first)
        try:
            assert run(LEAVE_TRACES) == ("ok", "ok\n")
            first_random = probe(first)["random"]
        finally:
            run.close()
    with forking.start(KernelRequest()) as second:
        run = Runner(second)
        try:
            status, out = run(LOOK_FOR_TRACES)
        finally:
            run.close()
        seen = probe(second)
    assert status == "ok", out
    traces = json.loads(out)
    assert traces == {"module": False, "global": False, "env": False, "files": [], "random": traces["random"]}
    assert traces["random"] != first_random and seen["random"] != first_random
    assert "held_open" not in json.dumps(seen["fd_targets"]) and "left_by_a" not in json.dumps(seen["fd_targets"])


def test_two_forked_kernels_at_once_have_their_own_uid_group_namespaces_and_random_state(forking):
    with forking.start(KernelRequest()) as a, forking.start(KernelRequest()) as b:
        first, second = probe(a), probe(b)
        assert a.user.pw_uid != b.user.pw_uid and first["uid"] != second["uid"]
        assert a.group.procs_files() != b.group.procs_files()  # a control group each
        assert all(first["ns"][n] != second["ns"][n] for n in first["ns"])  # namespaces each
        assert first["random"] != second["random"]


def test_a_forked_kernels_exit_ends_it_for_the_grader(forking):
    session = forking.start(KernelRequest())
    try:
        assert session.km.is_alive()
        run = Runner(session)
        run.kc.execute("import os; os.kill(os.getpid(), 9)")
        deadline = time.monotonic() + 10
        while session.km.is_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        run.close()
        assert not session.km.is_alive()
        assert session.kernel_exit is not None and session.kernel_exit() == -signal.SIGKILL
    finally:
        session.close()


def test_the_parent_is_replaced_when_its_inputs_change(tmp_path):
    marker = tmp_path / "lab_input.py"
    marker.write_text("x = 1\n")
    sandbox = ForkingSandbox(BwrapConfig(kernel_start="fork"), extra_inputs=(str(marker),))
    try:
        with sandbox.start(KernelRequest()):
            pass
        (zygote,) = sandbox._zygotes.values()
        with sandbox.start(KernelRequest()):
            pass
        assert list(sandbox._zygotes.values()) == [zygote] and sandbox.replaced == 0  # unchanged: kept
        os.utime(marker, ns=(1, 1))
        with sandbox.start(KernelRequest()) as session:
            assert probe(session)["uid"][0] == session.user.pw_uid
        (replacement,) = sandbox._zygotes.values()
        assert replacement.pid != zygote.pid and sandbox.replaced == 1 and sandbox.forked == 3
        assert zygote.proc.poll() is not None  # the old parent is gone
    finally:
        sandbox.close()


def test_a_dead_parent_is_replaced():
    sandbox = ForkingSandbox(BwrapConfig(kernel_start="fork"))
    try:
        with sandbox.start(KernelRequest()):
            pass
        (zygote,) = sandbox._zygotes.values()
        os.kill(zygote.pid, signal.SIGKILL)
        zygote.proc.wait()
        with sandbox.start(KernelRequest()):
            pass
        assert sandbox.forked == 2 and sandbox.fallbacks == 0 and sandbox.replaced == 1
    finally:
        sandbox.close()


@pytest.mark.parametrize("python", ["/nonexistent/python", "/bin/cat"])  # no parent; one that answers garbage
def test_a_broken_fork_server_falls_back_to_execd_kernels(python):
    broken = ForkingSandbox(BwrapConfig(kernel_start="fork"), zygote_python=python)
    try:
        with broken.start(KernelRequest()) as session:
            assert probe(session)["uid"][0] == session.user.pw_uid  # a working kernel, the usual way
        assert broken.forked == 0 and broken.fallbacks == 1
    finally:
        broken.close()


def test_a_request_hiding_a_module_the_parent_holds_is_never_forked(forking):
    """The zygote imported msgpack (jupyter_client's), so a kernel forked from it would hold the module its
    exercise hides: that request takes the usual way (where, msgpack being one of jupyter_client's, the
    kernel cannot start at all: a grader fault, as before)."""
    forked, fallbacks = forking.forked, forking.fallbacks
    with contextlib.suppress(GraderFault):
        forking.start(KernelRequest(hidden_modules=("msgpack",))).close()
    assert forking.forked == forked and forking.fallbacks == fallbacks + 1


@pytest.mark.parametrize("answer", [b"not json\n", b"[1, 2]\n", b"{" + b" " * (1 << 17) + b"}\n"])
def test_a_fork_servers_bad_or_oversized_answer_is_unavailable_not_a_crash(answer):
    """What the zygote writes back is read bounded (size and time) and must be one JSON object, else the
    fork path is unavailable and the kernel starts the usual way."""
    import os
    import threading

    from grading.sandbox import forkserver

    r, w = os.pipe()
    writer = threading.Thread(target=lambda: (os.write(w, answer), os.close(w)))
    writer.start()
    with open(r, "rb", buffering=0) as stream, pytest.raises(forkserver.ForkUnavailable):
        forkserver._read_line(stream, 5.0)
    writer.join()
