"""The real sandbox: each kernel in a fresh bubblewrap container as a dedicated unprivileged uid.

Root starts `bwrap` without a user namespace (so the uid outside is the real sandbox uid and
RLIMIT_NPROC counts per run); `_launcher.py` then sets rlimits and drops to `tgsbxN` before exec'ing
ipykernel. ZMQ uses the ipc transport through a bind-mounted runtime dir because loopback inside the
sandbox's network namespace is not the host's. See docs/sandbox.md for the threat model.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import zmq
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.session import Session

from grading.errors import GraderFault, HostBusy
from grading.exercise import Limits
from grading.sandbox import seccomp
from grading.sandbox.bwrap_command import (
    INNER_KERNEL_BOOT,
    KERNEL_DIR,
    WORKDIR,
    WRITABLE,
    BwrapConfig,
    MiB,
    bwrap_argv,
    kernel_env,
)
from grading.sandbox.cgroups import NO_GROUP, RunGroup, run_groups
from grading.sandbox.channels import bounded_socket, read_message, recv_bounded
from grading.sandbox.interface import KernelRequest, KernelSession, Sandbox
from grading.sandbox.users import UidPool, kill_uid
from grading.sandbox.watch import CPU, DISK, FILE_SIZE, MEMORY, LimitWatcher

LINKS = "links"  # in the root-only runtime dir: our hard links to the kernel's sealed sockets
CHANNELS = ("shell", "iopub", "control", "stdin", "hb")


def await_kernel_info(url: str, session: Session, *, timeout_s: float, is_alive: Callable[[], bool]) -> None:
    """Return once the kernel answers kernel_info on its shell `url`; raises TimeoutError or RuntimeError.
    A bounded DEALER that retries its connect every 10 ms (the kernel binds a moment after it starts),
    instead of jupyter_client's wait_for_ready: a client thread, and a fixed 0.2 s flush of iopub."""
    ctx = zmq.Context()
    sock = bounded_socket(ctx, zmq.DEALER, url, reconnect_ms=10)
    try:
        now = time.monotonic()
        deadline, next_alive, next_send = now + timeout_s, now + 0.1, now
        while True:
            now = time.monotonic()
            if now > deadline:
                raise TimeoutError(f"no kernel_info reply within {timeout_s:g} s")
            if now >= next_alive:
                next_alive = now + 0.1
                if not is_alive():
                    raise RuntimeError("the kernel died before replying to kernel_info")
            if now >= next_send:  # queued until the connect succeeds; sent again in case one was lost
                next_send = now + 1.0
                with contextlib.suppress(zmq.Again):
                    session.send(sock, "kernel_info_request", {})
            if not sock.poll(20):
                continue
            got = recv_bounded(sock)
            if got.endless:
                raise RuntimeError("the kernel sent an endless message before it was ready")
            if got.frames is None:
                continue
            try:
                msg = read_message(session, got.frames)
            except Exception:
                continue
            if msg.get("msg_type") == "kernel_info_reply":
                return
    finally:
        sock.close(linger=0)
        ctx.term()


def seal_kernel_dir(runtime: Path, uid: int, info: dict) -> None:
    """Once ipykernel has bound its sockets: make its dir root's (the sandbox can no longer add, replace
    or write anything there), check every entry with lstat, and hard-link the sockets into a root-only
    dir. The grader then connects only through those links, so it never resolves a path the sandbox can
    write; a link names the socket inode the kernel bound, whatever later happens to the original name."""
    kernel_dir = runtime / KERNEL_DIR
    os.chown(kernel_dir, 0, 0, follow_symlinks=False)
    os.chmod(kernel_dir, 0o755, follow_symlinks=False)
    links = runtime / LINKS
    links.mkdir(mode=0o700)
    expected = {f"sock-{info[f'{name}_port']}": name for name in CHANNELS}
    for entry in os.scandir(kernel_dir):
        st = entry.stat(follow_symlinks=False)
        if entry.name == "kernel.json" and stat.S_ISREG(st.st_mode) and st.st_uid == 0:
            continue
        if entry.name not in expected or not stat.S_ISSOCK(st.st_mode) or st.st_uid != uid:
            raise GraderFault(f"unexpected entry {entry.name!r} in the kernel's socket dir")
    for filename, name in expected.items():
        link = links / name
        os.link(kernel_dir / filename, link, follow_symlinks=False)
        st = os.lstat(link)
        if not stat.S_ISSOCK(st.st_mode) or st.st_uid != uid:
            raise GraderFault(f"the kernel's {name} socket is not a socket of the sandbox user")


class _SandboxKernelManager(KernelManager):
    """A KernelManager whose launch command is wrapped in bwrap and whose connection file the
    sandbox uid may read."""

    wrap_argv: list[str] = []  # noqa: RUF012  (only ever replaced per instance, never mutated in place)
    owner: tuple[int, int] = (0, 0)
    kernel_alive: Callable[[], bool] | None = None  # a forked kernel (forkserver.py): alive only while it is

    def is_alive(self) -> bool:
        return bool(super().is_alive()) and (self.kernel_alive is None or self.kernel_alive())

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        return self.wrap_argv + super().format_kernel_cmd(extra_arguments)

    def write_connection_file(self, **kwargs: object) -> None:
        super().write_connection_file(**kwargs)
        os.chmod(self.connection_file, 0o644)  # root's file: the kernel reads it and cannot change it


class BwrapSession(KernelSession):
    mode = "bwrap"

    def __init__(
        self,
        *,
        km: _SandboxKernelManager,
        runtime: Path,
        user: pwd.struct_passwd,
        uids: UidPool,
        limits: Limits,
        watcher: LimitWatcher | None,
        accelerator: bool = False,
        group: RunGroup = NO_GROUP,
    ) -> None:
        self.km = km
        self.group = group
        self.runtime = runtime
        self.user = user
        self.limits = limits
        self.watcher = watcher
        self.accelerator = accelerator
        self._uids = uids
        self._closed: list[str] | None = None
        self._lock = threading.Lock()
        self.kernel_exit: Callable[[], int | None] | None = None  # a forked kernel's exit code (forkserver.py)
        self.cleanups: list[Callable[[], None]] = []

    def channel_urls(self) -> dict[str, str]:
        """The kernel's sockets through hard links in a root-only directory (see `seal_kernel_dir`)."""
        return {name: f"ipc://{self.runtime / LINKS / name}" for name in CHANNELS}

    @property
    def pid(self) -> int:
        """Host pid of the outer bwrap process (the kernel manager's child)."""
        return self.km.provisioner.pid

    def _inner_pid(self) -> int | None:
        try:
            children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    @property
    def workdir(self) -> Path:  # type: ignore[override]
        """The scratch dir as the host sees it, through the sandbox's mount namespace (root only)."""
        inner = self._inner_pid()
        if inner is None:
            raise GraderFault("the sandbox is gone; its scratch directory no longer exists")
        return Path(f"/proc/{inner}/root{WORKDIR}")

    def kill(self) -> None:
        """SIGKILL the outer bwrap; --die-with-parent takes the PID namespace (everything) with it."""
        with contextlib.suppress(OSError, TypeError):
            os.kill(self.pid, signal.SIGKILL)

    def _reap(self) -> None:
        """Wait for the SIGKILLed bwrap itself (no polling), then free the kernel manager's files and
        sockets. Not km.shutdown_kernel: after a kill it sends an interrupt to the dead kernel and polls
        every 0.1 s for an exit that has already happened (0.1-0.2 s of every grade)."""
        proc = getattr(self.km.provisioner, "process", None)
        if proc is not None:
            proc.wait(timeout=5)
        self.km.cleanup_resources()

    def _scratch_full(self) -> bool:
        """Any writable tmpfs out of bytes or inodes (mount points only the sandbox's root may replace)."""
        inner = self._inner_pid()
        if inner is None:
            return False
        for path in WRITABLE:
            try:
                st = os.statvfs(f"/proc/{inner}/root{path}")
            except OSError:
                continue
            if st.f_bavail * st.f_frsize < 1 * MiB or st.f_favail < 2:
                return True
        return False

    def _exit_limits(self) -> set[str]:
        proc = getattr(self.km.provisioner, "process", None)
        code = self.kernel_exit() if self.kernel_exit else proc.poll() if proc is not None else None
        if code is None:
            return set()
        # bwrap reports a child killed by signal N as exit status 128 + N
        sig = code - 128 if code > 128 else -code if code < 0 else 0
        if sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS) and not self.accelerator:
            # under RLIMIT_AS a native crash is almost always an unchecked failed allocation (seen: libzmq
            # segfaults when a print flood exhausts the address space)
            return {MEMORY}
        return {int(signal.SIGXCPU): {CPU}, int(signal.SIGXFSZ): {FILE_SIZE}}.get(sig, set())

    def poll_limits(self) -> set[str]:
        return self.group.poll()

    def close(self) -> list[str]:
        with self._lock:
            if self._closed is not None:
                return self._closed
            hits = (set(self.watcher.hits) if self.watcher else set()) | self._exit_limits() | self.group.hits()
            if self._scratch_full():
                hits.add(DISK)
            if self.watcher:
                self.watcher.stop()
            try:
                self.kill()
                self._reap()
            except Exception:
                pass  # the processes are dead either way; the uid sweep below proves it
            # the group first: it kills the run's processes from its own list, so the uid sweep (a scan of
            # every /proc entry) usually finds nothing at its first look and need not wait and look again
            clean = self.group.destroy()
            clean = kill_uid(self.user.pw_uid) and clean
            for cleanup in self.cleanups:
                with contextlib.suppress(Exception):
                    cleanup()
            shutil.rmtree(self.runtime, ignore_errors=True)
            if clean:
                self._uids.release(self.user)  # a uid with survivors stays out of circulation
            self._closed = sorted(hits)
            return self._closed


class BwrapSandbox(Sandbox):
    mode = "bwrap"

    def __init__(self, config: BwrapConfig | None = None) -> None:
        self.config = config or BwrapConfig()
        if os.geteuid() != 0:
            raise GraderFault(
                "the bwrap sandbox must be started by root (it drops each kernel to a "
                "tgsbxN user); run the worker as root or use unsafe-local for development",
                retryable=False,
            )
        self.uids = UidPool(self.config.users, os.path.join(self.config.runtime_root, "users"))
        self.groups = run_groups(
            self.config.cgroups, cpus_per_run=self.config.cpus_per_run, cpu_weight=self.config.cpu_weight
        )
        self.groups.sweep(self.uids)  # a SIGKILLed worker's groups
        self.seccomp = seccomp.use_filter(self.config.seccomp)

    def start(self, request: KernelRequest) -> BwrapSession:
        return self._start(request)

    def _start(self, request: KernelRequest, *, hold: bool = False) -> BwrapSession:
        """`hold`: the sandbox waits for a kernel that `_before_ready` brings (forkserver.py)."""
        cfg = self.config
        user = self.uids.acquire()
        os.makedirs(cfg.runtime_root, mode=0o711, exist_ok=True)
        runtime = Path(cfg.runtime_root, user.pw_name)  # ours while we hold the user's lock
        shutil.rmtree(runtime, ignore_errors=True)  # a crashed worker's leftovers
        runtime.mkdir(mode=0o700)  # root only: the sandbox sees just runtime/kernel, bound in
        group = NO_GROUP
        filter_fd = None
        try:
            group = self.groups.create(
                user.pw_name, memory_mb=request.limits.memory_mb, max_processes=request.limits.max_processes
            )
            filter_fd = seccomp.filter_fd() if self.seccomp else None
            km = self._kernel_manager(request, user, runtime, seccomp_fd=filter_fd, hold=hold)
            km.wrap_argv = group.exec_prefix() + km.wrap_argv  # bwrap is born in the run's group
            with open(runtime / "launch.log", "wb") as launch_log:
                km.start_kernel(
                    cwd="/",
                    env=self._host_env(),
                    stdout=launch_log,
                    stderr=launch_log,
                    pass_fds=() if filter_fd is None else (filter_fd,),
                )
            session = BwrapSession(
                km=km,
                runtime=runtime,
                user=user,
                uids=self.uids,
                limits=request.limits,
                watcher=None,
                accelerator=request.devices.kind != "cpu",
                group=group,
            )
        except Exception as exc:
            shutil.rmtree(runtime, ignore_errors=True)
            kill_uid(user.pw_uid)
            group.destroy()
            self.uids.release(user)
            if isinstance(exc, HostBusy):  # no group for the run (cgroups.py): nothing of it started, it waits
                raise
            raise GraderFault(f"sandboxed kernel failed to start: {exc}") from exc
        finally:
            if filter_fd is not None:
                os.close(filter_fd)  # bwrap has its own copy (and has read it, or will before it execs)
        self._wait_ready(session, request if hold else None)
        deadline = time.monotonic() + request.limits.run_timeout_s + cfg.wall_grace_s
        session.watcher = LimitWatcher(
            session.channel_urls(),
            km.session,
            deadline=deadline,
            kill=session.kill,
            output_cap_bytes=cfg.output_hard_cap_mb * MiB,
        )
        session.watcher.start()
        session.watcher.wait_subscribed()
        return session

    def _before_ready(self, session: BwrapSession, request: KernelRequest) -> None:
        """Where a held sandbox gets its kernel (forkserver.py); nothing to do when bwrap execs it."""

    def _wait_ready(self, session: BwrapSession, held: KernelRequest | None = None) -> None:
        """kernel_info on the shell channel while only ipykernel runs (no learner code yet), then seal the
        kernel's dir and link its sockets. The engine then makes its own iopub handshake (kernel_io.py).
        `held`: the request of a sandbox that waits for `_before_ready` to bring its kernel."""
        try:
            if held is not None:
                self._before_ready(session, held)
            await_kernel_info(
                session.km._make_url("shell"),
                session.km.session,
                timeout_s=self.config.startup_timeout_s,
                is_alive=session.km.is_alive,
            )
            seal_kernel_dir(session.runtime, session.user.pw_uid, session.km.get_connection_info())
            session.km._close_control_socket()  # start_kernel opened it; never read (the engine has its own)
        except Exception as exc:
            log = (session.runtime / "launch.log").read_text(errors="replace")[-2000:]
            session.close()
            raise GraderFault(f"sandboxed kernel did not become ready: {exc}; bwrap said: {log}") from exc

    @staticmethod
    def _host_env() -> dict[str, str]:
        # bwrap and the launcher see only this; nothing of the grader's own environment passes through
        return {"PATH": "/usr/bin:/bin", "LANG": os.environ.get("LANG", "C.UTF-8")}

    def _kernel_manager(
        self,
        request: KernelRequest,
        user: pwd.struct_passwd,
        runtime: Path,
        *,
        seccomp_fd: int | None = None,
        hold: bool = False,
    ) -> _SandboxKernelManager:
        kernel_dir = runtime / KERNEL_DIR
        kernel_dir.mkdir(mode=0o700)
        os.chown(kernel_dir, user.pw_uid, user.pw_gid)  # ipykernel binds its sockets here; sealed once ready
        km = _SandboxKernelManager(
            transport="ipc", ip=str(kernel_dir / "sock"), connection_file=str(kernel_dir / "kernel.json")
        )
        km._kernel_spec = KernelSpec(
            argv=[self.config.python, INNER_KERNEL_BOOT, "-f", "{connection_file}"],
            display_name="titangrade sandbox",
            language="python",
            interrupt_mode="message",
        )
        km.owner = (user.pw_uid, user.pw_gid)
        km.wrap_argv = bwrap_argv(self.config, request, user, runtime, seccomp_fd=seccomp_fd, hold=hold)
        return km

    def kernel_env(self, request: KernelRequest) -> dict[str, str]:
        return kernel_env(self.config, request)

    def bwrap_argv(
        self, request: KernelRequest, user: pwd.struct_passwd, runtime: Path, *, seccomp_fd: int | None = None
    ) -> list[str]:
        """The full command line up to (not including) the kernel's own argv (bwrap_command.py)."""
        return bwrap_argv(self.config, request, user, runtime, seccomp_fd=seccomp_fd)
