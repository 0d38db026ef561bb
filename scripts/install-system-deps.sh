#!/usr/bin/env bash
# System pieces the execution sandbox needs (docs/sandbox.md): bubblewrap, util-linux's setpriv/prlimit,
# and a small range of unprivileged sandbox users (one per concurrent kernel, so RLIMIT_NPROC is per run),
# and Debian's chromium for the browser tests of the web pages (Playwright drives it; no browser download).
# Idempotent and quiet; run as root. TITANGRADE_SANDBOX_USERS overrides how many users (default 32: every
# titangrade process on the host shares them, one per grading slot, pre-warmed kernel and `grade` run;
# docs/sandbox.md "How many sandbox users a host needs").
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
    echo "install-system-deps.sh: must run as root (it installs bubblewrap and adds users tgsbx0..N)" >&2
    exit 1
fi
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v useradd >/dev/null 2>&1 || need+=(passwd)
[ -x /usr/bin/chromium ] || need+=(chromium)
# libseccomp's Python bindings build the kernels' system-call filter (grading/sandbox/seccomp.py loads
# Debian's extension from the venv: the same CPython 3.11 ABI); prod refuses to start without them
compgen -G "/usr/lib/python3/dist-packages/seccomp.cpython-*.so" >/dev/null || need+=(python3-seccomp)
if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
n=${TITANGRADE_SANDBOX_USERS:-32}
getent group tgsbx >/dev/null || groupadd --system tgsbx
for i in $(seq 0 $((n - 1))); do
    getent passwd "tgsbx$i" >/dev/null || \
        useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
            --gid tgsbx "tgsbx$i"
done
