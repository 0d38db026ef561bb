"""Engine benchmark (a script, not a test): what grading adds over plain nbclient, side by side.

    .venv/bin/python tests/benchmarks/bench_engine.py [--n 5] [--sandbox unsafe-local|auto]

1. Latency: the toy solution (tests/fixtures/catalogue, 9 cells, every check kind) executed by plain
   `nbclient.NotebookClient(nb).execute()` vs `grade_notebook` (seed + per-cell driving + extraction +
   checks). Reported as medians and the ratio engine/plain.
2. Memory: a cell printing 40 MB. Plain nbclient keeps all of it; the engine keeps max_output_kb.
   Reported as the grader process's RSS growth (MB) for each, and the ratio.
3. Recovery: the kernel-death fixture, engine wall time vs the solution's (the price of one restart).
"""
from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
TOY = REPO / "tests" / "fixtures" / "catalogue"
SOLUTION = TOY / "reference" / "ch05.toy" / "solution.ipynb"
DEATH = REPO / "tests" / "fixtures" / "notebooks" / "failure" / "kernel_death.ipynb"
PRINT_40MB = 'for _ in range(40):\n    print("x" * (1 << 20))'


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def plain(nb_bytes: bytes) -> float:
    nb = nbformat.reads(nb_bytes.decode(), as_version=4)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:  # the notebook writes files; keep them out of the repo
        NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": scratch}}).execute()
    return time.perf_counter() - t0


def engine(nb_bytes: bytes, catalogue, sandbox) -> float:
    from grading.pipeline import grade_notebook

    t0 = time.perf_counter()
    result = grade_notebook(nb_bytes, catalogue=catalogue, sandbox=sandbox)
    assert result.status.value != "not_gradable", result.message
    return time.perf_counter() - t0


def with_cell(source: str) -> bytes:
    nb = nbformat.read(SOLUTION, as_version=4)
    nb.cells.insert(2, nbformat.v4.new_code_cell(source))
    return nbformat.writes(nb).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--sandbox", default="unsafe-local")
    args = parser.parse_args()
    from grading.exercise import Catalogue
    from grading.sandbox import make_sandbox

    catalogue = Catalogue(TOY / "exercises", TOY / "reference")
    sandbox = make_sandbox(args.sandbox)
    solution = SOLUTION.read_bytes()
    plain(solution), engine(solution, catalogue, sandbox)  # warm imports and page cache
    p = [plain(solution) for _ in range(args.n)]
    e = [engine(solution, catalogue, sandbox) for _ in range(args.n)]
    mp, me = statistics.median(p), statistics.median(e)
    print(f"latency  plain nbclient {mp:.2f} s | grade_notebook[{sandbox.mode}] {me:.2f} s | ratio {me / mp:.2f}x "
          f"(n={args.n}; min {min(p):.2f} / {min(e):.2f})")

    big = with_cell(PRINT_40MB)
    gc.collect()
    before = rss_mb()  # engine first: RSS rarely shrinks, so whatever runs second may reuse freed pages
    engine(big, catalogue, sandbox)
    engine_growth = rss_mb() - before
    gc.collect()
    before = rss_mb()
    nb = nbformat.reads(big.decode(), as_version=4)
    with tempfile.TemporaryDirectory() as scratch:
        NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": scratch}}).execute()
    plain_growth = rss_mb() - before
    print(f"memory   40 MB printed: plain nbclient +{plain_growth:.0f} MB RSS | engine +{engine_growth:.0f} MB RSS "
          f"| ratio {engine_growth / max(plain_growth, 1e-9):.2f}x")

    death = DEATH.read_bytes()
    d = [engine(death, catalogue, sandbox) for _ in range(max(1, args.n // 2))]
    print(f"recovery kernel death + restart {statistics.median(d):.2f} s vs clean {me:.2f} s "
          f"| ratio {statistics.median(d) / me:.2f}x")


if __name__ == "__main__":
    main()
