"""The grader's own ends of a kernel's ZMQ channels, bounded so that nothing a kernel sends can grow
the grader's memory.

Everything the kernel sends is hostile: a learner holds the session key and ipykernel's sockets. So
every socket the grader opens gets a maximum frame size (libzmq drops a peer that sends more), small
receive high-water marks, no linger and no reconnect, and messages are read frame by frame with
`recv_bounded`, which counts every frame and drops the frames past a cap instead of copying them.

What no socket option bounds: libzmq's high-water mark counts whole messages, and its reader sees no
frame of a multipart message until the last frame has arrived (checked: a PUB sending only SNDMORE
frames leaves its SUB unreadable). So a message that never ends is queued, unseen, inside libzmq for as
long as its socket stays open. The readers therefore sample `rss_bytes` at least every 10 ms and, past
their memory guard, close every socket of the kernel at once and have it killed: closing is the only
stop, and the peak is the guard plus what arrives before the next sample.
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass
from typing import Any

import zmq

MiB = 1024 * 1024
MAX_FRAME_BYTES = 48 * MiB  # one frame: past it libzmq drops the connection; up to it recv_bounded counts and drops
MAX_MESSAGE_BYTES = 24 * MiB  # all frames of one message together
MAX_FRAMES = 64  # identities + delimiter + signature + 4 parts + buffers of a sane message
FRAME_CHARGE = 64  # bytes charged per frame on top of its length: an empty-frame flood still costs
RCV_HWM = 1  # whole messages queued per socket before libzmq stops reading from the kernel
SND_HWM = 16
SEND_TIMEOUT_MS = 1000  # sends raise zmq.Again instead


STALL_MS = 1000  # a message's next frame not there within this: the sender stopped mid-message


@dataclass(slots=True)
class Received:
    """One message off a socket: its frames (None when it was over a cap and dropped) and its cost."""

    frames: list[bytes] | None
    charged: int  # bytes counted against the output budgets (frames + FRAME_CHARGE each)
    endless: bool = False  # the message went past twice the cap, or stalled: the socket is given up

    @property
    def oversized(self) -> bool:
        return self.frames is None


def bounded_socket(ctx: zmq.Context, kind: int, url: str, *, reconnect_ms: int = -1) -> zmq.Socket:
    """A socket of `kind` connected once to `url` with every bound set before it connects. `reconnect_ms`
    only for the start-up handshake (bwrap.py), whose socket may connect before the kernel has bound."""
    sock = ctx.socket(kind)
    sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
    sock.setsockopt(zmq.RCVHWM, RCV_HWM)
    sock.setsockopt(zmq.SNDHWM, SND_HWM)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RECONNECT_IVL, reconnect_ms)  # -1: a dropped connection stays dropped (no second lookup)
    sock.setsockopt(zmq.SNDTIMEO, SEND_TIMEOUT_MS)  # a DEALER with no peer left would block forever
    sock.setsockopt(zmq.RCVBUF, 256 * 1024)
    if kind == zmq.SUB:
        sock.setsockopt(zmq.SUBSCRIBE, b"")
    sock.connect(url)
    return sock


def recv_bounded(sock: zmq.Socket, *, max_bytes: int = MAX_MESSAGE_BYTES, max_frames: int = MAX_FRAMES) -> Received:
    """Read one whole message (the caller polled first); frames past the caps are read and dropped."""
    frames: list[bytes] = []
    charged = 0
    over = False
    while True:
        try:
            frame = sock.recv(zmq.NOBLOCK, copy=False)
        except zmq.Again:
            if sock.poll(STALL_MS):
                continue
            # never blocks the caller's clock; nothing at all (charged 0) is no message, not a bad one
            return Received(frames=None, charged=charged, endless=charged > 0)
        size = len(frame.buffer)
        charged += size + FRAME_CHARGE
        if not over and (len(frames) >= max_frames or charged > max_bytes):
            over, frames = True, []  # let go of what was kept; the rest is only counted
        if not over:
            frames.append(frame.bytes)
        if not frame.more:
            return Received(frames=None if over else frames, charged=charged)
        if charged > 2 * max_bytes:  # still going: leave the socket mid-message; the caller gives it up
            return Received(frames=None, charged=charged, endless=True)


def read_message(session: Any, frames: list[bytes]) -> dict[str, Any]:
    """One kernel message from its frames, signature checked, content left packed: what
    `Session.deserialize(content=False)` gives, without its parsing of every ISO date in the headers
    (dateutil; about a tenth of the grader's CPU per grading, for dates nothing here reads: header
    dates stay strings). Raises ValueError, KeyError or TypeError for anything malformed or unsigned."""
    _, parts = session.feed_identities(frames, copy=True)
    if len(parts) < 5:
        raise ValueError("malformed message: fewer than 5 parts")
    if session.auth is not None and (not parts[0] or not hmac.compare_digest(parts[0], session.sign(parts[1:5]))):
        raise ValueError("unsigned or badly signed message")
    header = session.unpack(parts[1])
    if not isinstance(header, dict):
        raise TypeError("header is not an object")
    return {
        "header": header,
        "msg_id": header["msg_id"],
        "msg_type": header["msg_type"],
        "parent_header": session.unpack(parts[2]),
        "metadata": session.unpack(parts[3]),
        "content": parts[4],
        "buffers": [memoryview(b) for b in parts[5:]],
    }


def rss_bytes() -> int:
    """This process's resident set size (Linux; 0 where /proc is missing)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
