"""Kernel start in the bwrap sandbox, exec'd vs forked from a pre-imported parent (a script, not a test):
the CPU of one start as the run's control group counts it (every process of the run: bwrap, launcher,
kernel, and for a forked kernel the monitor), the grader's own CPU for it, and the wall time until the
kernel is ready, each kernel started, sent 8 trivial cells and closed; the two ways interleaved.

    sudo .venv/bin/python tests/benchmarks/bench_fork_server.py [--rounds 10]

The fork server's parent imports ipykernel once (its own CPU is reported apart, paid once per parent).
Needs root, bwrap and cgroups (cpuacct); the machine is shared, so read the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "grading" / "sandbox"))


def one(sandbox) -> dict:
    from sandbox_helpers import Runner

    from grading.sandbox import KernelRequest

    cpu0, t0 = time.process_time(), time.perf_counter()
    session = sandbox.start(KernelRequest())
    ready_s, grader_s = time.perf_counter() - t0, time.process_time() - cpu0
    try:
        run = Runner(session)
        for i in range(8):
            assert run(f"x = {i}")[0] == "ok"
        run.close()
        sample = session.group.cpu_sample()
        run_cpu = sample.used_s if sample else float("nan")
    finally:
        session.close()
    return {"ready_s": ready_s, "grader_s": grader_s, "run_cpu_s": run_cpu}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    from grading.sandbox.bwrap import BwrapSandbox
    from grading.sandbox.bwrap_command import BwrapConfig
    from grading.sandbox.forkserver import ForkingSandbox

    sandboxes = {"exec": BwrapSandbox(BwrapConfig(kernel_start="exec")), "fork": ForkingSandbox(BwrapConfig())}
    print(f"uptime: {os.popen('uptime').read().strip()}; {os.cpu_count()} CPUs; rounds={args.rounds}")
    one(sandboxes["fork"])  # the parent's start, once
    forking = sandboxes["fork"]
    (zygote,) = forking._zygotes.values()  # type: ignore[attr-defined]
    parent_cpu = sum(float(x) for x in Path(f"/proc/{zygote.pid}/stat").read_text().split()[13:15]) / os.sysconf(
        "SC_CLK_TCK"
    )
    rows: dict[str, list[dict]] = {"exec": [], "fork": []}
    for rnd in range(args.rounds):
        for kind in ("exec", "fork") if rnd % 2 == 0 else ("fork", "exec"):
            rows[kind].append(one(sandboxes[kind]))
    print(f"forked {forking.forked}, fell back {forking.fallbacks}; the parent's own CPU (once): {parent_cpu:.3f} s")
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in rows.items()}
    for metric in ("run_cpu_s", "grader_s", "ready_s"):
        e, f = med["exec"][metric], med["fork"][metric]
        print(f"  {metric:>10}: exec {e:.3f}  fork {f:.3f}  fork/exec {f / e:.2f}x (medians)")
    print(f"uptime: {os.popen('uptime').read().strip()}")
    forking.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
