"""The worker's view of its accelerators: how many are free now (for claiming) and grants per job.

Wraps grading.sandbox.devices.DeviceInventory (which hands out disjoint ids and quarantines devices left
busy by a job); a job row only says how many devices it needs and whether it falls back to CPU ranks
where the worker has too few, so the kind with enough free ones is used.
"""

from __future__ import annotations

import threading
import time

from grading.errors import HostBusy
from grading.sandbox import DeviceGrant
from grading.sandbox.devices import DeviceInventory

RECHECK_S = 30.0  # how often devices quarantined after a job are probed again


class WorkerDevices:
    def __init__(
        self, inventory: DeviceInventory, kinds: tuple[str, ...] = ("cuda", "npu"), *, recheck_s: float = RECHECK_S
    ) -> None:
        self.inventory = inventory
        self.recheck_s = recheck_s
        self._next_recheck = 0.0
        self.kinds = tuple(k for k in kinds if inventory.total(k) > 0)
        self._held = dict.fromkeys(self.kinds, 0)
        self._lock = threading.Lock()

    @classmethod
    def from_setting(cls, spec: str) -> WorkerDevices:
        """ "" = CPU only; "detect" = what the host reports; else a spec like "npu:0-7" or "cuda:0,1"."""
        inventory = DeviceInventory.detect() if spec.strip() == "detect" else DeviceInventory.from_spec(spec)
        return cls(inventory)

    @property
    def count(self) -> int:
        """The largest single-kind group: the most devices one job could get here."""
        return max((self.inventory.total(k) for k in self.kinds), default=0)

    @property
    def installed(self) -> int:
        """The largest single-kind group this worker has, quarantined devices included: a job that falls
        back to the CPU does so only where the worker has fewer than it needs, never while they are dirty."""
        return max((self.inventory.installed(k) for k in self.kinds), default=0)

    @property
    def kind(self) -> str:
        return max(self.kinds, key=self.inventory.total) if self.kinds else "cpu"

    @property
    def free(self) -> int:
        with self._lock:
            return max((self.inventory.total(k) - self._held[k] for k in self.kinds), default=0)

    def acquire(self, n: int, *, cpu_fallback: bool = False) -> DeviceGrant:
        """`n` devices of one kind; a CPU grant for a job that falls back to the CPU where this worker has
        fewer than `n` of every kind (never because they are busy: then it waits, HostBusy)."""
        if n == 0 or (cpu_fallback and self.installed < n):
            return DeviceGrant()
        with self._lock:
            for kind in self.kinds:
                grant = self.inventory.acquire(kind, n)
                if grant is not None:
                    self._held[kind] += n
                    return grant
            if any(self.inventory.installed(k) >= n for k in self.kinds):  # enough, but held or quarantined now
                held = ", ".join(
                    f"{k}: {self._held[k]} held, {len(self.inventory.quarantined[k])} quarantined" for k in self.kinds
                )
                raise HostBusy(
                    f"no device kind has {n} free devices now ({held}): other jobs of this worker hold them",
                    resource="device",
                )
        raise RuntimeError(f"no device kind has {n} free devices (claimed a job this worker cannot run)")

    def release(self, grant: DeviceGrant) -> list[int]:
        if grant.kind == "cpu" or not grant.ids:
            return []
        dirty = self.inventory.release(grant)
        with self._lock:
            self._held[grant.kind] -= len(grant.ids)
        return dirty

    def recheck_quarantined(self) -> dict[str, list[int]]:
        """At most every `recheck_s`: probe the quarantined devices; the clean ones rejoin the pool."""
        now = time.monotonic()
        if now < self._next_recheck or not any(self.inventory.quarantined.values()):
            return {}
        self._next_recheck = now + self.recheck_s
        return self.inventory.recheck()
