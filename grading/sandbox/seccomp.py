"""The system-call filter of every sandboxed kernel (bwrap's `--seccomp FD`): refuses, with EPERM, the calls
that open kernel attack surface no notebook needs: new namespaces (a user namespace would give learner code
capabilities inside it), mounts, keyrings, BPF, userfaultfd, perf, ptrace, modules, reboot, ...

Built once per process with libseccomp's own Python bindings (Debian's python3-seccomp, loaded from the
distribution's dist-packages when the venv cannot import it) and exported as a classic-BPF program.
docs/sandbox.md, *System-call filter*, lists what is refused and why.
"""

from __future__ import annotations

import errno
import functools
import importlib.machinery
import importlib.util
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)

# where Debian's python3-seccomp puts the extension (one file per Python ABI); tried only when the venv
# cannot import `seccomp` itself
DIST_PACKAGES = ("/usr/lib/python3/dist-packages",)
FIX = "install libseccomp's Python bindings with scripts/install-system-deps.sh (Debian: python3-seccomp)"

CLONE_NEWTIME = 0x00000080  # unshare/clone3 only: in clone()'s flags this byte is the exit signal
CLONE_NEW = (  # every namespace flag: clone() or unshare() with any of them is refused
    0x00020000,  # CLONE_NEWNS (mounts)
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
# personality() bits that weaken the address space (ADDR_NO_RANDOMIZE turns ASLR off for what it execs)
PERSONALITY_REFUSED = (
    0x0040000,  # ADDR_NO_RANDOMIZE
    0x0080000,  # FDPIC_FUNCPTRS
    0x0100000,  # MMAP_PAGE_ZERO
    0x0200000,  # ADDR_COMPAT_LAYOUT
    0x0400000,  # READ_IMPLIES_EXEC
    0x0800000,  # ADDR_LIMIT_32BIT
    0x8000000,  # ADDR_LIMIT_3GB
)
# the launcher's own tmpfs remount (before it drops CAP_SYS_ADMIN) is the one mount that passes the filter:
# mount(NULL, path, NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts); after the drop the kernel refuses it too
LAUNCHER_REMOUNT_FLAGS = 32 | 2 | 4

REFUSED = (
    # joining namespaces (creating them: clone/unshare below)
    "setns",
    # mounts and the new mount API (mount itself: program(), which leaves the launcher's remount to the kernel)
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    # kernel keyrings
    "keyctl",
    "add_key",
    "request_key",
    # kernel programs and memory tricks used by exploits
    "bpf",
    "userfaultfd",
    "perf_event_open",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # other processes: the kernel never debugs anything
    "ptrace",
    # the machine itself
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "query_module",
    "get_kernel_syms",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "iopl",
    "ioperm",
    "syslog",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "sethostname",
    "setdomainname",
    "lookup_dcookie",
    "nfsservctl",
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "vhangup",
    "name_to_handle_at",
    "open_by_handle_at",
    "fanotify_init",
    "vm86",
    "vm86old",
)


class SeccompUnavailable(RuntimeError):
    """libseccomp's Python bindings cannot be loaded here; the message names the fix."""


@dataclass(frozen=True)
class SeccompProbe:
    usable: bool
    reason: str


def load_bindings() -> ModuleType:
    """libseccomp's bindings: the venv's own `seccomp`, else Debian's extension for this exact Python ABI."""
    try:
        import seccomp  # type: ignore[import-not-found]

        return seccomp
    except ImportError:
        pass
    for folder in DIST_PACKAGES:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder, f"seccomp{suffix}")
            if not path.is_file():
                continue
            spec = importlib.util.spec_from_file_location("seccomp", path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except ImportError as exc:  # built for another ABI, or libseccomp2 missing
                raise SeccompUnavailable(f"libseccomp's bindings at {path} cannot be loaded ({exc}); {FIX}") from exc
            return module
    raise SeccompUnavailable(
        f"libseccomp's Python bindings are missing (no `seccomp` module for this Python, "
        f"{importlib.machinery.EXTENSION_SUFFIXES[0]}, in the venv or {', '.join(DIST_PACKAGES)}); {FIX}"
    )


@functools.cache
def program() -> bytes:
    """The compiled classic-BPF filter, built once per process. Raises SeccompUnavailable."""
    sc = load_bindings()
    refuse = sc.ERRNO(errno.EPERM)  # a clear PermissionError for the learner, never a silent kill
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    f.set_attr(sc.Attr.ACT_BADARCH, refuse)  # 32-bit (int 0x80) and x32 calls, which the rules below miss
    for name in REFUSED:
        _add(sc, f, refuse, name)
    f.add_rule(refuse, "mount", sc.Arg(0, sc.NE, 0))
    f.add_rule(refuse, "mount", sc.Arg(2, sc.NE, 0))
    f.add_rule(refuse, "mount", sc.Arg(3, sc.NE, LAUNCHER_REMOUNT_FLAGS))
    for flag in CLONE_NEW:
        f.add_rule(refuse, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for flag in (*CLONE_NEW, CLONE_NEWTIME):
        f.add_rule(refuse, "unshare", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory, out of a filter's reach: ENOSYS makes glibc fall back to clone()
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for bit in PERSONALITY_REFUSED:
        f.add_rule(refuse, "personality", sc.Arg(0, sc.MASKED_EQ, bit, bit))
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def _add(sc: ModuleType, f: object, action: object, name: str) -> None:
    """Refuse `name` where this architecture has it (vm86 exists on i386 only, say)."""
    try:
        number = sc.resolve_syscall(sc.Arch(), name)
    except ValueError:
        return
    if number >= 0:
        f.add_rule(action, name)  # type: ignore[attr-defined]


def probe() -> SeccompProbe:
    """Whether the filter can be built here (the bindings load and libseccomp compiles it)."""
    try:
        size = len(program())
    except SeccompUnavailable as exc:
        return SeccompProbe(False, str(exc))
    except (OSError, RuntimeError, ValueError) as exc:
        return SeccompProbe(False, f"libseccomp could not build the filter ({exc}); {FIX}")
    return SeccompProbe(True, f"{size // 8} BPF instructions")


def filter_fd() -> int:
    """A fresh descriptor holding the program at offset 0, for bwrap to read (the caller closes it)."""
    fd = os.memfd_create("titangrade-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program())
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


_warned = False


def use_filter(policy: str) -> bool:
    """Whether kernels get the system-call filter: "require" (GraderFault where it cannot be built), "auto"
    (used where it can, else one loud warning: development only, prod requires it), "off"."""
    global _warned
    from grading.errors import GraderFault

    if policy not in ("auto", "require", "off"):
        raise ValueError(f"unknown seccomp policy {policy!r}; use one of: auto, require, off")
    if policy == "off":
        return False
    found = probe()
    if found.usable:
        return True
    if policy == "require":
        raise GraderFault(f"the sandbox's system-call filter cannot be built: {found.reason}", retryable=False)
    if not _warned:
        _warned = True
        log.warning(
            "WARNING: sandboxed kernels run WITHOUT a system-call filter (they can create namespaces, mount, "
            "use bpf and keyrings; development only): %s",
            found.reason,
        )
    return False
