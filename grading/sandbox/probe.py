"""Can this host run the bwrap sandbox? Checked once at start-up by the service and by the tests."""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass

FIX = "run `sudo scripts/install-system-deps.sh` (bubblewrap + tgsbxN users) and start the worker as root"


@dataclass(frozen=True)
class Probe:
    usable: bool
    reason: str  # why not (names the fix), or what was verified

    def __bool__(self) -> bool:
        return self.usable


@functools.cache
def probe(bwrap: str = "bwrap", user: str = "tgsbx0") -> Probe:
    """Whether `make_sandbox("bwrap")` can work here, and if not, why (with the fix)."""
    path = shutil.which(bwrap)
    if path is None:
        return Probe(False, f"bubblewrap ({bwrap}) is not installed; {FIX}")
    if os.geteuid() != 0:
        return Probe(False, f"the grader is not root, so it cannot run each kernel as a separate tgsbxN user; {FIX}")
    try:
        pwd.getpwnam(user)
    except KeyError:
        return Probe(False, f"sandbox user {user} does not exist; {FIX}")
    from grading.sandbox.bwrap_command import ISOLATION  # the flags every sandboxed kernel gets

    argv = [
        path,
        *ISOLATION,
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(1 << 20),
        "--tmpfs",
        "/scratch",
        "--",
        "/usr/bin/true",
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return Probe(False, f"bwrap could not run: {exc}; {FIX}")
    if done.returncode != 0:
        return Probe(
            False,
            f"bwrap cannot create namespaces here ({done.stderr.strip()[:300]}); a container "
            "must allow mount/pid/net namespaces (e.g. --privileged or a seccomp profile "
            "permitting unshare) or use TITANGRADE_SANDBOX=unsafe-local for development",
        )
    return Probe(True, f"bwrap {path} runs as root with pid/net/ipc/uts namespaces; user {user} exists")
