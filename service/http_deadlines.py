"""Bounds on how long a client may take to send a request, so slow clients cannot hold connections open.

uvicorn times out only an idle keep-alive connection: a client that opens a connection and sends nothing,
trickles its headers a byte at a time, or trickles an upload's body, kept its connection (and the
request's task and buffers) for as long as it liked. Two bounds close that:

- `HeaderDeadlineProtocol` (uvicorn's httptools protocol): a request's headers must be complete within
  `HTTP_HEADER_TIMEOUT_S` of the connection opening or the request's first byte, and at most
  `HTTP_MAX_HEADER_BYTES` long; else 408 (431) and the connection is closed.
- `BodyDeadline` (ASGI middleware): the body must be in within `HTTP_BODY_TIMEOUT_S` of the headers; a read
  past that raises `BodyTimeout` (408 `request_timeout`, `Connection: close`), like the body cap's 413.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from service.config import Settings


class BodyTimeout(StarletteHTTPException):
    """Raised while the body streams in too slowly; an HTTPException so the error handlers answer it."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(
            408,
            detail=f"the request body did not arrive within {timeout_s:g} s; send it at once (check the "
            "connection) and try again",
            headers={"Connection": "close"},
        )


class BodyDeadline:
    """Every `receive()` of a request's body must complete within `timeout_s` of the request's start;
    once the body is in, later reads (a stream waiting for the client to go away) are not bounded."""

    def __init__(self, app: ASGIApp, *, timeout_s: float) -> None:
        self.app, self.timeout_s = app, timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.timeout_s <= 0:
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        body_done = False

        async def bounded() -> Message:
            nonlocal body_done
            if body_done:
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):  # no task per read, unlike wait_for
                    message = await receive()
            except TimeoutError:
                raise BodyTimeout(self.timeout_s) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        await self.app(scope, bounded, send)


class HeaderDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline and a size cap on each request's headers."""

    header_timeout_s: float = 10.0  # set per process by `configure` (create_app)
    max_header_bytes: int = 65536

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._tail = b""  # the last bytes of the head read so far: its end may straddle two reads

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a connection that sends nothing is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._header_timer is not None:  # still reading a request's headers
            # only the head counts: a body that came in the same read (head and body written at once) is no header
            seen = self._tail + data
            end = seen.find(b"\r\n\r\n")
            self._header_bytes += len(data) if end < 0 else max(0, end + 4 - len(self._tail))
            self._tail = seen[-3:]
            if self._header_bytes > self.max_header_bytes:
                self._refuse(
                    431,
                    "Request Header Fields Too Large",
                    "request_headers_too_large",
                    f"the request's headers are longer than {self.max_header_bytes} bytes",
                )
                return
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_timer is None:  # the first request keeps the deadline from the connection's start
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def _arm(self) -> None:
        self._header_bytes, self._tail = 0, b""
        if self.header_timeout_s > 0:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_late(self) -> None:
        self._header_timer = None
        self._refuse(
            408,
            "Request Timeout",
            "request_timeout",
            f"the request's headers did not arrive within {self.header_timeout_s:g} s",
        )

    def _refuse(self, status: int, reason: str, code: str, message: str) -> None:
        self._disarm()
        if self.transport is None or self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:  # a pipelined request behind a live one
            self.transport.close()
            return
        body = json.dumps({"error": {"code": code, "message": message}}).encode()
        self.transport.write(
            f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n".encode()
            + body
        )
        self.transport.close()


def configure(settings: Settings) -> None:
    """Apply the settings' header bounds to this process's HTTP protocol (one app serves per process)."""
    HeaderDeadlineProtocol.header_timeout_s = settings.http_header_timeout_s
    HeaderDeadlineProtocol.max_header_bytes = settings.http_max_header_bytes


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The keyword arguments `serve` gives uvicorn for these bounds (the app's own middleware does the body)."""
    configure(settings)
    return {
        "http": HeaderDeadlineProtocol,
        "timeout_keep_alive": settings.http_keep_alive_s,
        "h11_max_incomplete_event_size": settings.http_max_header_bytes,
    }
