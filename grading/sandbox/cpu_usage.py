"""What CPU a run's control group received, and how long it waited for more (issue 24).

A wall-clock limit alone charges the learner for a busy host: at load 10-17 on 2 cores a correct training
cell ran out of its 300 s. So next to the wall clock the engine reads, from the run's group:

- `used_s`: CPU time of every task the group ever held (v1 `cpuacct.usage`, v2 `cpu.stat usage_usec`),
  exited processes included;
- `throttled_s`: time its quota held it back (v1 `cpu.stat throttled_time`, v2 `throttled_usec`);
- `waits`: per live task, the time it was runnable but not running (`/proc/<tid>/schedstat`, the
  scheduler's run delay). A task that sleeps, blocks or is stopped is not runnable, so a cell that
  only waits by itself shows no wait here: it is told apart from one the host kept off the CPU.

Reading is best effort: a file that cannot be read gives None (the engine then keeps the wall clock
alone, as before), never an error.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class CpuFiles:
    """Where one group's counters live; `usage_per_s` converts the usage file's unit to seconds."""

    usage: Path  # v1 cpuacct.usage (ns) or v2 cpu.stat (usage_usec line)
    usage_key: str  # "" for a bare number, else the key of its line in a keyed file
    usage_per_s: float
    stat: Path  # cpu.stat (throttled time)
    throttled_key: str
    throttled_per_s: float
    procs: Path  # cgroup.procs of a hierarchy that holds every process of the run


@dataclass(frozen=True, kw_only=True)
class CpuSample:
    at_s: float  # time.monotonic() when read
    used_s: float
    throttled_s: float
    waits: dict[int, float] = field(default_factory=dict)  # tid -> seconds runnable but not running


def _number(path: Path, key: str) -> float | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    if not key:
        text = text.strip()
        return float(text) if text.isdigit() else None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return float(value)
    return 0.0  # an absent key (e.g. no quota ever applied) counts nothing


def run_delays(procs: Path) -> dict[int, float]:
    """Run delay of every thread of every process listed in `procs` (a cgroup.procs file)."""
    out: dict[int, float] = {}
    try:
        pids = procs.read_text().split()
    except OSError:
        return out
    for pid in pids:
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{pid}/task"):
                stat = f"/proc/{pid}/task/{tid}/schedstat"
                with contextlib.suppress(OSError, ValueError, IndexError), open(stat) as fh:
                    out[int(tid)] = int(fh.read().split()[1]) / 1e9
    return out


def sample(files: CpuFiles) -> CpuSample | None:
    """The group's counters now, or None where its usage cannot be read."""
    used = _number(files.usage, files.usage_key)
    if used is None:
        return None
    throttled = _number(files.stat, files.throttled_key) or 0.0
    return CpuSample(
        at_s=time.monotonic(),
        used_s=used / files.usage_per_s,
        throttled_s=throttled / files.throttled_per_s,
        waits=run_delays(files.procs),
    )
