"""What every protocol listener in front of a broker does alike (STOMP, MQTT, OpenWire, HTTP): keep its open
connections, let tests wait for their count, drop them all, and stop with the broker; a client socket's life up to
its protocol (a connection slot, the connect deadline, sends held by flow control, the teardown); TLS. The gate
that lets two protocols share one port by their first bytes is ``_protocol_switch.py``. One home, so the listeners
cannot drift apart."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from minibroker._driver.sockets import SocketSlots
from minibroker.errors import MinibrokerError

if TYPE_CHECKING:
    from minibroker import Admission
    from minibroker.clock import TimerHandle

__all__ = [
    "FRAMES_PER_TURN",
    "TURN_CHECK",
    "TURN_SECONDS",
    "AcceptFailures",
    "FailureLog",
    "Listener",
    "ListenerProtocol",
    "ProtocolListener",
    "TakesTurns",
    "TlsGate",
    "serve_tls_or_plain",
]

#: what asyncio's event loop reports when ``accept()`` fails for want of a file descriptor or memory (EMFILE, ENFILE,
#: ENOBUFS, ENOMEM): it stops accepting on that socket and tries again a second later
ACCEPT_OUT_OF_RESOURCES = "socket.accept() out of system resource"

#: frames (MQTT packets) of one connection handled per turn of the event loop. asyncio reads up to 256 KiB at once:
#: 17,000 small MQTT PUBLISHes, which held the loop for half a second and more while a publisher flooded the broker
#: (another client waited 1.5 s). 100 are 1 to 4 ms of work (a retained publish to a new topic costs the most), and
#: a turn costs about 3 us (reading paused, then resumed). The native protocol's connections (plugins/server) take
#: the same turns, by letting the loop run between them
FRAMES_PER_TURN = 100
#: ... and a turn lasts at most this long (the clock read every TURN_CHECK frames, about 0.1% of a frame's cost): a
#: frame's cost varies (a persistent send is a store transaction, a SUBSCRIBE may dispatch a backlog), and on a loaded
#: machine 1,000 native sends took 40-60 ms (issue 41)
TURN_SECONDS = 0.010
TURN_CHECK = 32


class TakesTurns:
    """A protocol that hands the frames it has read to the broker in turns: past :data:`FRAMES_PER_TURN`, it stops
    reading and handles the rest in a later turn of the loop, after what other clients sent meanwhile, as ActiveMQ's
    thread per connection lets every client go on. Its subclass handles its input in ``_handle_input`` and calls
    :meth:`_give_way` when it has handled a turn's worth; reading resumes through :meth:`_resume_reading`, which
    also waits for flow control (``_holding``) and the peer's reading (``_paused``)."""

    transport: asyncio.Transport | None
    _loop: asyncio.AbstractEventLoop
    _closing: bool
    _paused: bool
    _holding: asyncio.Task[None] | None
    _turn_waits = False

    def _handle_input(self) -> None:
        raise NotImplementedError

    def _give_way(self) -> None:
        """Handle the rest of what was read in the next turn, reading nothing more meanwhile."""
        if not self._turn_waits and self.transport is not None:
            self._turn_waits = True
            self.transport.pause_reading()
            self._loop.call_soon(self._next_turn)

    def _next_turn(self) -> None:
        self._turn_waits = False
        if self._closing:
            return
        self._handle_input()
        self._resume_reading()

    def _resume_reading(self) -> None:
        """Read again unless a turn, a held frame (flow control) or a peer that does not read (TCP back-pressure)
        still waits."""
        if not (self._turn_waits or self._holding is not None or self._paused or self._closing) and self.transport:
            self.transport.resume_reading()


class ListenerProtocol(TakesTurns, asyncio.Protocol):
    """One client socket of a protocol listener (STOMP, MQTT, OpenWire): what their sockets' lives have alike, so each
    listener keeps only its protocol. The socket holds one of the broker's connection slots from accept
    (``max_connections``: past it, closed at once, as ActiveMQ's ``maximumConnections``), has ``connect_timeout``
    (broker's clock) to log in, stops being read while the broker holds one of its sends (producer flow control, as
    ActiveMQ blocks such a producer's connection) or while its peer does not read, and ends, when the socket goes,
    as a transport failure for the broker.

    A subclass makes its converter in :meth:`_start`, says whether it is logged in (:meth:`_logged_in`), hands a held
    send's outcome to its converter (:meth:`_release_held`) and tells it the socket went (:meth:`_ended`)."""

    #: the listener's logger
    log: ClassVar[logging.Logger]
    #: the frame that logs a client in, for the line a missed connect deadline logs
    login_frame: ClassVar[str] = "CONNECT"

    def __init__(self, server: Any) -> None:
        self.server = server
        self.broker = server.broker
        self.transport: asyncio.Transport | None = None
        #: ``tcp://host:port`` of the peer, once connected
        self.remote_address = ""
        self._closing = False
        self._paused = False
        #: this socket holds one of the broker's slots (released when it goes)
        self._claimed = False
        #: the connect deadline first; a subclass replaces it by its own timers once the client logged in
        self._timers: list[TimerHandle] = []
        #: the task awaiting a held send's admission (reading is paused meanwhile)
        self._holding: asyncio.Task[None] | None = None
        self._loop = asyncio.get_running_loop()
        #: the broker-clock time of the last bytes read
        self._last_read = self.broker.clock.now()

    # -- what a protocol adds ----------------------------------------------------------------------------------------

    def _start(self) -> None:
        """The socket holds a slot: make the protocol's converter (``remote_address`` is set)."""
        raise NotImplementedError

    def _logged_in(self) -> bool:
        raise NotImplementedError

    def _release_held(self, error: MinibrokerError | None) -> None:
        """The held send was admitted (``error`` None) or failed waiting."""
        raise NotImplementedError

    def _ended(self) -> None:
        """The socket is gone: the converter tells the broker (a transport failure; what it held comes back)."""
        raise NotImplementedError

    def _writable(self) -> None:
        """The peer reads again (a subclass may write what waited)."""

    # -- the socket's life --------------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if not self.broker.sockets.claim(self.server.max_connections):
            # at WARN, as the native listener and ActiveMQ's TransportConnector log a refused connection
            self.log.warning(
                "refusing %s: %d connections open (max_connections)",
                transport.get_extra_info("peername"),
                self.broker.sockets.open,
            )
            self._closing = True
            transport.abort()
            return
        self._claimed = True
        peer = transport.get_extra_info("peername")
        self.remote_address = f"tcp://{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else str(peer)
        self._start()
        self.server._opened(self)
        clock = self.broker.clock
        self._timers.append(clock.call_at(clock.now() + self.server.connect_timeout, self._connect_deadline))

    def _connect_deadline(self) -> None:
        if not self._logged_in() and not self._closing:
            self.log.warning(
                "no %s from %s in %s s: closing", self.login_frame, self.remote_address, self.server.connect_timeout
            )
            self._deadline_passed()

    def _deadline_passed(self) -> None:
        self.abort()

    def _cancel_timers(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    def _hold(self, admission: Admission) -> None:
        """Read nothing more until the broker admits the held send (or the wait fails)."""
        if self._holding is None and self.transport is not None:
            self.transport.pause_reading()
            self._holding = self._loop.create_task(self._wait_held(admission))

    async def _wait_held(self, admission: Admission) -> None:
        error: MinibrokerError | None = None
        try:
            await admission
        except MinibrokerError as exc:
            error = exc
        self._holding = None
        if self._closing:
            return
        self._release_held(error)
        self._handle_input()  # what came behind the held send (or hold again)
        self._resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._cancel_timers()
        if self._holding is not None:
            self._holding.cancel()
            self._holding = None
        if not self._claimed:
            return
        self._claimed = False
        self.broker.sockets.release()
        try:
            self._ended()
        except MinibrokerError as error:  # the broker stopped first: nothing left to tell it
            self.log.debug("connection of %s ended with %s", self.remote_address, error)
        self.server._closed(self)

    def pause_writing(self) -> None:
        """The peer reads slower than we write: stop reading it too (TCP back-pressure), so a client that never reads
        cannot pile up replies in memory."""
        self._paused = True
        if self.transport is not None and not self._closing:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self._paused = False
        self._resume_reading()
        self._writable()

    def abort(self) -> None:
        """Break the connection now (server shutdown, fault injection, a dead peer)."""
        if self.transport is not None:
            self._closing = True
            self.transport.abort()

    def _register(self, connection_id: int, drop: Callable[[], None], probe: Callable[[], list[str]]) -> None:
        """Logged in as broker connection ``connection_id``: the broker drops it through ``drop`` (fault injection)
        and asks ``probe`` what it still owes (``Broker.settled``)."""
        self.broker.register_dropper(connection_id, drop)
        self.broker.register_probe(connection_id, probe)


class _Connection(Protocol):
    def abort(self) -> None: ...


C = TypeVar("C", bound=_Connection)


class Listener(Generic[C]):
    """A running listener's sockets and connections (a subclass adds its protocol's settings and ``url``)."""

    #: where it listens (the first bound address), and whether it speaks TLS: set by :meth:`_listen`
    host: str = ""
    port: int = 0
    tls: bool = False

    def _url(self, scheme: str, suffix: str = "") -> str:
        """``scheme://host:port`` + ``suffix`` where this listener answers (an IPv6 literal in brackets, as the TCP
        URL has it)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}{suffix}"

    def __init__(self) -> None:
        #: one per listening socket (a host name can resolve to several addresses); empty once closed
        self._servers: list[asyncio.Server] = []
        #: listening, on sockets of its own or on another listener's port (:meth:`_attach`); False once closed
        self._running = False
        self._connections: set[C] = set()
        self._changed = asyncio.Event()
        #: connections accepted since the start
        self.accepted = 0

    def _make_protocol(self) -> asyncio.BaseProtocol:
        """The protocol of one accepted socket (a subclass's)."""
        raise NotImplementedError

    async def _listen(
        self,
        broker: Any,
        make_protocol: Callable[[], asyncio.BaseProtocol],
        host: str,
        port: int,
        socks: socket.socket | Sequence[socket.socket] | None,
        context: ssl.SSLContext | None,
        *,
        max_connections: int,
        handshake_timeout: float,
        log: logging.Logger,
    ) -> None:
        """Listen, plain or TLS (:func:`serve_tls_or_plain`), note the address bound, and stop with ``broker``."""
        self._servers += await serve_tls_or_plain(
            make_protocol,
            host,
            port,
            socks,
            context,
            sockets=broker.sockets,
            max_connections=max_connections,
            handshake_timeout=handshake_timeout,
            log=log,
        )
        self.tls = context is not None
        self.host, self.port = self._servers[0].sockets[0].getsockname()[:2]
        self._running = True
        broker.on_close(self.broker_stopped)

    def _attach(self, broker: Any, host: str, port: int, tls: bool) -> None:
        """Serve the sockets another listener hands over (a port shared through a :class:`ProtocolSwitch`), with no
        socket of its own: ``url`` names the shared port; :meth:`close` drops this listener's clients only."""
        self.host, self.port, self.tls = host, port, tls
        self._running = True
        broker.on_close(self.broker_stopped)

    @property
    def connection_count(self) -> int:
        """Client connections open now."""
        return len(self._connections)

    def _opened(self, connection: C) -> None:
        self._connections.add(connection)
        self.accepted += 1
        self._notify()

    def _closed(self, connection: C) -> None:
        self._connections.discard(connection)
        self._notify()

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_connection_count(self, count: int, timeout: float = 5.0) -> None:
        """Return once exactly ``count`` clients are connected (``TimeoutError`` after ``timeout`` seconds)."""
        async with asyncio.timeout(timeout):
            while len(self._connections) != count:
                await self._changed.wait()

    def _drop_all(self) -> None:
        for connection in list(self._connections):
            connection.abort()

    def _stop_listening(self) -> list[asyncio.Server]:
        self._running = False
        servers, self._servers = self._servers, []
        for listener in servers:
            listener.close()
        return servers

    def broker_stopped(self) -> None:
        """The broker stopped first: stop listening and drop every client."""
        self._stop_listening()
        self._drop_all()

    async def close(self) -> None:
        """Stop accepting, drop every client (a transport failure for the broker), wait for them to be gone."""
        if not self._running:
            return
        servers = self._stop_listening()
        self._drop_all()
        await self.wait_connection_count(0)
        for listener in servers:
            await listener.wait_closed()

    async def __aenter__(self: ListenerT) -> ListenerT:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


ListenerT = TypeVar("ListenerT", bound="Listener[Any]")

P = TypeVar("P", bound=ListenerProtocol)


class ProtocolListener(Listener[P]):
    """A listener whose sockets are :class:`ListenerProtocol` s (STOMP, MQTT, OpenWire): the settings the kit reads,
    its URL (``scheme``, ``tls_scheme`` with TLS) and the count of sockets not logged in yet."""

    #: the protocol of each accepted socket, and the URL schemes of the listener, plain and with TLS
    protocol_class: type[P]
    scheme: ClassVar[str]
    tls_scheme: ClassVar[str]

    def __init__(self, broker: Any, *, connect_timeout: float, max_connections: int, max_write_buffer: int) -> None:
        super().__init__()
        self.broker = broker
        #: seconds (broker's clock) a socket has to log in
        self.connect_timeout = connect_timeout
        #: refuse a socket once this many are open on all the broker's listeners together
        self.max_connections = max_connections
        #: disconnect a client once this many bytes wait unsent to it
        self.max_write_buffer = max_write_buffer

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url} connections={len(self._connections)}>"

    def _make_protocol(self) -> P:
        return self.protocol_class(self)

    @property
    def url(self) -> str:
        return self._url(self.tls_scheme if self.tls else self.scheme)

    @property
    def handshakes_pending(self) -> int:
        """Sockets open but not logged in yet: a virtual clock must not jump to their connect deadline while a real
        peer is a few milliseconds into its handshake (the pytest fixtures hold autojump on this)."""
        return sum(1 for p in self._connections if not p._logged_in())


class TlsGate(asyncio.Protocol):
    """The TLS handshake of one accepted socket, run by the listener itself: the socket holds a connection slot
    from accept (a half-open TLS socket counts against ``max_connections`` like any other, so a flood of them can
    neither exhaust the process's file descriptors nor lock the other listeners out), and the handshake has the
    listener's deadline (``handshake_timeout``) instead of asyncio's 60 s. Once it is done, the slot is handed back
    and the listener's own protocol gets the TLS transport (and claims its slot as for a plain socket)."""

    def __init__(
        self,
        sockets: SocketSlots,
        max_connections: int,
        context: ssl.SSLContext,
        handshake_timeout: float,
        make_protocol: Callable[[], asyncio.BaseProtocol],
        failures: FailureLog,
    ) -> None:
        self._sockets = sockets
        self._max_connections = max_connections
        self._context = context
        self._timeout = handshake_timeout
        self._make_protocol = make_protocol
        self._failures = failures
        self._claimed = False
        self._task: asyncio.Task[None] | None = None
        #: what the peer sent right after the handshake, before the listener's protocol took over
        self._early: list[bytes] = []
        self._early_eof = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        if not self._sockets.claim(self._max_connections):
            self._failures.note(f"refusing {transport.get_extra_info('peername')}: {self._sockets.open} open")
            transport.abort()
            return
        self._claimed = True
        self._task = asyncio.get_running_loop().create_task(self._handshake(transport))

    async def _handshake(self, transport: asyncio.Transport) -> None:
        loop = asyncio.get_running_loop()
        try:
            tls = await loop.start_tls(
                transport, self, self._context, server_side=True, ssl_handshake_timeout=self._timeout
            )
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError) as exc:
            self._failures.note(f"TLS handshake with {transport.get_extra_info('peername')} failed: {exc!r}")
            self._release()
            transport.abort()
            return
        self._release()
        if tls is None:  # the peer went away as the handshake ended
            return
        protocol = self._make_protocol()
        tls.set_protocol(protocol)
        protocol.connection_made(tls)
        if self._early and isinstance(protocol, asyncio.Protocol):
            for data in self._early:
                protocol.data_received(data)
            self._early.clear()
        if self._early_eof and isinstance(protocol, asyncio.Protocol):
            protocol.eof_received()

    def data_received(self, data: bytes) -> None:
        self._early.append(data)

    def eof_received(self) -> bool | None:
        self._early_eof = True
        return True

    def _release(self) -> None:
        if self._claimed:
            self._claimed = False
            self._sockets.release()

    def connection_lost(self, exc: Exception | None) -> None:
        self._release()


class FailureLog:
    """Refused sockets and failed handshakes, logged at most once per ``interval`` seconds with the count since the
    last line: a flood of them is one line every few seconds, not one per attempt."""

    def __init__(self, log: logging.Logger, interval: float = 10.0) -> None:
        self._log = log
        self._interval = interval
        self._last = -interval
        self._since = 0

    def note(self, what: str) -> None:
        self._since += 1
        now = time.monotonic()
        if now - self._last >= self._interval:
            more = f" ({self._since - 1} more since the last report)" if self._since > 1 else ""
            self._log.warning("%s%s", what, more)
            self._last = now
            self._since = 0


class AcceptFailures:
    """The loop's exception handler while listeners run. asyncio reports every accept that failed for want of a file
    descriptor with a traceback, once a second for every listening socket for as long as it lasts (four listeners:
    four tracebacks a second); here that is one warning per :class:`FailureLog` interval with the count since.
    Anything else goes on to the handler that was there before."""

    __slots__ = ("_failures", "_previous")

    def __init__(self, previous: Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object] | None) -> None:
        self._previous = previous
        self._failures = FailureLog(logging.getLogger("minibroker.listening"))

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") == ACCEPT_OUT_OF_RESOURCES:
            self._failures.note(
                f"cannot accept connections: {context.get('exception')}; they wait in the listen backlog and "
                "accepting is tried again every second"
            )
        elif self._previous is not None:
            self._previous(loop, context)
        else:
            loop.default_exception_handler(context)

    @classmethod
    def install(cls, loop: asyncio.AbstractEventLoop) -> None:
        """Put one in front of ``loop``'s exception handler (once per loop)."""
        handler = loop.get_exception_handler()
        if not isinstance(handler, cls):
            loop.set_exception_handler(cls(handler))


async def serve_tls_or_plain(
    make_protocol: Callable[[], asyncio.BaseProtocol],
    host: str,
    port: int,
    socks: socket.socket | Sequence[socket.socket] | None,
    context: ssl.SSLContext | None,
    *,
    sockets: SocketSlots,
    max_connections: int,
    handshake_timeout: float,
    log: logging.Logger,
) -> list[asyncio.Server]:
    """Listening servers for ``make_protocol``, plain or TLS through a :class:`TlsGate` per accepted socket: one per
    socket given (already bound: ``serve --fd``, tests), or one on ``host``:``port`` when none is."""
    loop = asyncio.get_running_loop()
    AcceptFailures.install(loop)
    if context is None:
        factory = make_protocol
    else:
        failures = FailureLog(log)

        def factory() -> asyncio.BaseProtocol:
            return TlsGate(sockets, max_connections, context, handshake_timeout, make_protocol, failures)

    given = [socks] if isinstance(socks, socket.socket) else list(socks or ())
    if not given:
        return [await loop.create_server(factory, host, port)]
    return [await loop.create_server(factory, sock=sock) for sock in given]
