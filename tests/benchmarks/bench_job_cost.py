"""Cost of one light grading, engine only (a script, not a test): CPU seconds (every process, kernels included)
and wall seconds per job, each light course exercise's solution graded in turn with a cold kernel.

    sudo .venv/bin/python tests/benchmarks/bench_job_cost.py [--code CHECKOUT ...] [--rounds 2] [--sandbox bwrap]
        [--by-process]

Each (checkout, round) runs in a fresh process with PYTHONPATH at that checkout, interleaved A B B A, so a
"before" checkout (e.g. main in a `git worktree` of its own) and this one share the machine's state. CPU comes
from a cpuacct control group of the process (cgroup v1, root): rusage would miss the sandboxed kernels, which
bwrap's pid namespace never reaps into ours. No database, no worker: what bench_throughput.py adds on top is
the queue and the pool hand-off.

--by-process says where each job's CPU goes: the grader process (its own rusage), and every process that
exited during the measurement, grouped by command name and by whether it ran as a sandbox user (the
kernels), from BSD process accounting (acct(2): root with CAP_SYS_PACCT; a process is recorded when it
exits, in every pid namespace above its own, so sandboxed kernels are counted). It also counts the
execute_requests the engine sends per job (the kernel's CPU for one trivial cell is a few ms).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import ctypes
import os
import pwd
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


NUL = bytes(1)


class ProcessAccounting:
    """BSD process accounting (acct(2)) into a temporary file while a block runs; `by_command()` then sums
    the CPU of the processes that exited meanwhile. Records are `struct acct_v3` (linux/acct.h, 64 bytes)."""

    RECORD = struct.Struct("<BBHIIIIIIf8H16s")
    HZ = 100  # AHZ: comp_t times are in 1/100 s

    def __enter__(self):
        self.path = tempfile.mktemp(prefix="tg-pacct-")
        open(self.path, "wb").close()
        self.libc = ctypes.CDLL(None, use_errno=True)
        if self.libc.acct(self.path.encode()) != 0:
            raise SystemExit(f"acct(2) refused ({os.strerror(ctypes.get_errno())}): --by-process needs root")
        return self

    def __exit__(self, *exc):
        self.libc.acct(None)

    @staticmethod
    def _comp(value: int) -> int:  # 13-bit mantissa, 3-bit base-8 exponent
        return (value & 0x1FFF) << (3 * (value >> 13))

    def by_command(self, sandbox_uids: set[int]) -> dict[str, tuple[int, float]]:
        """{'comm (sandbox user)' or 'comm (uid N)': (processes, CPU seconds)}."""
        data = Path(self.path).read_bytes()
        os.unlink(self.path)
        out: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
        for _f, _v, _t, _e, uid, _g, _p, _pp, _b, _et, ut, st, *_rest, comm in self.RECORD.iter_unpack(
            data[: len(data) // self.RECORD.size * self.RECORD.size]
        ):
            who = "sandbox user" if uid in sandbox_uids else f"uid {uid}"
            name = comm.split(NUL)[0].decode(errors="replace")
            key = f"{name} ({who})"
            out[key][0] += 1
            out[key][1] += (self._comp(ut) + self._comp(st)) / self.HZ
        return {k: (int(n), cpu) for k, (n, cpu) in out.items()}


def child(sandbox: str, by_process: bool = False) -> None:
    sys.path.insert(0, str(Path.cwd()))
    sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
    from bench_throughput import CpuMeter, light_exercises

    from grading.exercise import Catalogue
    from grading.pipeline import grade_notebook
    from grading.sandbox import make_sandbox

    meter = CpuMeter()
    catalogue = Catalogue()
    exercises = light_exercises(catalogue)
    box = make_sandbox(sandbox)
    first = exercises[0]
    grade_notebook(first.solution_path.read_bytes(), exercise_id=first.id, catalogue=catalogue, sandbox=box)
    executes = count_executes() if by_process else None
    accounting = ProcessAccounting() if by_process else contextlib.nullcontext()
    self0 = resource.getrusage(resource.RUSAGE_SELF)
    with accounting:
        cpu0, t0, bad = meter.read_s(), time.perf_counter(), []
        for ex in exercises:
            r = grade_notebook(ex.solution_path.read_bytes(), exercise_id=ex.id, catalogue=catalogue, sandbox=box)
            if r.score != r.max_score:
                bad.append(f"{ex.id}: {r.score} {r.message[:80]}")
    n = len(exercises)
    if by_process:
        from grading.sandbox.users import installed_sandbox_users

        self1 = resource.getrusage(resource.RUSAGE_SELF)
        grader = (self1.ru_utime + self1.ru_stime - self0.ru_utime - self0.ru_stime) / n
        uids = {pwd.getpwnam(name).pw_uid for name in installed_sandbox_users()}
        print(f"  grader process: {grader:.3f} CPU-s/job; {executes[0] / n:.1f} execute_requests/job")
        for key, (procs, cpu) in sorted(accounting.by_command(uids).items(), key=lambda kv: -kv[1][1]):
            print(f"  {key:32} {procs / n:5.1f} processes/job  {cpu / n:.3f} CPU-s/job")
    print(
        f"RESULT {(meter.read_s() - cpu0) / n:.3f} {(time.perf_counter() - t0) / n:.3f} {os.getloadavg()[0]:.1f} {bad}"
    )
    meter.close()


def count_executes() -> list[int]:
    """Counts KernelIO.execute calls (one execute_request each) from here on."""
    from grading.steps import kernel_io

    calls = [0]
    plain = kernel_io.KernelIO.execute

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return plain(self, *args, **kwargs)

    kernel_io.KernelIO.execute = counted  # type: ignore[method-assign]
    return calls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", nargs="*", default=[], help="other checkouts to measure side by side (before)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sandbox", default="bwrap", choices=("bwrap", "unsafe-local"))
    ap.add_argument("--by-process", action="store_true", help="where the CPU goes (acct(2); root)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.sandbox, args.by_process)
        return 0
    from benchkit import in_round_order  # this script's own directory

    print(f"uptime: {os.popen('uptime').read().strip()}; {os.cpu_count()} CPUs; sandbox {args.sandbox}")
    for rnd in range(args.rounds):
        for code in in_round_order([*(Path(c).resolve() for c in args.code), REPO], rnd):
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--sandbox", args.sandbox,
                   *(["--by-process"] if args.by_process else [])]  # fmt: skip
            proc = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(code)), cwd=str(code),
                                  capture_output=True, text=True, timeout=1800)  # fmt: skip
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                raise SystemExit(f"{code} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
            cpu, wall, load, bad = line.split(" ", 4)[1:]
            label = "this" if code == REPO else code.name
            print(f"{label:>12}: CPU {cpu} s/job, wall {wall} s/job, load {load}, not full marks: {bad}", flush=True)
            for extra in (x for x in proc.stdout.splitlines() if x.startswith("  ")):
                print(f"{'':>12}  {extra.strip()}", flush=True)
    print(f"uptime: {os.popen('uptime').read().strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
