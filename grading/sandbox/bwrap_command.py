"""The bwrap command line of one sandboxed kernel: namespaces, capabilities, read-only binds, the writable
tmpfs mounts, a minimal /etc, the kernel's environment and the launcher's rlimits (bwrap.py runs it).

What a kernel can see and write is decided here; docs/sandbox.md describes the resulting view.
"""

from __future__ import annotations

import json
import os
import pwd
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grading.exercise import REPO_ROOT, Limits
from grading.sandbox import views
from grading.sandbox.devices import device_env, device_nodes
from grading.sandbox.interface import KernelRequest
from grading.sandbox.users import installed_sandbox_users

LAUNCHER = Path(__file__).with_name("_launcher.py")
INNER_LAUNCHER = "/opt/titangrade/launcher.py"
KERNEL_BOOT = Path(__file__).with_name("_kernel_boot.py")  # the kernel's entry point (ipykernel, lighter start)
INNER_KERNEL_BOOT = "/opt/titangrade/kernel_boot.py"
SCRATCH, WORKDIR, TMPDIR, SHM = "/scratch", "/scratch/work", "/tmp", "/dev/shm"
WRITABLE = (SCRATCH, TMPDIR, SHM)  # every path the sandbox can write: tmpfs with byte and inode limits
KERNEL_DIR = "kernel"  # in the root-only runtime dir: the kernel's own dir, bound in (bwrap.py seals it)
ENV_ALLOW = ("LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
ETC_ALLOW = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "nsswitch.conf",
    "alternatives",
    "fonts",
    "mime.types",
    "protocols",
    "services",
    "host.conf",
    "gai.conf",
    "ssl/certs",
)
MiB = 1024 * 1024
# every namespace bwrap can give a kernel (the uid is a real sandbox user, not a user namespace: bwrap.py),
# tied to the grader's life, in a session of its own; probe.py checks the host can do exactly this
ISOLATION = (
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
)


@dataclass(frozen=True, kw_only=True)
class BwrapConfig:
    """Where things are on the host and how the sandbox is shaped; defaults fit this repo's venv."""

    python: str = sys.executable  # the venv interpreter, bound at the same path inside
    ro_paths: tuple[str, ...] = (sys.prefix, sys.base_prefix)  # venv + its base interpreter tree
    exercises: str = str(REPO_ROOT / "exercises")  # the course runtime, importable as exercises.lab
    pythonpath: str = str(REPO_ROOT)
    users: tuple[str, ...] = field(default_factory=lambda: installed_sandbox_users())
    runtime_root: str = "/run/titangrade"  # host dir for connection files + ipc sockets; never under /tmp,
    # which inside the sandbox is the scratch tmpfs
    startup_timeout_s: float = 60.0
    output_hard_cap_mb: int = 256  # run-wide traffic backstop: over this an interrupt, over twice this a kill
    tmpfs_inodes: int = 16384  # files + dirs allowed in each writable tmpfs (/scratch, /tmp, /dev/shm)
    wall_grace_s: float = 60.0  # backstop kill at run_timeout_s + this (the engine times out first)
    bwrap: str = "bwrap"
    cgroups: str = "auto"  # whole-run memory/pids/CPU caps (cgroups.py): auto | require | off
    cpus_per_run: float = 0.0  # CPU quota of one run in cores; 0 = none, runs share the CPU equally
    cpu_weight: int = 10  # a run's CPU weight, cgroup v2 units (100 = a plain process's): cgroups.DEFAULT_WEIGHT
    always_hidden: tuple[str, ...] = ("debugpy",)  # hidden from every kernel, whatever the exercise: ipykernel
    # imports its debugger (pydevd) at start when it can, a quarter of a kernel start's CPU, and grading never
    # debugs; without it ipykernel starts without the debugger
    seccomp: str = "auto"  # the kernel's system-call filter (seccomp.py): auto | require | off, as for cgroups
    kernel_start: str = field(default_factory=lambda: os.environ.get("TITANGRADE_SANDBOX_KERNEL_START", "exec"))
    # exec: every kernel a fresh `python _kernel_boot.py`; fork: forked from a pre-imported parent into the
    # same fresh sandbox (forkserver.py), falling back to exec whenever that cannot start a kernel


def rlimits(limits: Limits, *, accelerator: bool) -> dict[str, tuple[int, int]]:
    """The rlimits every sandbox process inherits. CUDA/CANN reserve huge address ranges, so an
    accelerator job gets no RLIMIT_AS (device memory bounds it instead; documented)."""
    inf = -1  # resource.RLIM_INFINITY
    return {
        "RLIMIT_AS": (inf, inf) if accelerator else (limits.memory_mb * MiB,) * 2,
        "RLIMIT_CPU": (limits.cpu_time_s, limits.cpu_time_s + 5),
        "RLIMIT_NPROC": (limits.max_processes,) * 2,
        "RLIMIT_FSIZE": (limits.max_file_mb * MiB,) * 2,
        "RLIMIT_CORE": (0, 0),
        "RLIMIT_NOFILE": (8192, 8192),
    }


def _parents(path: str, made: set[str]) -> list[str]:
    """`--dir` args for the ancestors of `path` not made yet: bwrap would create them mode 0700, which
    the sandbox uid could not traverse."""
    args = []
    for parent in reversed(Path(path).parents):
        if str(parent) not in made:
            made.add(str(parent))
            args += ["--perms", "0755", "--dir", str(parent)]
    return args


def kernel_env(config: BwrapConfig, request: KernelRequest) -> dict[str, str]:
    """The kernel's whole environment: an allow-list of the host's, our settings, the devices', the request's."""
    env = {k: os.environ[k] for k in ENV_ALLOW if k in os.environ}
    env.update(
        PATH=f"{Path(config.python).parent}:/usr/local/bin:/usr/bin:/bin",
        HOME=WORKDIR,
        USER="learner",
        LOGNAME="learner",
        TMPDIR=TMPDIR,
        PYTHONPATH=config.pythonpath,
        PYTHONHASHSEED="0",
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
        MPLBACKEND="Agg",
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(device_env(request.devices))
    env.update(request.env)
    return env


def _etc_files(runtime: Path, user: pwd.struct_passwd) -> list[str]:
    etc = runtime / "etc"
    etc.mkdir()
    args = ["--perms", "0755", "--dir", "/etc"]  # else bwrap makes it 0700 and the uid cannot look in
    (etc / "passwd").write_text(
        f"root:x:0:0::/nonexistent:/usr/sbin/nologin\nlearner:x:{user.pw_uid}:{user.pw_gid}::{WORKDIR}:/bin/sh\n"
    )
    (etc / "group").write_text(f"root:x:0:\nlearner:x:{user.pw_gid}:\n")
    (etc / "hosts").write_text("127.0.0.1 localhost titangrade\n::1 localhost ip6-localhost\n")
    (etc / "hostname").write_text("titangrade\n")
    for name in ("passwd", "group", "hosts", "hostname"):
        os.chmod(etc / name, 0o644)
        args += ["--ro-bind", str(etc / name), f"/etc/{name}"]
    made = {"/", "/etc"}
    for name in ETC_ALLOW:
        if os.path.exists(f"/etc/{name}"):
            args += [*_parents(f"/etc/{name}", made), "--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return args


def bwrap_argv(
    config: BwrapConfig,
    request: KernelRequest,
    user: pwd.struct_passwd,
    runtime: Path,
    *,
    seccomp_fd: int | None = None,
    hold: bool = False,
) -> list[str]:
    """The full command line up to (not including) the kernel's own argv. `seccomp_fd`: an inherited
    descriptor holding the system-call filter (seccomp.py), which bwrap installs before it execs the launcher.
    `hold`: the launcher waits for a forked kernel (forkserver.py) instead of exec'ing one."""
    cfg, lim = config, request.limits
    scratch = str(lim.scratch_mb * MiB)
    args = [
        cfg.bwrap,
        *ISOLATION,
        *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
        "--hostname",
        "titangrade",
        "--cap-drop",
        "ALL",
        "--cap-add",
        "CAP_SETUID",
        "--cap-add",
        "CAP_SETGID",
        "--cap-add",
        "CAP_CHOWN",
        "--cap-add",
        "CAP_SYS_ADMIN",
        "--cap-add",
        "CAP_SETPCAP",  # the launcher's tmpfs remount only
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for top in ("bin", "lib", "lib64", "lib32", "sbin"):
        host = Path("/", top)
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{top}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{top}"]
    args += _etc_files(runtime, user)
    args += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--perms",
        "1777",
        "--size",
        scratch,
        "--tmpfs",
        "/dev/shm",
        "--perms",
        "0755",
        "--size",
        scratch,
        "--tmpfs",
        SCRATCH,
        "--dir",
        WORKDIR,
        # a real dir, not a symlink into /scratch: the repo or venv may live under the host's /tmp
        "--perms",
        "1777",
        "--size",
        scratch,
        "--tmpfs",
        TMPDIR,
    ]
    made: set[str] = {"/", "/etc", "/usr", "/dev", "/proc", SCRATCH, TMPDIR}
    accelerator = request.devices.kind != "cpu"
    if accelerator:  # drivers and tools read sysfs for the device tree (real code, not run here)
        args += ["--ro-bind", "/sys", "/sys"]
        made.add("/sys")
    elif os.path.isdir("/sys/devices/system/cpu"):  # CPU topology only, for thread pools
        args += _parents("/sys/devices/system/cpu", made)
        args += ["--ro-bind", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    for path in dict.fromkeys((*cfg.ro_paths, cfg.exercises)):
        args += [*_parents(path, made), "--ro-bind", path, path]
    args += views.bwrap_args(
        (*request.hidden_modules, *cfg.always_hidden),
        (*cfg.ro_paths, cfg.exercises),
        [cfg.pythonpath, *sys.path[1:]],
    )
    args += [*_parents(INNER_LAUNCHER, made), "--ro-bind", str(LAUNCHER), INNER_LAUNCHER]
    args += ["--ro-bind", str(KERNEL_BOOT), INNER_KERNEL_BOOT]
    kernel_dir = str(runtime / KERNEL_DIR)
    args += [*_parents(kernel_dir, made), "--bind", kernel_dir, kernel_dir]
    for node in device_nodes(request.devices):
        args += ["--dev-bind", node, node]
    args += ["--chdir", "/"]
    launch = {
        "uid": user.pw_uid,
        "gid": user.pw_gid,
        "own": [WORKDIR],
        "cwd": WORKDIR,
        "tmpfs": {path: [lim.scratch_mb * MiB, cfg.tmpfs_inodes] for path in WRITABLE},
        "rlimits": rlimits(lim, accelerator=accelerator),
        "env": kernel_env(config, request),
        "hold": hold,
    }
    return [*args, "--", config.python, "-I", "-S", INNER_LAUNCHER, json.dumps(launch), "--"]
