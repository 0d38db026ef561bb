"""Runs inside the sandbox as root for a moment: own the scratch dirs, set rlimits, drop to the sandbox
uid for good, then exec the kernel (or, with "hold", wait as that uid for a forked kernel to join).
Stdlib only (it starts with `python -I -S`); bound read-only.

usage: python -I -S _launcher.py '<json config>' -- <kernel argv...>
"""

import ctypes
import json
import os
import resource
import signal
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
CAP_SETPCAP, CAP_SYS_ADMIN = 8, 21
MS_NOSUID, MS_NODEV, MS_REMOUNT = 2, 4, 32


def limit_tmpfs(libc, tmpfs: dict) -> None:
    """Remount each writable tmpfs with its byte and inode limits (bwrap sets only the size), then give
    up CAP_SYS_ADMIN (and CAP_SETPCAP, which dropping needs) for good: they are granted only for this."""
    for path, (size, inodes) in tmpfs.items():
        opts = f"size={int(size)},nr_inodes={int(inodes)}".encode()
        if libc.mount(None, path.encode(), None, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) != 0:
            raise SystemExit(f"titangrade sandbox: could not limit {path} (errno {ctypes.get_errno()})")
    for cap in (CAP_SYS_ADMIN, CAP_SETPCAP):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise SystemExit(f"titangrade sandbox: could not drop capability {cap}")


def main() -> None:
    sep = sys.argv.index("--")
    cfg = json.loads(sys.argv[1])
    argv = sys.argv[sep + 1 :]
    uid, gid = int(cfg["uid"]), int(cfg["gid"])
    libc = ctypes.CDLL(None, use_errno=True)
    limit_tmpfs(libc, cfg.get("tmpfs", {}))
    for path in cfg["own"]:
        os.chmod(path, 0o700)  # before chown: once it is not ours, changing its mode needs CAP_FOWNER
        os.chown(path, uid, gid)
    for name, (soft, hard) in cfg["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (soft, hard))
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:  # never run learner code as root by accident
        raise SystemExit("titangrade sandbox: could not drop privileges")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SystemExit("titangrade sandbox: prctl(NO_NEW_PRIVS) failed")
    os.chdir(cfg["cwd"])
    if cfg.get("hold"):  # the fork server's kernel joins this sandbox (_fork_zygote.py); this only keeps it up
        while True:
            signal.pause()
    os.execve(argv[0], argv, cfg["env"])


if __name__ == "__main__":
    main()
