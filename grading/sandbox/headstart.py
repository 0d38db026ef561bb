"""A head start for one-shot grading: launch the kernel first, import and validate while it boots.

`titangrade grade` pays for a kernel start in every run, and the kernel's boot (a separate process)
overlaps nothing unless it is launched before the grader's own imports and checks. `HeadStart(inner,
request)` starts that kernel in a thread at once; the first `start()` with an equal request gets it.
Restarts after a kernel death, and any other request, start cold from `inner`.

The kernel is the one `inner` would start a moment later (same sandbox, same request, fresh): nothing of
the submission reaches it before the pipeline runs its cells, and one that no grade takes (a refused
notebook) is closed by `close()`.

The launching thread stays alive until `close()`: bwrap's --die-with-parent is PR_SET_PDEATHSIG, which
fires when the *thread* that forked it exits, not the process.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from grading.sandbox.interface import KernelRequest, KernelSession, Sandbox

DEFAULT_WALL_GRACE_S = 60.0  # bwrap's BwrapConfig.wall_grace_s, for inner sandboxes without a config


class HeadStart(Sandbox):
    """Starts one kernel for `request` now, in a thread; hands it to the first matching `start()`."""

    def __init__(self, inner: Sandbox, request: KernelRequest) -> None:
        self.inner = inner
        self.mode = inner.mode
        self.request = request
        self._session: KernelSession | None = None
        self._error: BaseException | None = None
        self._taken = False
        self._released = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._launch, daemon=True, name="tg-headstart")
        self._thread.start()

    def _launch(self) -> None:
        try:
            self._session = self.inner.start(self.request)
        except BaseException as exc:  # handed to the pipeline's start(), which turns it into a result
            self._error = exc
        finally:
            self._ready.set()
        self._released.wait()  # the kernel's parent thread must outlive the kernel (module docstring)

    def start(self, request: KernelRequest) -> KernelSession:
        if self._taken or request != self.request:
            return self.inner.start(request)
        self._taken = True
        self._ready.wait()
        if self._error is not None:
            raise self._error
        session, self._session = self._session, None
        assert session is not None
        _hand_over(session, request, getattr(getattr(self.inner, "config", None), "wall_grace_s", DEFAULT_WALL_GRACE_S))
        return session

    def close(self) -> None:
        """Close the kernel if no grade took it; call once the grade is done (or refused) and its
        session closed: the launching thread ends here."""
        self._ready.wait()
        session, self._session = self._session, None
        if session is not None:
            session.close()
        self._released.set()
        self._thread.join()

    def __getattr__(self, name: str) -> Any:  # e.g. `.config` of the inner sandbox
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def _hand_over(session: KernelSession, request: KernelRequest, wall_grace_s: float) -> None:
    """Limits count from the hand-over, as for a pre-warmed kernel (pool.py): the wall-clock backstop,
    the watcher's baseline of the grader's own memory (taken after the imports done while it booted)
    and the run group's counters."""
    watcher = getattr(session, "watcher", None)
    if watcher is not None:
        watcher.reset(deadline=time.monotonic() + request.limits.run_timeout_s + wall_grace_s)
    group = getattr(session, "group", None)
    if group is not None:
        group.reset()
