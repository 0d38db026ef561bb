"""Sandbox benchmark (a script, not a test): what isolation costs and what pre-warming saves, side by side.

    sudo .venv/bin/python tests/benchmarks/bench_sandbox.py [--n 5]

1. Overhead per run: the same light notebook graded end to end (grade_notebook) in the bwrap sandbox and
   in unsafe-local mode, interleaved; medians and the ratio bwrap/unsafe-local. Also kernel start+close
   alone.
2. Pre-warm gain: time from `start()` to the first cell's reply (`import numpy` for light, `import torch`
   for torch), cold bwrap start vs a kernel popped from PrewarmedSandbox; medians and the ratio.
Needs root and scripts/install-system-deps.sh (it says so and exits otherwise).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
FIXTURES = REPO / "tests" / "fixtures" / "notebooks" / "malicious"
LIGHT_NB = FIXTURES / "catalogue" / "exercises" / "ch05" / "sbx_attack" / "sbx_attack.ipynb"
FIRST_CELL = {"light": "import numpy", "torch": "import torch"}


def first_reply(session, code: str) -> None:
    kc = session.km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        reply = kc.execute_interactive(code, timeout=120, output_hook=lambda m: None)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def bench_overhead(n: int, bwrap, local) -> None:
    from grading.exercise import Catalogue
    from grading.pipeline import grade_notebook
    from grading.sandbox import KernelRequest

    catalogue = Catalogue(FIXTURES / "catalogue" / "exercises", FIXTURES / "catalogue" / "reference")
    nb = LIGHT_NB.read_bytes()
    times: dict[str, list[float]] = {"bwrap": [], "unsafe-local": []}
    starts: dict[str, list[float]] = {"bwrap": [], "unsafe-local": []}
    for _ in range(n):
        for name, sandbox in (("bwrap", bwrap), ("unsafe-local", local)):
            t0 = time.perf_counter()
            result = grade_notebook(nb, catalogue=catalogue, sandbox=sandbox)
            times[name].append(time.perf_counter() - t0)
            assert result.sandbox == name, result.sandbox
            t0 = time.perf_counter()
            session = sandbox.start(KernelRequest())
            first_reply(session, "pass")
            session.close()
            starts[name].append(time.perf_counter() - t0)
    b, u = median(times["bwrap"]), median(times["unsafe-local"])
    print(f"grade light notebook   bwrap {b:6.2f} s   unsafe-local {u:6.2f} s   ratio {b / u:5.2f}x  (n={n})")
    b, u = median(starts["bwrap"]), median(starts["unsafe-local"])
    print(f"start, 'pass', close   bwrap {b:6.2f} s   unsafe-local {u:6.2f} s   ratio {b / u:5.2f}x  (n={n})")


def bench_prewarm(n: int, bwrap, family: str) -> None:
    from grading.sandbox import KernelRequest
    from grading.sandbox.pool import PrewarmedSandbox

    request = KernelRequest(kernel_family=family)
    pool = PrewarmedSandbox(bwrap, sizes={family: 1})
    cold, warm = [], []
    try:
        pool.prepare(request)
        for _ in range(n):
            t0 = time.perf_counter()
            session = bwrap.start(request)
            first_reply(session, FIRST_CELL[family])
            cold.append(time.perf_counter() - t0)
            session.close()
            if not pool.wait_ready(request, 1, timeout_s=180):
                raise SystemExit("the pre-warm pool did not fill in 180 s")
            t0 = time.perf_counter()
            session = pool.start(request)
            first_reply(session, FIRST_CELL[family])
            warm.append(time.perf_counter() - t0)
            session.close()
    finally:
        pool.close()
    c, w = median(cold), median(warm)
    print(f"first reply ({family:5s})    cold {c:6.2f} s   warm {w:6.2f} s   speed-up {c / w:5.1f}x  (n={n})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5)
    args = parser.parse_args()
    from grading.sandbox import make_sandbox, probe

    found = probe()
    if not found.usable:
        print(f"bench_sandbox: cannot run: {found.reason}")
        return 2
    bwrap, local = make_sandbox("bwrap"), make_sandbox("unsafe-local")
    bench_overhead(args.n, bwrap, local)
    bench_prewarm(args.n, bwrap, "light")
    bench_prewarm(args.n, bwrap, "torch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
