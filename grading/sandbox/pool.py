"""Pre-warmed kernels: a few sandboxed kernels started ahead, heavy imports done, one submission each.

`PrewarmedSandbox(inner, sizes={"torch": 1})` is a drop-in `Sandbox`. A warm kernel is keyed by
everything that shaped its sandbox at start (family, limits, devices, extra env), so the rlimits and
scratch size it runs under are always those of the exercise that gets it. A key's pool fills in the
background after its first request (or ahead of time with `prepare`), and refills after every pop.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Hashable
from typing import Any

from grading.sandbox.interface import KernelRequest, KernelSession, Sandbox

WARM_IMPORTS = {
    "light": "import json, math, random, numpy",
    "torch": "import numpy, torch",
    "training": "import numpy, torch, torch.distributed, torch.multiprocessing, torch.distributed.fsdp",
}
# Run silently (no history, no execution count): the learner's notebook sees only cached modules.
_WARM_CELL = "import importlib as _tg_il\nfor _tg_m in {mods!r}: _tg_il.import_module(_tg_m)\ndel _tg_il, _tg_m"


def _modules(family: str) -> list[str]:
    return [m.strip() for m in WARM_IMPORTS.get(family, "").removeprefix("import ").split(",") if m.strip()]


def warm_up(session: KernelSession, family: str, timeout_s: float = 120) -> None:
    """Import the family's heavy modules in the kernel; raises if that fails."""
    kc = session.km.client()
    kc.start_channels(stdin=False, hb=False)  # trusted code only, but no channel it does not read
    try:
        kc.wait_for_ready(timeout=timeout_s)
        msg_id = kc.execute(_WARM_CELL.format(mods=_modules(family)), silent=True, store_history=False)
        deadline = time.monotonic() + timeout_s
        while True:
            reply = kc.get_shell_msg(timeout=max(deadline - time.monotonic(), 0.1))
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"warm-up imports failed: {reply['content'].get('evalue')}")
    finally:
        kc.stop_channels()


def request_key(request: KernelRequest) -> Hashable:
    return (
        request.kernel_family,
        request.limits,
        request.devices,
        tuple(sorted(request.env.items())),
        request.hidden_modules,
    )  # a kernel prewarmed with another exercise's view must not serve this one


class PrewarmedSandbox(Sandbox):
    """Pops a warm kernel for a matching request, else starts one cold; never shares a kernel."""

    def __init__(
        self, inner: Sandbox, *, sizes: dict[str, int], max_keys: int = 4, warm_timeout_s: float = 120
    ) -> None:
        self.inner = inner
        self.mode = inner.mode
        self.sizes = dict(sizes)
        self.max_keys = max_keys
        self.warm_timeout_s = warm_timeout_s
        self.hits = self.misses = 0
        self._pools: collections.OrderedDict[Hashable, collections.deque[KernelSession]] = collections.OrderedDict()
        self._requests: dict[Hashable, KernelRequest] = {}
        self._pending: collections.Counter[Hashable] = collections.Counter()
        self._cond = threading.Condition()
        self._closed = False
        self._filler = threading.Thread(target=self._fill_loop, daemon=True, name="tg-prewarm")
        self._filler.start()

    def start(self, request: KernelRequest) -> KernelSession:
        key = request_key(request)
        session = None
        with self._cond:
            pool = self._pools.get(key)
            if pool:
                session = pool.popleft()
                self.hits += 1
            else:
                self.misses += 1
            self._want(key, request)
        if session is None:
            return self.inner.start(request)
        watcher = getattr(session, "watcher", None)
        if watcher is not None:  # limits accounting and the wall-clock backstop start now, not at warm-up
            watcher.reset(
                deadline=time.monotonic()
                + request.limits.run_timeout_s
                + getattr(getattr(self.inner, "config", None), "wall_grace_s", 60.0)
            )
        group = getattr(session, "group", None)
        if group is not None:  # born in its run's group at warm-up; its limits count from the hand-out
            group.reset()
        return session

    def prepare(self, request: KernelRequest) -> None:
        """Fill the pool for `request`'s key ahead of its first submission (e.g. at worker start)."""
        with self._cond:
            self._want(request_key(request), request)

    def ready(self, request: KernelRequest) -> int:
        with self._cond:
            return len(self._pools.get(request_key(request), ()))

    def wait_ready(self, request: KernelRequest, count: int = 1, timeout_s: float = 120) -> bool:
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while len(self._pools.get(request_key(request), ())) < count:
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return False
                self._cond.wait(left)
            return True

    def _want(self, key: Hashable, request: KernelRequest) -> None:
        if self.sizes.get(request.kernel_family, 0) <= 0:
            return
        if key not in self._pools:
            self._pools[key] = collections.deque()
            self._requests[key] = request
            while len(self._pools) > self.max_keys:  # bound how many uids sit idle in warm kernels
                old_key, old = self._pools.popitem(last=False)
                self._requests.pop(old_key, None)
                for s in old:
                    threading.Thread(target=s.close, daemon=True).start()
        self._pools.move_to_end(key)
        self._cond.notify_all()

    def _next_job(self) -> tuple[Hashable, KernelRequest] | None:
        for key, pool in self._pools.items():
            request = self._requests[key]
            if len(pool) + self._pending[key] < self.sizes.get(request.kernel_family, 0):
                self._pending[key] += 1
                return key, request
        return None

    def _fill_loop(self) -> None:
        while True:
            with self._cond:
                job = self._next_job()
                while job is None and not self._closed:
                    self._cond.wait(1.0)
                    job = self._next_job()
                if self._closed or job is None:  # job is None only when closed
                    return
            key, request = job
            session = self._start_warm(request)
            with self._cond:
                self._pending[key] -= 1
                if session is not None and key in self._pools and not self._closed:
                    self._pools[key].append(session)
                    session = None
                self._cond.notify_all()
            if session is not None:
                session.close()

    def _start_warm(self, request: KernelRequest) -> KernelSession | None:
        try:
            session = self.inner.start(request)
        except Exception:
            time.sleep(1.0)  # e.g. no free sandbox uid now; the loop retries
            return None
        try:
            warm_up(session, request.kernel_family, self.warm_timeout_s)
        except Exception:
            session.close()
            return None
        return session

    def close(self) -> None:
        """Shut every warm kernel down (worker shutdown)."""
        with self._cond:
            self._closed = True
            sessions = [s for pool in self._pools.values() for s in pool]
            self._pools.clear()
            self._cond.notify_all()
        self._filler.join(timeout=self.warm_timeout_s)
        for s in sessions:
            s.close()

    def __getattr__(self, name: str) -> Any:  # e.g. `.config` of the inner sandbox
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
