"""Device hygiene on Ray: a device a job left busy stays out of the pool until it is clean.

Ray hands a node's NPU and GPU ids to tasks by count and cannot be told to withhold one id, so:

1. On the node, a task that finds its devices busy before grading starts nothing (not started: no attempt
   counted) and names them. A task whose devices are still busy after its job keeps holding them (its Ray
   resources) for up to `ray_device_hold_s`, probing each second: one that comes clean goes back to Ray clean.
2. Still busy after that, the task returns naming the dirty ids, and the dispatcher withholds that many
   devices of that kind on that node from its own placement (`DirtyDevices`): the job shapes that would
   need them are not claimed. A probe task pinned to the node (no CPU reserved) checks them every
   `ray_device_probe_s`, and they rejoin the pool when clean.
3. Ray may still give a dirty id to one of our tasks (it picks the ids): that task is step 1's.

The busy check is grading.sandbox.devices.host_busy_check (nvidia-smi / npu-smi), run on the node. NOT RUN
on real devices here: the tests put a fake npu-smi on the nodes' PATH.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    """What a Ray task returns: the job's outcome and the devices it left busy on its node."""

    outcome: object  # an ExecutionResult
    kind: str = "cpu"
    dirty: tuple[int, ...] = ()


def busy_ids(kind: str, ids: tuple[int, ...]) -> list[int]:
    """The ids among `ids` some process still holds (on this node)."""
    if kind == "cpu" or not ids:
        return []
    from grading.sandbox import devices

    return [i for i in ids if devices.host_busy_check(kind, i)]


def hold_until_clean(
    kind: str, ids: tuple[int, ...], *, hold_s: float, poll_s: float = 1.0, busy: Callable = busy_ids
) -> list[int]:
    """Wait (holding the task's devices) until none of `ids` is busy or `hold_s` passed; the ids still busy."""
    dirty = busy(kind, ids)
    deadline = time.monotonic() + hold_s
    while dirty and time.monotonic() < deadline:
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))
        dirty = busy(kind, tuple(dirty))
    return dirty


def probe_on_node(kind: str, ids: tuple[int, ...]) -> list[int]:
    """The Ray probe task: which of the withheld `ids` are still busy on this node."""
    return busy_ids(kind, ids)


class DirtyDevices:
    """The dispatcher's ledger of devices withheld per node (node id -> kind -> Ray's device ids)."""

    def __init__(self, *, probe_s: float) -> None:
        self.probe_s = probe_s
        self._dirty: dict[str, dict[str, set[int]]] = {}
        self._next: dict[tuple[str, str], float] = {}
        self._probing: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def add(self, node_id: str, kind: str, ids: tuple[int, ...] | list[int]) -> None:
        if kind == "cpu" or not ids:
            return
        with self._lock:
            self._dirty.setdefault(node_id, {}).setdefault(kind, set()).update(ids)
            self._next.setdefault((node_id, kind), time.monotonic() + self.probe_s)

    def withheld(self) -> dict[str, dict[str, int]]:
        """Counts to take off each node's free devices."""
        with self._lock:
            return {n: {k: len(ids) for k, ids in kinds.items() if ids} for n, kinds in self._dirty.items()}

    def due(self) -> list[tuple[str, str, tuple[int, ...]]]:
        """(node, kind, ids) whose probe is due now and not already running; marks them as running."""
        now, out = time.monotonic(), []
        with self._lock:
            for node_id, kinds in self._dirty.items():
                for kind, ids in kinds.items():
                    key = (node_id, kind)
                    if ids and key not in self._probing and self._next.get(key, 0.0) <= now:
                        self._probing.add(key)
                        out.append((node_id, kind, tuple(sorted(ids))))
        return out

    def probed(self, node_id: str, kind: str, ids: tuple[int, ...], still_busy: list[int] | None) -> list[int]:
        """A probe finished (`still_busy` None: it failed, e.g. the node left); returns the ids now clean."""
        with self._lock:
            key = (node_id, kind)
            self._probing.discard(key)
            self._next[key] = time.monotonic() + self.probe_s
            if still_busy is None:
                return []
            held = self._dirty.get(node_id, {}).get(kind, set())
            clean = [i for i in ids if i not in set(still_busy)]
            held.difference_update(clean)
            if not held:
                self._dirty.get(node_id, {}).pop(kind, None)
                self._next.pop(key, None)
            return clean

    def forget(self, node_id: str) -> None:
        """A node that left the cluster: nothing of it is withheld any more."""
        with self._lock:
            self._dirty.pop(node_id, None)
            for key in [k for k in self._next if k[0] == node_id]:
                self._next.pop(key, None)
