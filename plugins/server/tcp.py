"""The TCP edge of the broker: the listener (``tcp://``, ``ssl://``) and its clients' lifetime.

Each accepted socket becomes a :class:`~minibroker.plugins.server.connection.ClientConnection`, which logs in as a
broker connection and speaks :mod:`minibroker.wire`; this module accepts, counts (``max_connections``, shared with
the other listeners), refuses, and closes.

With ``openwire=True`` (what ``minibroker serve`` does) the port also serves ActiveMQ's JMS client, as ActiveMQ's
61616 does: a :class:`~minibroker.plugins._listening.ProtocolSwitch` reads each client's first bytes (both protocols'
clients speak first: a native HANDSHAKE, an OpenWire WireFormatInfo) and hands the socket to the protocol they name.
The OpenWire side is imported and made on its first client, so a broker no Java client talks to never pays for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Sequence
from ssl import SSLContext
from types import TracebackType
from typing import TYPE_CHECKING

from minibroker import Broker
from minibroker._defaults import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_FRAME_SIZE,
    check_limits,
)
from minibroker.errors import (
    BrokerClosed,
    LimitExceeded,
    MinibrokerError,
)
from minibroker.plugins._listening import serve_tls_or_plain
from minibroker.plugins._protocol_switch import ProtocolSwitch, Route
from minibroker.wire.encoded import EncodedMessages

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_FRAME_SIZE",
    "NATIVE_SIGNATURE",
    "OPENWIRE_SIGNATURE",
    "Server",
    "start_server",
]

if TYPE_CHECKING:
    from minibroker.plugins.openwire import OpenWireServer

    from .connection import ClientConnection

log = logging.getLogger("minibroker.server")

#: where a client's first frame says which protocol it speaks: after its 4-byte size, the frame's type and magic
SIGNATURE_OFFSET = 4
#: the native HANDSHAKE frame (type 0x01, ``MBRK``: minibroker.wire)
NATIVE_SIGNATURE = b"\x01MBRK"  # bytes([FrameType.HANDSHAKE]) + MAGIC, spelt out: the codec loads with a client
#: OpenWire's WireFormatInfo (type 1, ``ActiveMQ``): what ActiveMQ's ``auto`` transport recognises OpenWire by
OPENWIRE_SIGNATURE = b"\x01ActiveMQ"

#: seconds a closing server waits for its clients to read their last frames before it cuts their sockets
_CLOSE_GRACE = 1.0


class Server:
    """A running TCP listener for one broker. ``url`` is what clients pass to ``connect()``."""

    def __init__(
        self,
        broker: Broker,
        *,
        max_frame_size: int,
        max_connections: int,
        handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.broker = broker
        self.idle_timeout = idle_timeout
        #: a server-side TLS context: the listener speaks TLS (``ssl://``)
        self.ssl: SSLContext | None = None
        self.handshake_timeout = handshake_timeout
        self.max_frame_size = max_frame_size
        self.max_connections = max_connections
        self.host = ""
        self.port = 0
        #: one per listening socket (a host name can resolve to several addresses)
        self._servers: list[asyncio.Server] = []
        self._connections: set[ClientConnection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False
        self._closed = asyncio.Event()
        #: the encoding of recently sent messages, shared by every connection: a dispatch copies it
        self.encoded = EncodedMessages()
        #: the port also serves OpenWire (``start_server(openwire=True)``): its first bytes tell a client's protocol
        self.shares_openwire = False
        self._switch: ProtocolSwitch | None = None
        self._openwire: OpenWireServer | None = None

    def __repr__(self) -> str:
        return f"<Server {self.url} connections={len(self._connections)}>"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'ssl' if self.ssl is not None else 'tcp'}://{host}:{self.port}"

    @property
    def connections(self) -> int:
        return len(self._connections)

    @property
    def openwire(self) -> OpenWireServer | None:
        """The OpenWire side of a shared port (made, and its package imported, on first use), or None when the port
        serves the native protocol alone. Its ``url`` is this port's, ``tcp://`` or ``ssl://``."""
        if not self.shares_openwire:
            return None
        if self._openwire is None:
            from minibroker.plugins.openwire.listener import OpenWireServer

            self._openwire = OpenWireServer(
                self.broker,
                max_frame_size=self.max_frame_size,
                connect_timeout=self.handshake_timeout,
                max_connections=self.max_connections,
                max_inactivity_ms=self.openwire_inactivity_ms,
            )
            self._openwire._attach(self.broker, self.host, self.port, self.ssl is not None)
        return self._openwire

    #: the OpenWire inactivity the shared port offers (ActiveMQ's ``maxInactivityDuration``, 30 s)
    openwire_inactivity_ms = 30_000

    def _openwire_protocol(self) -> asyncio.BaseProtocol:
        openwire = self.openwire
        assert openwire is not None
        return openwire._make_protocol()

    @property
    def handshakes_pending(self) -> int:
        """Sockets whose protocol is not known yet, and OpenWire sockets not logged in (a virtual clock must not jump
        to their deadlines)."""
        gated = len(self._switch.pending) if self._switch is not None else 0
        return gated + (self._openwire.handshakes_pending if self._openwire is not None else 0)

    async def _start(self, host: str, port: int, socks: Sequence[socket.socket]) -> None:
        def make_protocol() -> asyncio.BaseProtocol:
            from .connection import READ_SIZE  # the wire codec loads with the first native client

            return asyncio.StreamReaderProtocol(asyncio.StreamReader(limit=READ_SIZE), self._accept)

        factory: Callable[[], asyncio.BaseProtocol] = make_protocol
        if self.shares_openwire:
            self._switch = ProtocolSwitch(
                [
                    Route("minibroker's native protocol", SIGNATURE_OFFSET, NATIVE_SIGNATURE, make_protocol),
                    Route("OpenWire", SIGNATURE_OFFSET, OPENWIRE_SIGNATURE, self._openwire_protocol),
                ],
                sockets=self.broker.sockets,
                max_connections=self.max_connections,
                clock=self.broker.clock,
                connect_timeout=self.handshake_timeout,
                log=log,
            )
            factory = self._switch
        self._servers += await serve_tls_or_plain(
            factory,
            host,
            port,
            socks,
            self.ssl,
            sockets=self.broker.sockets,
            max_connections=self.max_connections,
            handshake_timeout=self.handshake_timeout,
            log=log,
        )
        sockname = self._servers[0].sockets[0].getsockname()
        self.host, self.port = sockname[0], sockname[1]
        self.broker.on_close(self._broker_stopped)
        log.info("listening on %s", self.url)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if self._closing or self.broker.closed or not self.broker.sockets.claim(self.max_connections):
                if self._closing or self.broker.closed:
                    error: MinibrokerError = BrokerClosed("the broker is stopping")
                else:
                    error = LimitExceeded(
                        f"the broker accepts at most {self.max_connections} connections (native and STOMP together)",
                        maximum=self.max_connections,
                    )
                log.warning("refusing %s: %s", writer.get_extra_info("peername"), error)
                from minibroker.wire.encoders import encode_error, encode_handshake

                writer.write(encode_handshake() + encode_error(0, error.code, str(error), fatal=True))
                writer.close()
                with contextlib.suppress(ConnectionError, OSError):
                    await writer.wait_closed()
                return
            from .connection import ClientConnection

            conn = ClientConnection(self, reader, writer)
            self._connections.add(conn)
            try:
                await conn.run()
            finally:
                self._connections.discard(conn)
                self.broker.sockets.release()
                with contextlib.suppress(ConnectionError, OSError):
                    await writer.wait_closed()
        finally:
            self._tasks.discard(task)

    def _broker_stopped(self) -> None:
        """The broker stopped: stop listening and close every client connection (``wait_closed()`` then returns)."""
        self._closing = True
        for listener in self._servers:
            listener.close()
        if self._switch is not None:
            self._switch.drop_pending()
        for conn in list(self._connections):
            conn.abort(BrokerClosed("the broker stopped"))

    async def close(self) -> None:
        """Stop accepting, close every client connection (a fatal ERROR frame says why), wait until they are gone."""
        if not self._closing:
            self._closing = True
            for listener in self._servers:
                listener.close()
            if self._switch is not None:
                self._switch.drop_pending()
            if self._openwire is not None:
                await self._openwire.close()
            for conn in list(self._connections):
                conn.abort(BrokerClosed("the broker is shutting down"))
            # a socket closes once the peer has read what was written to it: one that does not read is cut
            closed = asyncio.ensure_future(self.wait_closed())
            done, _ = await asyncio.wait({closed}, timeout=_CLOSE_GRACE)
            if not done:
                for conn in list(self._connections):
                    conn.transport.abort()
            await closed
            return
        await self.wait_closed()

    async def wait_closed(self) -> None:
        """Wait until the server is closed (by ``close()``) and every client handler has finished."""
        if not self._closing:
            await self._closed.wait()
        for listener in self._servers:
            await listener.wait_closed()
        while self._tasks:
            await asyncio.wait(list(self._tasks))
        self._closed.set()

    async def __aenter__(self) -> Server:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


async def start_server(
    broker: Broker,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    sock: socket.socket | Sequence[socket.socket] | None = None,
    ssl: SSLContext | None = None,
    openwire: bool = False,
) -> Server:
    """Listen on ``host``:``port`` (0: a free port, see ``server.port``) for clients of ``broker``.

    ``sock``: serve on this already bound (and possibly listening) socket, or these sockets, instead of binding
    ``host``:``port``; the server owns and closes them. ``minibroker serve`` binds before it imports the broker, so
    that clients can connect (and wait in the backlog) while it starts. ``handshake_timeout``: seconds (broker's
    clock) a client has to send HELLO before its socket is closed; ``idle_timeout``: real seconds a connection may
    stay silent (clients send KEEP_ALIVE every 10 s) before it is closed, 0 for never. ``ssl``: a server-side
    ``ssl.SSLContext`` makes it a TLS listener (ActiveMQ's ``ssl://``; clients ``connect("ssl://HOST:PORT",
    ssl=...)``). ``openwire``: the port also serves ActiveMQ's JMS client (OpenWire, ``server.openwire``), told apart
    by each client's first bytes; it shares ``max_frame_size``, and ``handshake_timeout`` bounds both the wait for
    those bytes and the OpenWire login."""
    check_limits(max_frame_size, max_connections)
    server = Server(
        broker,
        max_frame_size=max_frame_size,
        max_connections=max_connections,
        handshake_timeout=handshake_timeout,
        idle_timeout=idle_timeout,
    )
    server.ssl = ssl
    server.shares_openwire = openwire
    await server._start(host, port, [sock] if isinstance(sock, socket.socket) else list(sock or ()))
    return server
