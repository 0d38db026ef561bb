"""What a forked kernel would save (a script, not a test, and not a product path): the CPU of a kernel
that a parent forks after importing ipykernel, against a fresh `python _kernel_boot.py`, each until its
kernel_info reply plus 8 trivial cells.

    .venv/bin/python tests/benchmarks/bench_kernel_fork.py [--rounds 6]

Both run OUTSIDE the sandbox, as this user, with debugpy hidden (as the sandbox hides it) and this tree's
boot patches. This measures the design option docs/sandbox.md names as the next lever for light
gradings; titangrade does not start kernels this way. A forked child's CPU counts only what it does after
the fork (its copy-on-write faults included), so the parent's imports are the saving.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchkit import ipc_connection_file, process_cpu_s

REPO = Path(__file__).resolve().parents[2]
BOOT = REPO / "grading" / "sandbox" / "_kernel_boot.py"
HIDE_DEBUGPY = (
    "import sys\n"
    "class _HideDebugpy:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name.split('.')[0] == 'debugpy':\n"
    "            raise ModuleNotFoundError(name)\n"
    "sys.meta_path.insert(0, _HideDebugpy())\n"
)


def connection_file() -> str:
    return str(ipc_connection_file(Path(tempfile.mkdtemp(prefix="tg-fork-"))))


def drive(path: str) -> None:
    from jupyter_client import BlockingKernelClient

    client = BlockingKernelClient()
    client.load_connection_file(path)
    client.start_channels()
    try:
        client.wait_for_ready(60)
        for i in range(8):
            client.execute_interactive(f"x = {i}", timeout=30, output_hook=lambda m: None)
    finally:
        client.stop_channels()


def fresh_kernel() -> float:
    path = connection_file()
    boot = Path(path).with_name("boot.py")
    boot.write_text(HIDE_DEBUGPY + BOOT.read_text())
    kernel = subprocess.Popen([sys.executable, str(boot), "-f", path], env=dict(os.environ, PYTHONPATH=str(REPO)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        drive(path)
        return process_cpu_s(kernel.pid)
    finally:
        kernel.kill()
        kernel.wait()


def zygote(requests: int, replies: int) -> None:
    """The forking parent: imports once, then forks one kernel per connection file it is sent."""
    exec(compile(HIDE_DEBUGPY, "hide", "exec"), {})
    sys.path.insert(0, str(BOOT.parent))
    import _kernel_boot

    _kernel_boot.lazy_jupyter_client()
    _kernel_boot.quiet_empty_flushes()
    _kernel_boot.crc32_cell_names()
    from ipykernel import kernelapp

    for line in os.fdopen(requests):
        pid = os.fork()
        if pid == 0:
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 1)
            os.dup2(null, 2)
            sys.argv = ["kernel", "-f", line.strip()]
            kernelapp.launch_new_instance()
            os._exit(0)
        os.write(replies, f"{pid}\n".encode())
    os._exit(0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=6)
    args = ap.parse_args()
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    parent = os.fork()
    if parent == 0:
        os.close(req_w)
        os.close(rep_r)
        zygote(req_r, rep_w)
    os.close(req_r)
    os.close(rep_w)
    replies = os.fdopen(rep_r)
    fresh, forked = [], []
    try:
        for rnd in range(args.rounds):
            for kind in ("fresh", "forked") if rnd % 2 == 0 else ("forked", "fresh"):
                if kind == "fresh":
                    fresh.append(fresh_kernel())
                    continue
                path = connection_file()
                os.write(req_w, f"{path}\n".encode())
                pid = int(replies.readline())
                try:
                    drive(path)
                    forked.append(process_cpu_s(pid))
                finally:
                    os.kill(pid, 9)  # the parent's child: reaped when the parent goes
    finally:
        os.kill(parent, 9)
        os.waitpid(parent, 0)
    print(f"kernel CPU until kernel_info + 8 cells, {args.rounds} rounds (median):")
    print(f"  fresh `python _kernel_boot.py`        {statistics.median(fresh):.3f} s  {fresh}")
    print(f"  forked from a pre-imported parent     {statistics.median(forked):.3f} s  {forked}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
