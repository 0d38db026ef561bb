"""Whole-run caps benchmark (a script, not a test): what a control group per run costs and what it holds.

    sudo .venv/bin/python tests/benchmarks/bench_cgroups.py [--n 3]

1. Cost: a bare sandboxed kernel (start, run `pass`, close) with control groups and without, interleaved;
   medians and the ratio.
2. Memory: one cell forks 4 children of 300 MB each with memory_mb = 1024 (each far under RLIMIT_AS);
   peak resident memory of the run's processes (sampled every 20 ms) with and without groups, and
   whether the memory limit was reported.
3. CPU: two concurrent runs spinning 1 and 6 processes (each in its own session) for 8 s: CPU seconds each
   got, with and without groups. And a light notebook graded end to end, idle and while two other runs
   each spin 4 busy processes; median times and the loaded/idle ratio, with and without groups.
4. The service's share (`--share-rounds`, `--only-share`): this process spins for 3 s beside two runs of 4
   busy processes each, with the runs at CPU weight 10 (the default, `SANDBOX_CPU_WEIGHT`) and at 100 (a plain
   process's), interleaved; the fraction of a core it got, and the CPU the hog runs took meanwhile (a row
   whose hogs did not spin says so).
Needs root, bwrap and usable control groups (it says so and exits otherwise).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
FIXTURES = REPO / "tests" / "fixtures" / "notebooks" / "malicious"
MiB = 1 << 20
CHILDREN = ("import subprocess, sys\n"
            "code = 'import time; b = b\"x\" * (300 * 2**20); time.sleep(3)'\n"
            "kids = [subprocess.Popen([sys.executable, '-c', code]) for _ in range(4)]\n"
            "print([k.wait() for k in kids])")
HOG = ("import multiprocessing as mp, os, time\n"
       "def spin(until):\n"
       "    os.setsid()  # each in its own session, so the kernel's autogroups cannot share the CPU fairly\n"
       "    while time.time() < until: pass\n"
       "until = time.time() + {seconds}\n"
       "procs = [mp.Process(target=spin, args=(until,)) for _ in range({count})]\n"
       "[p.start() for p in procs]; [p.join() for p in procs]\n"
       "t = os.times()\n"
       "print('cpu', t.children_user + t.children_system)")


def client(session):
    kc = session.km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return kc


def uid_rss(uid: int) -> int:
    from grading.sandbox.users import uid_processes

    total = 0
    for pid in uid_processes(uid):
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def bench_cost(n: int, sandboxes: dict) -> None:
    from grading.sandbox import KernelRequest

    times: dict[str, list[float]] = {name: [] for name in sandboxes}
    for _ in range(n):
        for name, sandbox in sandboxes.items():
            t0 = time.perf_counter()
            session = sandbox.start(KernelRequest())
            kc = client(session)
            kc.execute_interactive("pass", timeout=60, output_hook=lambda m: None)
            kc.stop_channels()
            session.close()
            times[name].append(time.perf_counter() - t0)
    on, off = statistics.median(times["groups"]), statistics.median(times["no groups"])
    print(f"| bare kernel start+pass+close | {on:.2f} s | {off:.2f} s | {on / off:.2f}x |")


def bench_memory(sandboxes: dict) -> None:
    from grading.exercise import Limits
    from grading.sandbox import KernelRequest

    for name, sandbox in sandboxes.items():
        session = sandbox.start(KernelRequest(limits=Limits(memory_mb=1024, max_processes=64)))
        peak, stop = [0], threading.Event()

        def sample(stop: threading.Event, peak: list[int], uid: int) -> None:
            while not stop.wait(0.02):
                peak[0] = max(peak[0], uid_rss(uid))

        sampler = threading.Thread(target=sample, args=(stop, peak, session.user.pw_uid), daemon=True)
        sampler.start()
        kc = client(session)
        out: list[str] = []
        kc.execute_interactive(CHILDREN, timeout=120,
                               output_hook=lambda m, out=out: out.append(m["content"].get("text", "")))
        kc.stop_channels()
        stop.set()
        sampler.join()
        hits = session.close()
        print(f"| 4 children x 300 MB, memory_mb 1024, {name} | peak RSS of the run {peak[0] / MiB:.0f} MB | "
              f"exit codes {''.join(out).strip()} | limits {hits} |")


def bench_cpu(n: int, sandboxes: dict) -> None:
    from grading.exercise import Catalogue, Limits
    from grading.pipeline import grade_notebook
    from grading.sandbox import KernelRequest

    catalogue = Catalogue(FIXTURES / "catalogue" / "exercises", FIXTURES / "catalogue" / "reference")
    light = (FIXTURES / "catalogue" / "exercises" / "ch05" / "sbx_attack" / "sbx_attack.ipynb").read_bytes()
    for name, sandbox in sandboxes.items():
        def grade(sandbox=sandbox) -> float:
            t0 = time.perf_counter()
            grade_notebook(light, catalogue=catalogue, sandbox=sandbox)
            return time.perf_counter() - t0

        grade()
        idle, loaded = [], []
        for _ in range(n):
            idle.append(grade())
            hogs = [sandbox.start(KernelRequest(limits=Limits(max_processes=64, cpu_time_s=300))) for _ in range(2)]
            kcs = [client(h) for h in hogs]
            for kc in kcs:
                kc.execute(HOG.format(seconds=15, count=4))
            time.sleep(1.0)
            loaded.append(grade())
            loaded.append(grade())
            for kc in kcs:
                kc.stop_channels()
            for h in hogs:
                h.close()
        i, lo = statistics.median(idle), statistics.median(loaded)
        print(f"| light notebook graded, idle vs two 4-process CPU hogs, {name} | {i:.2f} s | {lo:.2f} s | "
              f"{lo / i:.2f}x |")


def bench_fairness(sandboxes: dict, seconds: float = 8) -> None:
    from grading.exercise import Limits
    from grading.sandbox import KernelRequest

    for name, sandbox in sandboxes.items():
        sessions = [sandbox.start(KernelRequest(limits=Limits(max_processes=64, cpu_time_s=300))) for _ in range(2)]
        kcs = [client(s) for s in sessions]
        outs: list[list[str]] = [[], []]
        threads = [threading.Thread(target=kc.execute_interactive, args=(HOG.format(seconds=seconds, count=c),),
                                    kwargs={"timeout": seconds + 60,
                                            "output_hook": lambda m, o=out: o.append(m["content"].get("text", ""))})
                   for kc, c, out in zip(kcs, (1, 6), outs, strict=True)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        for kc in kcs:
            kc.stop_channels()
        for s in sessions:
            s.close()
        one, six = (float("".join(o).split("cpu")[-1]) for o in outs)
        print(f"| CPU seconds in {seconds:g} s, a run of 1 spinner vs a concurrent run of 6, {name} | {one:.2f} | "
              f"{six:.2f} | {one / six:.2f} |")


def own_share_beside_hogs(sandbox, seconds: float = 3.0) -> tuple[float, float]:
    """(fraction of a core this process got spinning for `seconds`, CPU seconds the two hog runs took)."""
    from grading.exercise import Limits
    from grading.sandbox import KernelRequest

    sessions = [sandbox.start(KernelRequest(limits=Limits(max_processes=64, cpu_time_s=300))) for _ in range(2)]
    kcs = [client(s) for s in sessions]
    outs: list[list[str]] = [[], []]
    threads = [threading.Thread(target=kc.execute_interactive, args=(HOG.format(seconds=seconds + 2, count=4),),
                                kwargs={"timeout": seconds + 60,
                                        "output_hook": lambda m, o=out: o.append(m["content"].get("text", ""))})
               for kc, out in zip(kcs, outs, strict=True)]
    try:
        [t.start() for t in threads]
        time.sleep(1.0)  # the hogs are spinning
        t0, c0 = time.perf_counter(), time.thread_time()
        while time.perf_counter() - t0 < seconds:
            pass
        share = (time.thread_time() - c0) / (time.perf_counter() - t0)
        [t.join() for t in threads]
    finally:
        for kc in kcs:
            kc.stop_channels()
        for s in sessions:
            s.close()
    return share, sum(float("".join(o).split("cpu")[-1] or 0) for o in outs)


def bench_share(rounds: int) -> None:
    from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

    weights = {10: BwrapSandbox(BwrapConfig(cgroups="require", cpu_weight=10)),
               100: BwrapSandbox(BwrapConfig(cgroups="require", cpu_weight=100))}
    got: dict[int, list[tuple[float, float]]] = {w: [] for w in weights}
    for _ in range(rounds):
        for w, sandbox in weights.items():
            got[w].append(own_share_beside_hogs(sandbox))
    low, equal = (statistics.median(s for s, _ in got[w]) for w in (10, 100))
    hogs = {w: [round(h, 1) for _, h in got[w]] for w in weights}
    print(f"| this process's share of a core beside two runs of 4 spinners, runs at weight 10 vs 100, {rounds} rounds "
          f"(hog runs' CPU s per round: {hogs[10]} / {hogs[100]}) | {low:.2f} | {equal:.2f} | {low / equal:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--only-cpu", action="store_true", help="skip the cost and memory parts")
    parser.add_argument("--only-share", action="store_true", help="only the service's share beside grading runs")
    parser.add_argument("--share-rounds", type=int, default=3)
    args = parser.parse_args()
    from grading.sandbox import cgroups, probe

    if not probe().usable or not cgroups.probe().usable:
        sys.exit(f"cannot run: bwrap: {probe().reason}; cgroups: {cgroups.probe().reason}")
    from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

    if args.only_share:
        print("| what | weight 10 | weight 100 | ratio |\n|---|---|---|---|")
        bench_share(args.share_rounds)
        return
    sandboxes = {"groups": BwrapSandbox(BwrapConfig(cgroups="require")),
                 "no groups": BwrapSandbox(BwrapConfig(cgroups="off"))}
    print("| what | with groups | without | ratio |\n|---|---|---|---|")
    if not args.only_cpu:
        bench_cost(args.n, sandboxes)
        bench_memory(sandboxes)
    bench_fairness(sandboxes)
    bench_cpu(args.n, sandboxes)
    bench_share(args.share_rounds)


if __name__ == "__main__":
    main()
