"""The fork server's parent (a zygote): imports ipykernel's stack once, then forks one single-use kernel
per request into a sandbox that bwrap has already built and is holding (docs/sandbox.md, *Kernels forked
from a pre-imported parent*). It runs as root OUTSIDE every sandbox and never runs learner code: it reads
one JSON request a line on stdin from the grader (trusted), answers one JSON line on stdout, and exits at
EOF (the grader gone). Started with the kernel's own allow-listed environment, never the grader's.

Per request it forks a monitor, which joins the run's control group, enters the held sandbox's cgroup,
ipc, uts, net, pid and mount namespaces and forks the kernel inside the pid namespace; the monitor then
only waits for the kernel and writes its exit status to a root-only file. The kernel, before any learner
code: its own session, stdio on /dev/null and the run's log, every other descriptor closed, the run's
rlimits, an empty bounding set, the sandbox uid and gid (checked), no_new_privs, the system-call filter,
the run's environment, reseeded RNGs; then ipykernel, exactly as `_kernel_boot.py` would start it.

Stdlib + ipykernel only; nothing of grading/ or service/ is imported (the kernel inherits sys.modules).

usage: python _fork_zygote.py <path of _kernel_boot.py> [hidden top-level module ...]
"""

import contextlib
import ctypes
import json
import os
import select
import signal
import sys

# mnt last: after it, host paths are gone
NAMESPACES = (
    ("cgroup", 0x02000000),
    ("ipc", 0x08000000),
    ("uts", 0x04000000),
    ("net", 0x40000000),
    ("pid", 0x20000000),
    ("mnt", 0x00020000),
)
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 4, 24, 38, 22, 2


class HideModules:
    """A meta-path finder that hides the modules every sandbox hides (debugpy), so importing ipykernel
    here does not pull in what the kernel could never import."""

    def __init__(self, names: list) -> None:
        self.names = set(names)

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None


class SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def check(ok: bool, what: str) -> None:
    if not ok:
        raise OSError(ctypes.get_errno(), what)


def load_seccomp(libc, program: bytes) -> None:
    buf = ctypes.create_string_buffer(program, len(program))
    prog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0, "seccomp filter")


def become_kernel(req: dict, log_fd: int, hider: HideModules) -> None:
    """In the sandbox's namespaces, still root: drop to the run's uid as `_launcher.py` does, then run
    ipykernel. Never returns."""
    libc = ctypes.CDLL(None, use_errno=True)
    os.setsid()
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.closerange(3, 1 << 16)  # the zygote's pipes, the namespace and status descriptors: nothing passes
    os.umask(0o022)
    had_resource = "resource" in sys.modules
    import resource

    for name, (soft, hard) in req["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    if not had_resource:
        del sys.modules["resource"]  # the kernel's modules are exactly an exec'd kernel's
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last_cap = int(f.read())
    for cap in range(last_cap + 1):
        check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0, "drop capability")
    uid, gid = int(req["uid"]), int(req["gid"])
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise SystemExit("titangrade fork server: could not drop privileges")  # never learner code as root
    # changing uid made the process undumpable (its /proc files root's); an exec'd kernel is dumpable again
    # after its exec, and code reads /proc/self (environ, fds, maps): the same as an exec'd kernel
    check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0, "dumpable")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "no_new_privs")
    if req.get("seccomp"):
        load_seccomp(libc, bytes.fromhex(req["seccomp"]))
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    sys.meta_path[:] = [finder for finder in sys.meta_path if finder is not hider]
    if "random" in sys.modules:
        sys.modules["random"].seed()  # from os.urandom: no two kernels share the zygote's state
    sys.argv = ["kernel", *req["argv"]]
    del req
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
    os._exit(0)


def monitor(req: dict, reply_fd: int, hider: HideModules) -> None:
    """The forked child outside the sandbox's pid namespace: join, enter, fork the kernel, wait for it."""
    libc = ctypes.CDLL(None, use_errno=True)
    log_fd = os.open(req["log"], os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    status_fd = os.open(req["status"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    for procs in req["procs"]:
        with open(procs, "w") as f:
            f.write("0")  # into the run's control group: the kernel is born there
    holder = int(req["holder"])
    holder_fd = os.pidfd_open(holder)  # a pidfd, never a pid that could be reused once the sandbox is gone
    ns_fds = [(os.open(f"/proc/{holder}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC), flag) for name, flag in NAMESPACES]
    for fd, flag in ns_fds:
        check(libc.setns(fd, flag) == 0, f"setns {flag:#x}")
        os.close(fd)
    kernel = os.fork()
    if kernel == 0:
        try:
            os.close(reply_fd)
            os.close(status_fd)
            become_kernel(req, log_fd, hider)
        finally:
            os._exit(71)
    os.write(reply_fd, f"pid {kernel}\n".encode())
    low, high = sorted((status_fd, holder_fd))
    os.closerange(0, low)  # the zygote's pipes and the log: the monitor only waits
    os.closerange(low + 1, high)
    os.closerange(high + 1, 1 << 16)
    _, status = os.waitpid(kernel, 0)
    os.write(status_fd, str(os.waitstatus_to_exitcode(status)).encode())
    with contextlib.suppress(OSError):  # as when an exec'd kernel exits: the holder goes, bwrap takes the rest
        signal.pidfd_send_signal(holder_fd, signal.SIGKILL)
    os._exit(0)


def read_reply(fd: int, timeout_s: float) -> bytes:
    data = b""
    while b"\n" not in data:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        chunk = os.read(fd, 4096) if ready else b""
        if not chunk:
            break
        data += chunk
    return data


def fork_kernel(req: dict, hider: HideModules) -> dict:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            monitor(req, write_fd, hider)
        except BaseException as exc:
            os.write(write_fd, f"error {type(exc).__name__}: {exc}\n".encode()[:2000])
        os._exit(70)
    os.close(write_fd)
    try:
        data = read_reply(read_fd, float(req.get("timeout_s", 10)))
    finally:
        os.close(read_fd)
    if data.startswith(b"pid "):
        return {"monitor": pid, "kernel": int(data.split()[1])}
    return {"error": data.decode(errors="replace").strip() or "the monitor exited without a word"}


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def prepare(boot: str, hidden: list) -> HideModules:
    """Import what every kernel imports and apply `_kernel_boot.py`'s patches, once."""
    if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    hider = HideModules(hidden)
    sys.meta_path.insert(0, hider)
    with open(boot) as f:
        code = compile(f.read(), boot, "exec")
    patches: dict = {"__name__": "titangrade_kernel_boot", "__file__": boot}
    exec(code, patches)
    patches["lazy_jupyter_client"]()
    patches["quiet_empty_flushes"]()
    patches["crc32_cell_names"]()
    from ipykernel import kernelapp  # noqa: F401  (the point: everything a kernel imports, imported here)

    return hider


def hello() -> dict:
    with open("/proc/self/status") as f:
        threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    files = sorted(
        {str(m.__file__) for m in list(sys.modules.values()) if isinstance(getattr(m, "__file__", None), str)}
    )
    return {"ready": True, "threads": threads, "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
            "modules": sorted(sys.modules), "files": files}  # fmt: skip


def main() -> None:
    hider = prepare(sys.argv[1], sys.argv[2:])
    out = sys.stdout.buffer
    out.write(json.dumps(hello()).encode() + b"\n")
    out.flush()
    for line in sys.stdin.buffer:
        reap()
        try:
            answer = fork_kernel(json.loads(line), hider)
        except Exception as exc:  # a request the grader got wrong; the zygote stays up for the next
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer).encode() + b"\n")
        out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
