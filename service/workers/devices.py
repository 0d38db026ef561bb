"""Accelerators on this worker host, handed out per job (a fixed pool of ids; CPU-only hosts have none).

Used when grading.sandbox.devices.DeviceInventory is not available; both offer acquire/release/can_satisfy.
"""
from __future__ import annotations

import threading

from grading.sandbox import DeviceGrant


class LocalDevices:
    def __init__(self, *, kind: str = "cpu", count: int = 0) -> None:
        self.kind = kind
        self.count = count
        self._free = list(range(count))
        self._lock = threading.Lock()

    @property
    def free(self) -> int:
        return len(self._free)

    def can_satisfy(self, n: int) -> bool:
        return n <= len(self._free)

    def acquire(self, n: int) -> DeviceGrant:
        with self._lock:
            if n > len(self._free):
                raise RuntimeError(f"asked for {n} devices, {len(self._free)} free")
            ids, self._free = self._free[:n], self._free[n:]
        return DeviceGrant(kind=self.kind if n else "cpu", ids=tuple(ids))

    def release(self, grant: DeviceGrant) -> None:
        with self._lock:
            self._free.extend(i for i in grant.ids if i not in self._free)
