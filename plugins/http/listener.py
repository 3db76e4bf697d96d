"""The HTTP listener: an asyncio server in front of a :class:`~minibroker.Broker` (ActiveMQ's Jetty on port 8161).

Each socket gets a :class:`~minibroker.plugins.http.parser.RequestParser`; this module moves bytes, runs the timers
and hands each complete request to the :class:`Handler` (the console, Jolokia and the REST API, in ``app.py``):

* one request at a time per connection: pipelined requests wait until the answer before them is written (at most
  :data:`PIPELINE_BUFFER` bytes of them are read meanwhile, the rest waits in the socket, not in memory);
* a request's head must arrive within ``handshake_timeout`` seconds of its first byte (or of the accept), its body
  within ``body_timeout`` seconds of its head (a deadline for the whole body, not re-armed by each byte: a client
  sending a byte every few seconds is closed all the same), and a connection silent for ``idle_timeout`` seconds
  between requests is closed;
* a head the handler refuses before its body (a wrong login) is answered at once, without reading the body; an
  ``Expect: 100-continue`` is answered once the head is accepted;
* while a request is handled the socket is still read (up to that bound), so a client that goes away during a
  long poll is seen at once: the handler is told (``gone``), and an answer that could not reach it is settled as
  not written (:attr:`Response.settle`: a REST message it held goes back to its queue, issue 41);
* a refused request (:class:`~minibroker.plugins.http.parser.BadRequest`) gets its 4xx status and the connection is
  closed; a handler bug gets a 500 and harms no other connection;
* the listener has its own socket slots (``max_connections`` HTTP sockets at most), apart from the other
  listeners': browsers and idle keep-alive sockets can never lock native, STOMP or MQTT clients out (issue 41).

Timers run on the event loop's clock, not the broker's: they are about the network (a test's virtual hour must not
close its HTTP clients).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Sequence
from ssl import SSLContext
from typing import TYPE_CHECKING, Protocol

import attrs

from minibroker._defaults import DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_IDLE_TIMEOUT
from minibroker._driver.sockets import SocketSlots
from minibroker.plugins._listening import FailureLog, Listener

from .parser import DEFAULT_MAX_BODY_SIZE, BadRequest, Request, RequestHead, RequestParser, encode_response

if TYPE_CHECKING:
    from minibroker import Broker

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HTTP_MAX_CONNECTIONS",
    "PIPELINE_BUFFER",
    "SAFE_HEADERS",
    "Handler",
    "HttpServer",
    "Response",
    "start_http_server",
]

log = logging.getLogger("minibroker.http")

#: HTTP sockets open at most (the HTTP listener's own count, apart from the other listeners' ``max_connections``)
DEFAULT_HTTP_MAX_CONNECTIONS = 256
#: seconds a request's whole body may take to arrive, from its head
DEFAULT_BODY_TIMEOUT = 30.0
#: bytes of the next requests read while one is handled; past this, reading pauses until the answer is written
PIPELINE_BUFFER = 64 * 1024
#: headers on every answer the listener writes itself (its 4xx and 500s): no sniffing, nothing runs, no framing
SAFE_HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("Content-Security-Policy", "sandbox; default-src 'none'; frame-ancestors 'none'"),
)


@attrs.define(slots=True)
class Response:
    """What a handler answers: status, headers (Content-Length is added) and body; ``close`` ends the connection."""

    status: int
    headers: list[tuple[str, str]] = attrs.field(factory=list)
    body: bytes = b""
    close: bool = False
    #: called once the answer is settled: True when it was written to a client still there, False when it could
    #: not be (the client went, or half-closed before it); a REST answer acks its message only then
    settle: Callable[[bool], None] | None = None


class Handler(Protocol):
    """What serves the requests (``app.HttpApp``)."""

    def check_head(self, head: RequestHead) -> Response | None:
        """An answer before the body is read (a refused login), or None to read it."""

    async def handle(self, request: Request, peer: str, gone: asyncio.Event | None = None) -> Response:
        """The answer to a complete request; ``gone`` is set when the client goes away meanwhile."""

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
        #: set when the client goes away (or half-closes) while a request is handled
        self._gone = asyncio.Event()
        self._peer_eof = False
        self._paused = False
        self.peer = "?"

    # -- asyncio callbacks ------------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        slots = self.server.slots
        if not slots.claim(self.server.max_connections):
            self.server.refusals.note(
                f"refusing HTTP {transport.get_extra_info('peername')}: {slots.open} HTTP sockets open"
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
        elif self.parser.buffered > PIPELINE_BUFFER and self.transport is not None and not self._paused:
            self._paused = True  # pipelined requests past the bound wait in the socket, not in memory
            self.transport.pause_reading()

    def eof_received(self) -> bool | None:
        # the client half-closed: answer what it sent, then close; an answer it may never read is not settled as
        # written (a long poll's message goes back)
        self._peer_eof = True
        if self._task is None:
            self.abort()
        else:
            self._gone.set()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._gone.set()
        self._disarm()
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._claimed:
            self._claimed = False
            self.server.slots.release()
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
            self._write(Response(status, _plain(), f"{exc}\n".encode()), True)
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
                if self._timer_reason != "a body too slow":  # one deadline for the whole body, not per byte
                    self._arm(self.server.body_timeout, "a body too slow")
            elif parser.started and (self._timer is None or self._timer_reason != "no complete request head"):
                self._arm(self.server.handshake_timeout, "no complete request head")
            return
        self._disarm()
        self._timer_reason = ""
        self._checked_head = None
        self._task = self._loop.create_task(self._handle(request))

    async def _handle(self, request: Request) -> None:
        try:
            response = await self.server.handler.handle(request, self.peer, self._gone)
        except asyncio.CancelledError:
            raise
        except Exception:  # a bug must not leave the connection half-alive, nor reach other clients
            log.exception("HTTP %s %s from %s failed", request.method, request.target[:200], self.peer)
            response = Response(500, _plain(), b"internal error\n", close=True)
        self._task = None
        head_only = request.method == "HEAD"
        if self._closing:
            _settle(response, False)
            return
        close = response.close or not request.head.keep_alive or self._peer_eof
        written = self._write(response, close, head_only=head_only)
        _settle(response, written and not head_only and not self._peer_eof)
        if close or self.transport is None:
            return
        if self._paused:
            self._paused = False
            self.transport.resume_reading()
        if self.parser.started:
            self._next()
        else:
            self._arm(self.server.idle_timeout, "idle")

    def _write(self, response: Response, close: bool, *, head_only: bool = False) -> bool:
        """Write an answer; False when it was not (the client is gone, or a 500 went instead of it)."""
        transport = self.transport
        if transport is None or self._closing or transport.is_closing():
            return False
        written = True
        try:
            data = encode_response(
                response.status, response.headers, response.body, head_only=head_only, close=close or response.close
            )
        except ValueError:
            log.exception("an HTTP response that cannot be written")
            data = encode_response(500, SAFE_HEADERS, b"", close=True)
            close, written = True, False
        transport.write(data)
        if close or response.close:
            self._closing = True
            self._disarm()
            transport.close()
        return written

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
            self._write(Response(408, _plain(), b"request timeout\n"), True)
        else:
            self.abort()

    def abort(self) -> None:
        if self.transport is not None:
            self._closing = True
            self.transport.abort()


def _plain() -> list[tuple[str, str]]:
    return [("Content-Type", "text/plain; charset=utf-8"), *SAFE_HEADERS]


def _settle(response: Response, written: bool) -> None:
    if response.settle is not None:
        settle, response.settle = response.settle, None
        try:
            settle(written)
        except Exception:  # a settle that fails must not take the connection with it
            log.exception("settling an HTTP answer failed")


@attrs.frozen(slots=True)
class _OwnSlots:
    """What :meth:`Listener._listen` reads of a broker (its socket slots, its stop hook), with the HTTP listener's
    own slots: its sockets, TLS handshakes included, never count against the other listeners' limit."""

    sockets: SocketSlots
    on_close: Callable[[Callable[[], None]], object]


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
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
    ) -> None:
        super().__init__()
        self.broker = broker
        self.handler = handler
        self.max_connections = max_connections
        self.handshake_timeout = handshake_timeout
        self.idle_timeout = idle_timeout
        self.body_timeout = body_timeout
        self.max_body_size = max_body_size
        #: the HTTP sockets open now (this listener's own count)
        self.slots = SocketSlots()
        self.refusals = FailureLog(log)

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
    max_connections: int = DEFAULT_HTTP_MAX_CONNECTIONS,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    max_body_size: int = DEFAULT_MAX_BODY_SIZE,
    allowed_hosts: Sequence[str] = (),
    sock: socket.socket | Sequence[socket.socket] | None = None,
    ssl: SSLContext | None = None,
) -> HttpServer:
    """Serve ``broker``'s web console, Jolokia (``/api/jolokia/``) and REST message API (``/api/message/``) on
    ``host:port`` (0: a free port, see ``.port``), as ActiveMQ's web module does on 8161.

    Every request logs in with its HTTP basic credentials as the broker's other listeners do; ``max_connections``
    bounds this listener's sockets (its own count, apart from the other listeners'); ``body_timeout`` is the
    deadline of a request's whole body; ``allowed_hosts``: the names, besides loopback ones, IP addresses, this
    machine's name and ``host``, a request's ``Host`` may give (``"*"``: any; see ``app.py``); ``sock`` serves on
    already bound sockets; ``ssl`` makes it HTTPS. ``handler``: what answers (default: the console and ActiveMQ's
    APIs)."""
    from .app import HttpApp

    if handler is None:
        handler = HttpApp(broker, allowed_hosts=allowed_hosts)
    server = HttpServer(
        broker,
        handler,
        max_connections=max_connections,
        handshake_timeout=handshake_timeout,
        idle_timeout=idle_timeout,
        max_body_size=max_body_size,
        body_timeout=body_timeout,
    )
    await server._listen(
        _OwnSlots(server.slots, broker.on_close),
        lambda: _HttpProtocol(server),
        host,
        port,
        sock,
        ssl,
        max_connections=max_connections,
        handshake_timeout=handshake_timeout,
        log=log,
    )
    if isinstance(handler, HttpApp):
        handler.serving_on(host, str(server.host))
    return server
