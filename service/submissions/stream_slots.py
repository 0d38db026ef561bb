"""A cap on the event streams one identity holds open in this API process.

Every open stream costs the process a polling loop and a thread-pool hop per wake-up; 600 streams of one
learner took the others' median latency from 4 ms to 1.1 s. A stream takes a slot when it is answered and
gives it back however it ends (done, time limit, the client going away, or never being started).
Routes get the process's slots from service/deps.py (StreamSlotsDep).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable

from service.errors import TooMany
from service.messages import error

RETRY_AFTER_S = 5  # a slot frees when one of the caller's streams ends; EventSource then reconnects


class StreamSlots:
    """Open streams per identity (thread-safe: routes take slots in the thread pool, streams give them
    back on the event loop)."""

    def __init__(self, per_identity: int) -> None:
        self.per_identity = per_identity  # 0 = no cap
        self._open: Counter[int] = Counter()
        self._lock = threading.Lock()

    def open_count(self, identity_id: int) -> int:
        with self._lock:
            return self._open[identity_id]

    def take(self, identity_id: int) -> Callable[[], None]:
        """A slot for one more stream of `identity_id` and its (idempotent) release; 429 when all are in use."""
        with self._lock:
            if self.per_identity and self._open[identity_id] >= self.per_identity:
                raise TooMany(error("streams_full", per_identity=self.per_identity), retry_after_s=RETRY_AFTER_S)
            self._open[identity_id] += 1
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if released:
                    return
                released = True
                self._open[identity_id] -= 1
                if self._open[identity_id] <= 0:
                    del self._open[identity_id]

        return release


class Held:
    """`frames` that give their slot back when exhausted, failed, cancelled, closed or dropped unstarted."""

    def __init__(self, frames: AsyncIterator[bytes], release: Callable[[], None]) -> None:
        self._frames, self._release = frames, release

    def __aiter__(self) -> Held:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self._frames.__anext__()
        except BaseException:  # StopAsyncIteration, the client going away (cancelled), an error
            self._release()
            raise

    async def aclose(self) -> None:
        self._release()
        aclose = getattr(self._frames, "aclose", None)
        if aclose is not None:
            await aclose()

    def __del__(self) -> None:
        self._release()
