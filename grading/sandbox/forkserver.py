"""Kernels forked from a pre-imported parent (`BwrapConfig.kernel_start = "fork"`): the same fresh bwrap
sandbox per submission as today, with the kernel forked into it instead of exec'd, which skips importing
ipykernel's stack (about 0.2 CPU-s of a kernel start). The design and what it keeps: docs/sandbox.md,
*Kernels forked from a pre-imported parent*.

`ForkingSandbox.start` builds the run's sandbox as `BwrapSandbox` does, with the launcher holding instead
of exec'ing a kernel; `_fork_zygote.py` (a root process outside every sandbox that never runs learner
code) forks a monitor that enters the held sandbox and forks the kernel there, dropping to the run's uid.
Whatever goes wrong on that path (no zygote, a broken one, a kernel that never answers) is the host's, so
the kernel is started the usual way instead: never a learner's zero. A zygote is replaced when its inputs
(the files of every module it imported, the boot code, the course runtime) change.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import select
import subprocess
import threading
import time
from pathlib import Path

from grading.errors import GraderFault, HostBusy
from grading.sandbox import seccomp
from grading.sandbox.bwrap import BwrapSandbox, BwrapSession
from grading.sandbox.bwrap_command import KERNEL_BOOT, WORKDIR, BwrapConfig, kernel_env, rlimits
from grading.sandbox.interface import KernelRequest

log = logging.getLogger(__name__)
ZYGOTE = Path(__file__).with_name("_fork_zygote.py")
MAX_ZYGOTES = 2  # one per kernel environment in use (a device grant or extra variables make another)


class ForkUnavailable(GraderFault):
    """The fork path cannot start this kernel; the caller starts it the usual way."""


MAX_ANSWER_BYTES = 1 << 16  # an answer is one short JSON line (pid, status); more is a broken server


def _read_line(stream: object, timeout_s: float) -> dict:
    fd = stream.fileno()  # type: ignore[attr-defined]
    data = b""
    deadline = time.monotonic() + timeout_s
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise ForkUnavailable(f"the fork server did not answer within {timeout_s:g} s")
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise ForkUnavailable("the fork server exited")
        data += chunk
        if len(data) > MAX_ANSWER_BYTES:
            raise ForkUnavailable(f"the fork server's answer exceeded {MAX_ANSWER_BYTES} bytes")
    try:
        answer = json.loads(data)
    except ValueError:
        raise ForkUnavailable("the fork server answered something that is not JSON") from None
    if not isinstance(answer, dict):
        raise ForkUnavailable("the fork server answered something other than an object")
    return answer


def fingerprint(paths: list[str]) -> str:
    """Every path's mtime and size (a package installed, upgraded or removed, lab code edited)."""
    digest = hashlib.blake2b(digest_size=16)
    for path in paths:
        try:
            st = os.stat(path)
            digest.update(f"{path}\0{st.st_mtime_ns}\0{st.st_size}\n".encode())
        except OSError:
            digest.update(f"{path}\0gone\n".encode())
    return digest.hexdigest()


def lab_files(exercises: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(Path(exercises, "lab")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found += [root, *(os.path.join(root, name) for name in files)]
    return sorted(found)


class Zygote:
    """One running `_fork_zygote.py` for one kernel environment."""

    def __init__(
        self, config: BwrapConfig, env: dict[str, str], *, python: str, extra_inputs: tuple[str, ...] = ()
    ) -> None:
        self.config = config
        self.env = env
        self.log_path = Path(config.runtime_root, f"zygote-{os.getpid()}-{id(self):x}.log")
        os.makedirs(config.runtime_root, mode=0o711, exist_ok=True)
        with open(self.log_path, "wb") as err:
            self.proc = subprocess.Popen(  # our own interpreter and script
                [python, str(ZYGOTE), str(KERNEL_BOOT), *config.always_hidden],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,  # the kernel's environment, never the grader's: a forked kernel's environ starts as this
                cwd="/",
                close_fds=True,
                start_new_session=True,
            )
        try:
            hello = _read_line(self.proc.stdout, config.startup_timeout_s)
        except Exception:
            self.close()
            raise
        if hello.get("threads") != 1 or hello.get("fds") != [0, 1, 2, 3]:  # fd 3: listdir's own
            self.close()
            raise ForkUnavailable(f"the fork server is not single-threaded with only stdio open: {hello}")
        self.modules: frozenset[str] = frozenset(hello.get("modules", ()))
        self.inputs = [*hello.get("files", ()), str(ZYGOTE), str(KERNEL_BOOT), *extra_inputs]
        self.inputs += lab_files(config.exercises)
        self.fingerprint = fingerprint(self.inputs)
        self.pid = self.proc.pid

    def hides_nothing_of(self, hidden: tuple[str, ...]) -> bool:
        """No module the request must not see is among what every child inherits."""
        return not any(m == h or m.startswith(h + ".") for m in self.modules for h in hidden)

    def stale(self) -> bool:
        return self.proc.poll() is not None or fingerprint(self.inputs) != self.fingerprint

    def fork(self, request: dict, timeout_s: float) -> dict:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise ForkUnavailable(f"the fork server is gone: {exc}") from exc
        answer = _read_line(self.proc.stdout, timeout_s)
        if "error" in answer or not isinstance(answer.get("monitor"), int):
            raise ForkUnavailable(f"the fork server could not fork a kernel: {answer.get('error', answer)}")
        return answer

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                stream.close()  # type: ignore[union-attr]
        with contextlib.suppress(OSError):
            self.log_path.unlink()


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _held_launcher(bwrap_pid: int, uid: int, timeout_s: float) -> int:
    """The host pid of the holding launcher (outer bwrap -> its pid 1 -> the launcher) once it has
    dropped to the run's uid: its tmpfs limits and scratch owner are set by then."""
    deadline, pause = time.monotonic() + timeout_s, 0.001
    while time.monotonic() < deadline:
        for init in _children(bwrap_pid):
            for pid in _children(init):
                with contextlib.suppress(OSError):
                    status = Path(f"/proc/{pid}/status").read_text()
                    uids = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
                    if uids == [str(uid)] * 4:
                        return pid
        time.sleep(pause)
        pause = min(pause * 1.5, 0.02)  # a few ms when the host is quiet, few looks when it is not
    raise ForkUnavailable("the held sandbox's launcher never dropped to the run's uid")


class ForkedKernel:
    """The monitor the zygote forked (outside the pid namespace, waiting for the kernel): while it lives,
    the kernel does; the exit code it writes is the kernel's."""

    def __init__(self, monitor: int, status: Path) -> None:
        self.pidfd = os.pidfd_open(monitor)
        self.status = status

    def alive(self) -> bool:
        return not select.select([self.pidfd], [], [], 0)[0]

    def exit_code(self) -> int | None:
        if self.alive():
            return None
        try:
            return int(self.status.read_text())
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.pidfd)


class ForkingSandbox(BwrapSandbox):
    """`BwrapSandbox` whose kernels are forked from a zygote; falls back to exec'd kernels, per start."""

    def __init__(
        self,
        config: BwrapConfig | None = None,
        *,
        extra_inputs: tuple[str, ...] = (),
        zygote_python: str | None = None,
    ) -> None:
        super().__init__(config)
        self.extra_inputs = extra_inputs  # more files whose change replaces the zygote (tests)
        self.zygote_python = zygote_python or self.config.python
        self.forked = self.fallbacks = self.replaced = 0
        self._zygotes: dict[tuple, Zygote] = {}
        self._lock = threading.Lock()
        self._program = seccomp.program().hex() if self.seccomp else ""

    def start(self, request: KernelRequest) -> BwrapSession:
        env = kernel_env(self.config, request)
        try:
            zygote = self._zygote(env)
            if not zygote.hides_nothing_of((*request.hidden_modules, *self.config.always_hidden)):
                raise ForkUnavailable("the fork server imported a module this exercise hides")
            session = self._start(request, hold=True)
        except HostBusy:
            raise
        except GraderFault as exc:
            self.fallbacks += 1
            log.warning("fork server: starting this kernel the usual way instead: %s", exc)
            return self._start(request)
        self.forked += 1
        return session

    def close(self) -> None:
        with self._lock:
            for zygote in self._zygotes.values():
                zygote.close()
            self._zygotes.clear()

    def _zygote(self, env: dict[str, str]) -> Zygote:
        key = tuple(sorted(env.items()))
        with self._lock:
            zygote = self._zygotes.get(key)
            if zygote is not None and zygote.stale():
                zygote.close()
                del self._zygotes[key]
                zygote = None
                self.replaced += 1
            if zygote is None:
                while len(self._zygotes) >= MAX_ZYGOTES:
                    self._zygotes.pop(next(iter(self._zygotes))).close()
                try:
                    zygote = Zygote(self.config, env, python=self.zygote_python, extra_inputs=self.extra_inputs)
                except ForkUnavailable:
                    raise
                except Exception as exc:
                    raise ForkUnavailable(f"the fork server did not start: {exc}") from exc
                self._zygotes[key] = zygote
            return zygote

    def _before_ready(self, session: BwrapSession, request: KernelRequest) -> None:
        """Fork the kernel into the held sandbox (its launcher is the run's uid by then)."""
        uid, gid = session.user.pw_uid, session.user.pw_gid
        holder = _held_launcher(session.pid, uid, self.config.startup_timeout_s)
        status = session.runtime / "kernel.status"
        env = kernel_env(self.config, request)
        ask = {
            "holder": holder,
            "procs": session.group.procs_files(),
            "uid": uid,
            "gid": gid,
            "rlimits": rlimits(request.limits, accelerator=request.devices.kind != "cpu"),
            "env": env,
            "cwd": WORKDIR,
            "argv": ["-f", session.km.connection_file],
            "log": str(session.runtime / "launch.log"),
            "status": str(status),
            "seccomp": self._program,
            "timeout_s": self.config.startup_timeout_s,
        }
        with self._lock:
            zygote = self._zygotes[tuple(sorted(env.items()))]
            answer = zygote.fork(ask, self.config.startup_timeout_s)
            kernel = ForkedKernel(answer["monitor"], status)  # opened before the zygote can reap it
        session.cleanups.append(kernel.close)
        session.km.kernel_alive = kernel.alive
        session.kernel_exit = kernel.exit_code
