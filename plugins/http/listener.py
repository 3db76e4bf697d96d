"""The HTTP listener: an asyncio server in front of a :class:`~minibroker.Broker` (ActiveMQ's Jetty on port 8161).

Each socket gets a :class:`~minibroker.plugins.http.parser.RequestParser`; this module moves bytes, runs the timers
and hands each complete request to the :class:`Handler` (the console, Jolokia and the REST API, in ``app.py``):

* one request at a time per connection: reading pauses while a request is handled, so pipelined requests wait in
  the socket, not in memory;
* a request's head must arrive within ``handshake_timeout`` seconds of its first byte (or of the accept), and a
  connection silent for ``idle_timeout`` seconds between requests or inside a body is closed (a slow-loris client
  holds a socket slot for that long at most);
* a head the handler refuses before its body (a wrong login) is answered at once, without reading the body; an
  ``Expect: 100-continue`` is answered once the head is accepted;
* a refused request (:class:`~minibroker.plugins.http.parser.BadRequest`) gets its 4xx status and the connection is
  closed; a handler bug gets a 500 and harms no other connection;
* the socket slots are the broker's, shared with the other listeners (``max_connections``).

Timers run on the event loop's clock, not the broker's: they are about the network (a test's virtual hour must not
close its HTTP clients).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Sequence
from ssl import SSLContext
from typing import TYPE_CHECKING, Protocol

import attrs

from minibroker._defaults import DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS
from minibroker.plugins._listening import Listener

from .parser import DEFAULT_MAX_BODY_SIZE, BadRequest, Request, RequestHead, RequestParser, encode_response

if TYPE_CHECKING:
    from minibroker import Broker

__all__ = ["Handler", "HttpServer", "Response", "start_http_server"]

log = logging.getLogger("minibroker.http")


@attrs.define(slots=True)
class Response:
    """What a handler answers: status, headers (Content-Length is added) and body; ``close`` ends the connection."""

    status: int
    headers: list[tuple[str, str]] = attrs.field(factory=list)
    body: bytes = b""
    close: bool = False


class Handler(Protocol):
    """What serves the requests (``app.HttpApp``)."""

    def check_head(self, head: RequestHead) -> Response | None:
        """An answer before the body is read (a refused login), or None to read it."""

    async def handle(self, request: Request, peer: str) -> Response:
        """The answer to a complete request."""

    async def close(self) -> None:
        """The listener stops: let go of what outlives a request (REST clients' consumers)."""


class _HttpProtocol(asyncio.Protocol):
    def __init__(self, server: HttpServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.parser = RequestParser(max_body_size=server.max_body_size)
        self._loop = asyncio.get_running_loop()
        self._closing = False
        self._claimed = False
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        #: the head checked early (check_head, 100-continue) for the request being read
        self._checked_head: RequestHead | None = None
        self.peer = "?"

    # -- asyncio callbacks ------------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        broker = self.server.broker
        if not broker.sockets.claim(self.server.max_connections):
            log.warning(
                "refusing %s: %d connections open (max_connections)",
                transport.get_extra_info("peername"),
                broker.sockets.open,
            )
            self._closing = True
            transport.abort()
            return
        self._claimed = True
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else str(peer)
        self.server._opened(self)
        self._arm(self.server.handshake_timeout, "no complete request head")

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        self.parser.receive_data(data)
        if self._task is None:
            self._next()

    def eof_received(self) -> bool | None:
        # the client half-closed: answer what it sent, then close (returning False lets asyncio close the socket)
        if self._task is None:
            self.abort()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._disarm()
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._claimed:
            self._claimed = False
            self.server.broker.sockets.release()
            self.server._closed(self)

    # -- requests ---------------------------------------------------------------------------------------------------

    def _next(self) -> None:
        """Parse what is buffered: start handling a complete request, or answer its head early."""
        parser = self.parser
        try:
            request = parser.next_request()
        except BadRequest as exc:
            log.info("bad HTTP request from %s: %s", self.peer, exc)
            status = exc.status or 400
            self._write(Response(status, [("Content-Type", "text/plain; charset=utf-8")], f"{exc}\n".encode()), True)
            return
        if request is None:
            head = parser.pending_head
            if head is not None and head is not self._checked_head:
                self._checked_head = head
                early = self.server.handler.check_head(head)
                if early is not None:
                    self._write(early, True)
                    return
                if head.expects_continue and self.transport is not None:
                    self.transport.write(encode_response(100))
            if head is not None:
                self._arm(self.server.idle_timeout, "a body stalled")
            elif parser.started and (self._timer is None or self._timer_reason != "no complete request head"):
                self._arm(self.server.handshake_timeout, "no complete request head")
            return
        self._disarm()
        self._checked_head = None
        if self.transport is not None:
            self.transport.pause_reading()
        self._task = self._loop.create_task(self._handle(request))

    async def _handle(self, request: Request) -> None:
        try:
            response = await self.server.handler.handle(request, self.peer)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug must not leave the connection half-alive, nor reach other clients
            log.exception("HTTP %s %s from %s failed", request.method, request.target[:200], self.peer)
            response = Response(500, [("Content-Type", "text/plain; charset=utf-8")], b"internal error\n", close=True)
        self._task = None
        if self._closing:
            return
        close = response.close or not request.head.keep_alive
        self._write(response, close, head_only=request.method == "HEAD")
        if close or self.transport is None:
            return
        self.transport.resume_reading()
        if self.parser.started:
            self._next()
        else:
            self._arm(self.server.idle_timeout, "idle")

    def _write(self, response: Response, close: bool, *, head_only: bool = False) -> None:
        transport = self.transport
        if transport is None or self._closing:
            return
        try:
            data = encode_response(
                response.status, response.headers, response.body, head_only=head_only, close=close or response.close
            )
        except ValueError:
            log.exception("an HTTP response that cannot be written")
            data = encode_response(500, (), b"", close=True)
            close = True
        transport.write(data)
        if close or response.close:
            self._closing = True
            self._disarm()
            transport.close()

    # -- timers -----------------------------------------------------------------------------------------------------

    _timer_reason = ""

    def _arm(self, seconds: float, reason: str) -> None:
        self._disarm()
        if seconds > 0:
            self._timer_reason = reason
            self._timer = self._loop.call_later(seconds, self._expired, reason)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self, reason: str) -> None:
        self._timer = None
        if self._closing or self._task is not None:
            return
        log.info("closing HTTP connection from %s: %s", self.peer, reason)
        if self.parser.started:
            self._write(Response(408, [("Content-Type", "text/plain; charset=utf-8")], b"request timeout\n"), True)
        else:
            self.abort()

    def abort(self) -> None:
        if self.transport is not None:
            self._closing = True
            self.transport.abort()


class HttpServer(Listener[_HttpProtocol]):
    """A running HTTP listener. ``url`` is ``http://HOST:PORT/``; ``await close()`` stops it and drops its clients."""

    def __init__(
        self,
        broker: Broker,
        handler: Handler,
        *,
        max_connections: int,
        handshake_timeout: float,
        idle_timeout: float,
        max_body_size: int,
    ) -> None:
        super().__init__()
        self.broker = broker
        self.handler = handler
        self.max_connections = max_connections
        self.handshake_timeout = handshake_timeout
        self.idle_timeout = idle_timeout
        self.max_body_size = max_body_size

    def __repr__(self) -> str:
        return f"<HttpServer {self.url} connections={len(self._connections)}>"

    @property
    def url(self) -> str:
        return self._url("https" if self.tls else "http", "/")

    async def close(self) -> None:
        await self.handler.close()
        await super().close()


async def start_http_server(
    broker: Broker,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    handler: Handler | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    max_body_size: int = DEFAULT_MAX_BODY_SIZE,
    sock: socket.socket | Sequence[socket.socket] | None = None,
    ssl: SSLContext | None = None,
) -> HttpServer:
    """Serve ``broker``'s web console, Jolokia (``/api/jolokia/``) and REST message API (``/api/message/``) on
    ``host:port`` (0: a free port, see ``.port``), as ActiveMQ's web module does on 8161.

    Every request logs in with its HTTP basic credentials as the broker's other listeners do; ``max_connections``
    bounds the client sockets of all the broker's listeners together; ``sock`` serves on already bound sockets;
    ``ssl`` makes it HTTPS. ``handler``: what answers (default: the console and ActiveMQ's APIs)."""
    if handler is None:
        from .app import HttpApp

        handler = HttpApp(broker)
    server = HttpServer(
        broker,
        handler,
        max_connections=max_connections,
        handshake_timeout=handshake_timeout,
        idle_timeout=idle_timeout,
        max_body_size=max_body_size,
    )
    await server._listen(
        broker,
        lambda: _HttpProtocol(server),
        host,
        port,
        sock,
        ssl,
        max_connections=max_connections,
        handshake_timeout=handshake_timeout,
        log=log,
    )
    return server
