"""Native memory of a long-lived titangrade process: few malloc arenas, and freed memory handed back.

The API process's Python heap does not grow over a soak (tracemalloc: no growth after 800 uploads), but
its RSS did: glibc gives each thread that meets contention its own arena (up to 8 per core), and memory
freed in an arena stays with the process, fragmented. `serve` runs many threads (request threads, the
intake writer, worker and delivery threads), so RSS climbed and never came down after a drain.
Measured figures: docs/service.md ("Memory over a soak").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import platform
import threading

log = logging.getLogger("titangrade.memory")
M_ARENA_MAX = -8  # mallopt parameter (glibc malloc.h)


def _glibc() -> ctypes.CDLL | None:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


_LIBC = _glibc()


def limit_arenas(arenas: int) -> bool:
    """At most `arenas` malloc arenas from now on (0: leave glibc's default); False where it cannot be set.
    Call it before the process starts its threads: arenas made earlier stay."""
    if arenas <= 0 or _LIBC is None:
        return False
    return bool(_LIBC.mallopt(M_ARENA_MAX, int(arenas)))


def trim() -> bool:
    """Hand the free pages of every arena back to the kernel (malloc_trim); True if any were."""
    if _LIBC is None:
        return False
    return bool(_LIBC.malloc_trim(0))


class Trimmer:
    """A daemon thread that trims every `interval_s` (cheap: a few ms), so memory freed after a burst of
    uploads or a drained queue goes back to the system instead of staying in the arenas."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="tg-malloc-trim", daemon=True)

    def start(self) -> Trimmer:
        if self.interval_s > 0 and _LIBC is not None:
            self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(5)

    def _run(self) -> None:
        while not self.stop.wait(self.interval_s):
            try:
                trim()
            except Exception:  # never worth stopping a process for
                log.exception("malloc_trim failed")
