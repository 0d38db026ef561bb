"""The engine's own client for one kernel: runs one cell at a time under grader-side clocks and caps.

Not nbclient: a learner's kernel holds the session key and may send anything on any channel, so this
client opens only the shell, iopub and control channels (never stdin or heartbeat), bounds every socket
(grading/sandbox/channels.py), counts the bytes of every message it receives (any type, any parent,
buffers included) and the messages themselves (reading and checking one costs the grader CPU however
small it is), and keeps only outputs whose parent is the engine's own execute_request. Every time
limit is a deadline here, outside the kernel: past it the cell is interrupted through the control
channel, and a kernel that does not answer the interrupt in time is reported hung (the caller kills it).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import zmq
from jupyter_client.session import Session

from grading.sandbox.channels import MiB, Received, bounded_socket, read_message, recv_bounded, rss_bytes
from grading.steps.cpu_clock import CellClock
from grading.steps.limit_output import CELL_FLOOD_MESSAGES, RUN_MESSAGES, Malformed, OutputCollector

INTERRUPT_GRACE_S = 5.0  # a kernel that has not answered an interrupt by then is hung
CELL_FLOOD_BYTES = 64 * MiB  # traffic while one cell runs; past it the cell is interrupted
RUN_TRAFFIC_BYTES = 192 * MiB  # traffic of a whole run; past it learner cells stop running
RSS_GUARD_BYTES = 100 * MiB  # grader memory growth during one cell that no socket bound explains
_POLL_MS = 10  # the longest wait between checks: the memory guard is sampled at least this often
_ALIVE_EVERY_S = 0.25
_RSS_EVERY_S = 0.01
_HANDSHAKE_RESEND_S = 0.1


@dataclass(kw_only=True)
class CellRun:
    """What one execute_request produced. status: ok | error | timeout | dead | hung."""

    status: str
    reply: dict[str, Any] = field(default_factory=dict)  # the execute_reply's content
    outputs: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False  # kept outputs hit the cell's output budget
    flooded: bool = False  # traffic passed a cap (cell, run, message size, grader memory)
    malformed: list[str] = field(default_factory=list)  # why messages with our parent were unreadable
    charged: int = 0
    messages: int = 0  # messages read while this cell ran (any socket, any parent)
    flood: str = ""  # which cap `flooded` is about: "bytes", "messages", "grader memory" or "" (none)
    steps: list[dict[str, Any]] = field(default_factory=list)  # kept step outputs that arrived in time, in order

    @property
    def over_size(self) -> bool:
        """Outputs were lost to a size cap: the kept outputs' budget, or a message over the size limit."""
        return self.truncated or any("size limit" in why for why in self.malformed)


class KernelIO:
    """Shell + iopub + control sockets to one kernel, driven synchronously from the engine's thread."""

    def __init__(
        self, *, urls: dict[str, str], key: bytes, signature_scheme: str = "hmac-sha256", is_alive=lambda: True
    ) -> None:
        self.session = Session(key=key, signature_scheme=signature_scheme)
        self.ctx = zmq.Context()
        self.shell = bounded_socket(self.ctx, zmq.DEALER, urls["shell"])
        self.iopub = bounded_socket(self.ctx, zmq.SUB, urls["iopub"])
        self.control = bounded_socket(self.ctx, zmq.DEALER, urls["control"])
        self.poller = zmq.Poller()
        for sock in (self.shell, self.iopub, self.control):
            self.poller.register(sock, zmq.POLLIN)
        self.is_alive = is_alive
        self.run_charged = 0  # all traffic of this run so far (kept across cells)
        self.run_messages = 0  # all messages of this run so far (kept across cells)
        self.cell_messages_cap = CELL_FLOOD_MESSAGES
        self.run_messages_cap = RUN_MESSAGES
        self.broken = False  # a socket was left mid-message: nothing more can be read reliably

    def close(self) -> None:
        for sock in (self.shell, self.iopub, self.control):
            sock.close(linger=0)
        self.ctx.term()

    def _hang_up(self, sock: zmq.Socket) -> None:
        """Close a socket at once. libzmq's high-water mark counts whole messages and its reader sees no
        frame of a message before the last one arrives, so a message that never ends is queued, unseen,
        until its socket closes: the memory guard is the only sign, and closing the only stop."""
        with contextlib.suppress(KeyError):
            self.poller.unregister(sock)
        sock.close(linger=0)

    # ---- one message ---------------------------------------------------------------------------------

    def _read(self, sock: zmq.Socket) -> tuple[Received, dict[str, Any] | None, str | None]:
        """(what arrived, the message without its content parsed, why it is unreadable)."""
        got = recv_bounded(sock)
        self.run_charged += got.charged
        self.run_messages += 1
        if got.endless:
            self.broken = True
            self._hang_up(sock)
        if got.frames is None:
            return got, None, "a message over the size limit" if got.charged else None
        try:
            msg = read_message(self.session, got.frames)
        except Exception:  # bad signature, bad JSON, missing parts: all the kernel's doing
            return got, None, "an unreadable message"
        if not isinstance(msg.get("header"), dict) or not isinstance(msg.get("parent_header"), dict):
            return got, None, "a message without a header"
        return got, msg, None

    @staticmethod
    def _content(msg: dict[str, Any]) -> dict[str, Any]:
        content = msg["content"]
        if isinstance(content, (bytes, memoryview)):
            content = json.loads(bytes(content))
        if not isinstance(content, dict):
            raise Malformed("content is not an object")
        return content

    def wait_ready(self, timeout_s: float) -> None:
        """Handshake (kernel_info on shell, any iopub message back) so no output of the first cell is
        lost to a subscription still on its way; raises TimeoutError."""
        deadline = time.monotonic() + timeout_s
        shell_ok = iopub_ok = False
        while not (shell_ok and iopub_ok):
            if time.monotonic() > deadline or self.broken:
                raise TimeoutError(f"no kernel_info reply within {timeout_s:g} s")
            if not self.is_alive():
                raise RuntimeError("the kernel died before replying to kernel_info")
            self.session.send(self.shell, "kernel_info_request", {})
            # the kernel is up (the sandbox saw its kernel_info reply): a missing iopub message means our
            # subscription was not there yet when it published, so ask again soon rather than wait
            until = time.monotonic() + _HANDSHAKE_RESEND_S
            while time.monotonic() < until and not (shell_ok and iopub_ok):
                for sock, _ in self.poller.poll(_POLL_MS):
                    _, msg, _ = self._read(sock)
                    shell_ok |= sock is self.shell and msg is not None
                    iopub_ok |= sock is self.iopub and msg is not None

    # ---- one cell ------------------------------------------------------------------------------------

    def interrupt(self) -> None:
        self.session.send(self.control, "interrupt_request", {})

    def execute(
        self,
        code: str,
        *,
        limit_s: float,
        collector: OutputCollector,
        store_history: bool,
        iopub_s: float,
        flood_bytes: int = CELL_FLOOD_BYTES,
        run_cap: bool = True,
        step: Callable[[dict[str, Any]], bool] | None = None,
        step_limits: tuple[float, ...] = (),
        cap_s: float | None = None,
        clock: CellClock | None = None,
    ) -> CellRun:
        """Run `code`; keep its outputs in `collector`. Never raises for anything the kernel sends.
        `run_cap=False` for the grader's own cells: past the run's traffic cap they still read answers.
        A cell of several timed steps (one function call each) passes `step`, which says whether a kept
        output is one step's result, and `step_limits`, each step's own clock: `limit_s` runs until the
        first result, and the k-th result restarts the clock at `step_limits[k]` (never past `cap_s` from
        the start). The first len(step_limits) results are listed in `CellRun.steps`; one arriving after
        the interrupt is not listed. With a `clock`, a span whose wall limit passes runs on while the clock
        says the host, not the cell, used the time (grading/steps/cpu_clock.py)."""
        msg = self.session.msg(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": store_history,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": False,
            },
        )
        msg_id = msg["header"]["msg_id"]
        run = CellRun(status="ok")
        if self.broken:
            return CellRun(status="hung", flooded=True)
        try:
            self.session.send(self.shell, msg)
        except zmq.Again:  # no kernel on the other end any more
            return CellRun(status="dead" if not self.is_alive() else "hung")
        start = time.monotonic()
        steps = len(step_limits) if step is not None else 0
        hard = start + (cap_s if cap_s is not None else max(limit_s, sum(step_limits)))
        deadline = min(start + limit_s, hard)
        span_s = deadline - start  # the current clock's limit (the cell's, or one step's)
        if clock is not None:
            clock.restart()
        rss0 = rss_bytes()
        interrupted_at: float | None = None
        timed_out = False
        reply: dict[str, Any] | None = None
        idle = False
        reply_at = 0.0
        next_alive = next_rss = start
        while True:
            now = time.monotonic()
            if reply is not None and (idle or now > reply_at + iopub_s or now > deadline + INTERRUPT_GRACE_S):
                break
            if now >= next_rss:
                next_rss = now + _RSS_EVERY_S
                if rss0 and rss_bytes() - rss0 > RSS_GUARD_BYTES:
                    run.flooded = self.broken = True  # growth no bound explains: stop listening, kill
                    run.flood = run.flood or "grader memory"
                    for sock in (self.shell, self.iopub, self.control):
                        self._hang_up(sock)
            if now >= next_alive:
                next_alive = now + _ALIVE_EVERY_S
                if not self.is_alive():
                    run.status = "dead"
                    return self._finish(run, collector)
            over = self.broken or self._over(run, flood_bytes, run_cap)
            if over:
                run.flooded = True
            if interrupted_at is None and not over and now > deadline and clock is not None:
                more = clock.more_s(span_s)
                if more > 0:  # held back by the host: its limit is not up yet
                    deadline = now + more
                    hard = max(hard, deadline)
            if interrupted_at is None and (now > deadline or over):
                timed_out = now > deadline
                interrupted_at = now
                self._interrupt_safely()
            if interrupted_at is not None and (
                self.broken  # reply or not: nothing more can be read, so the caller kills the kernel
                or (
                    reply is None
                    and (
                        now > interrupted_at + INTERRUPT_GRACE_S
                        or run.charged > 2 * flood_bytes
                        or run.messages > 2 * self.cell_messages_cap  # it goes on after the interrupt: kill
                    )
                )
            ):
                run.status = "hung"
                return self._finish(run, collector)
            for sock, _ in self.poller.poll(_POLL_MS):
                if self.broken:
                    break
                got, m, why = self._read(sock)
                run.charged += got.charged
                run.messages += 1
                if got.oversized:
                    run.flooded = True
                if m is None or m["parent_header"].get("msg_id") != msg_id:
                    if why and sock is not self.control:
                        run.malformed.append(why)  # could have been ours: the learner's error either way
                    continue
                if sock is self.shell and m["header"].get("msg_type") == "execute_reply":
                    try:
                        reply = self._content(m)
                    except (ValueError, RecursionError):  # Malformed is a ValueError
                        reply = {"status": "error", "ename": "UnreadableReply", "evalue": ""}
                        run.malformed.append("an unreadable execute_reply")
                    reply_at = time.monotonic()
                elif sock is self.iopub:
                    kept = len(collector.outputs)
                    idle = self._on_iopub(m, collector, run) or idle
                    grew = len(collector.outputs) > kept and interrupted_at is None and len(run.steps) < steps
                    if step is not None and grew and step(collector.outputs[-1]):
                        run.steps.append(collector.outputs[-1])  # one step's result, in time: next clock
                        next_s = step_limits[min(len(run.steps), steps - 1)]
                        deadline = min(time.monotonic() + next_s, hard)
                        span_s = deadline - time.monotonic()
                        if clock is not None:
                            clock.restart()
        run.reply = reply or {}
        status = run.reply.get("status")
        if timed_out:
            run.status = "timeout"
        elif status == "error" or status == "aborted":
            run.status = "error"
        return self._finish(run, collector)

    def _over(self, run: CellRun, flood_bytes: int, run_cap: bool) -> bool:
        """Is the cell's traffic past a cap (its own, or the run's for learner cells)? Names it in `run.flood`."""
        if run.charged > flood_bytes or (run_cap and self.run_charged > RUN_TRAFFIC_BYTES):
            run.flood = run.flood or "bytes"
        elif run.messages > self.cell_messages_cap or (run_cap and self.run_messages > self.run_messages_cap):
            run.flood = run.flood or "messages"
        else:
            return False
        return True

    def _interrupt_safely(self) -> None:
        with contextlib.suppress(zmq.ZMQError):  # a full send queue: the grace period then decides
            self.interrupt()

    def _on_iopub(self, msg: dict[str, Any], collector: OutputCollector, run: CellRun) -> bool:
        """Handle one iopub message of our cell; True when it says the cell's output is complete."""
        kind = msg["header"].get("msg_type")
        if kind not in ("status", *collector.KINDS):
            return False  # execute_input, comm_*, unknown types: counted already, never stored
        try:
            content = self._content(msg)
            if kind == "status":
                return content.get("execution_state") == "idle"
            collector.add(kind, content)
        except (ValueError, RecursionError) as exc:  # Malformed is a ValueError; JSON nested too deep
            run.malformed.append(f"a malformed {str(kind)[:40]} message ({str(exc)[:80]})")
        return False

    @staticmethod
    def _finish(run: CellRun, collector: OutputCollector) -> CellRun:
        run.outputs = collector.outputs
        run.truncated = collector.truncated
        return run
