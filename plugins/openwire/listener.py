"""The OpenWire listener: an asyncio server in front of a :class:`~minibroker.Broker` (ActiveMQ's ``tcp://``).

Each TCP connection gets an :class:`~.codec.OpenWireDecoder` and an :class:`~.converter.OpenWireConverter`; this
module moves bytes and runs the timers, on the broker's clock:

* the server's WireFormatInfo goes out as the socket opens; a socket that sends none within ``connect_timeout`` is
  closed (ActiveMQ's ``wireFormat.maxInactivityDurationInitalDelay`` grace, then its read check);
* inactivity as negotiated: nothing read for ``maxInactivityDuration`` drops the client (ActiveMQ's read check), and
  a KeepAliveInfo goes out after a third of it without a write, so the client's own read check stays content;
* what the converter writes in one event-loop turn goes out in one ``write``; a client that does not read is not
  read either (TCP back-pressure), and is dropped once too much waits unsent to it;
* a send the broker makes wait (producer flow control) stops the reading until it is admitted;
* frames are handled in turns, slots claimed, held sends waited for and the socket's end told to the broker by
  the listener kit (:class:`~minibroker.plugins._listening.ListenerProtocol`), as in the other listeners.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Sequence
from ssl import SSLContext

import attrs

from minibroker import Broker
from minibroker._defaults import DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_WRITE_BUFFER, PRE_LOGIN_MAX_FRAME_SIZE
from minibroker.errors import MinibrokerError, RemoteProtocolError
from minibroker.plugins._listening import FRAMES_PER_TURN, ListenerProtocol, ProtocolListener

from .codec import OpenWireDecoder, WireFormat, encode_command
from .converter import MAX_INACTIVITY_MS, OpenWireConverter

__all__ = ["CONNECT_TIMEOUT", "DEFAULT_MAX_FRAME_SIZE", "OpenWireServer", "start_openwire_server"]

log = logging.getLogger("minibroker.openwire")

#: seconds a socket has to send its WireFormatInfo and ConnectionInfo (ActiveMQ's initial inactivity delay + check)
CONNECT_TIMEOUT = 30.0
#: ActiveMQ's ``wireFormat.maxFrameSize`` default for its transport connectors (100 MiB)
DEFAULT_MAX_FRAME_SIZE = 104_857_600


class _OpenWireProtocol(ListenerProtocol):
    log = log
    login_frame = "ConnectionInfo"
    server: OpenWireServer

    def __init__(self, server: OpenWireServer) -> None:
        super().__init__(server)
        self.decoder = OpenWireDecoder(WireFormat(max_frame_size=min(server.max_frame_size, PRE_LOGIN_MAX_FRAME_SIZE)))
        self.converter: OpenWireConverter | None = None
        self._out = bytearray()
        self._flush_scheduled = False
        self._registered = False
        self._last_write = self._last_read

    # -- the kit's hooks (ListenerProtocol) -------------------------------------------------------------------------

    def _start(self) -> None:
        self.converter = OpenWireConverter(
            self.broker,
            on_output=self._schedule_flush,
            remote_address=self.remote_address,
            broker_url=self.server.url,
            max_frame_size=self.server.max_frame_size,
            max_inactivity_ms=self.server.max_inactivity_ms,
        )
        self._write(encode_command(self.converter.hello(), self.converter.fmt))

    def _logged_in(self) -> bool:
        return self.converter is not None and self.converter.connection is not None

    def _release_held(self, error: MinibrokerError | None) -> None:
        if self.converter is not None:
            self.converter.release_held(error)

    def _ended(self) -> None:
        if self.converter is not None:
            self.converter.connection_lost()

    # -- input ------------------------------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        self._last_read = self.broker.clock.now()
        self.decoder.receive_data(data)
        self._handle_input()

    def _handle_input(self) -> None:
        """The commands read so far, a turn's worth at a time (TakesTurns), until one is held (flow control)."""
        converter = self.converter
        assert converter is not None
        try:
            handled = 0
            while not self._closing and converter.held is None and not converter.close_after_output:
                if handled == FRAMES_PER_TURN:
                    self._give_way()
                    break
                command = self.decoder.next_command()
                if command is None:
                    break
                handled += 1
                was_negotiated = converter.negotiated
                converter.receive(command)
                if converter.negotiated and not was_negotiated:  # the agreed format, the pre-login frame bound
                    limit = min(converter.fmt.max_frame_size, PRE_LOGIN_MAX_FRAME_SIZE)
                    self.decoder.fmt = attrs.evolve(converter.fmt, max_frame_size=limit)
                if converter.connection is not None and not self._registered:
                    self._on_connected()
            if converter.held is not None:
                self._hold(converter.held)
        except RemoteProtocolError as exc:
            converter.protocol_error(exc)
        except Exception:  # a bug must not leave the connection half-alive, nor reach other clients
            log.exception("OpenWire connection from %s failed", converter.remote_address)
            converter.internal_error()
        # written now, not on the loop's next turn: a synchronous send's Response goes out one epoll round sooner
        # (what a persistent producer waits for between sends); the commands of one read still make one write
        self._flush()

    # -- output -----------------------------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        self._out += data
        self._schedule_flush()

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled and not self._closing:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        converter = self.converter
        transport = self.transport
        if converter is not None and converter.has_output:
            self._out += converter.data_to_send()
        if transport is None or transport.is_closing():
            return
        if self._out:
            transport.write(bytes(self._out))
            self._out.clear()
            self._last_write = self.broker.clock.now()
            if transport.get_write_buffer_size() > self.server.max_write_buffer:
                log.info(
                    "OpenWire client reads too slowly: %d bytes unsent, disconnecting",
                    transport.get_write_buffer_size(),
                )
                self.abort()
                return
        if converter is not None and converter.close_after_output and not self._closing:
            self._closing = True
            transport.close()

    # -- timers -----------------------------------------------------------------------------------------------------

    def _on_connected(self) -> None:
        converter = self.converter
        assert converter is not None and converter.connection is not None
        self._registered = True
        self._cancel_timers()
        self.decoder.fmt.max_frame_size = converter.fmt.max_frame_size
        self._register(converter.connection.connection_id, self.abort, converter.pending_work)
        if converter.max_inactivity_ms > 0:
            self._schedule_inactivity(converter.max_inactivity_ms / 1000.0)

    def _schedule_inactivity(self, period: float) -> None:
        """ActiveMQ's InactivityMonitor: the read check every ``period``, the write check every third of it."""
        clock = self.broker.clock
        write_every = period / 3

        def check() -> None:
            if self._closing:
                return
            now = clock.now()
            if self._holding is None and now - self._last_read >= period:
                log.info("OpenWire client %s inactive for %s s: closing", self.converter, period)
                self.abort()
                return
            converter = self.converter
            if converter is not None and now - self._last_write >= write_every * 0.9:
                from .commands import KeepAliveInfo

                self._write(encode_command(KeepAliveInfo(), converter.fmt))
            self._timers[:] = [clock.call_at(now + write_every, check)]

        self._timers.append(clock.call_at(clock.now() + write_every, check))


class OpenWireServer(ProtocolListener[_OpenWireProtocol]):
    """A running OpenWire listener. ``url`` is ``tcp://HOST:PORT`` (``ssl://`` with TLS), what ActiveMQ's
    ``ActiveMQConnectionFactory`` takes; ``await close()`` stops it and drops its clients."""

    protocol_class = _OpenWireProtocol
    scheme = "tcp"
    tls_scheme = "ssl"

    def __init__(
        self,
        broker: Broker,
        *,
        max_frame_size: int,
        connect_timeout: float,
        max_connections: int,
        max_inactivity_ms: int,
    ) -> None:
        super().__init__(
            broker,
            connect_timeout=connect_timeout,
            max_connections=max_connections,
            max_write_buffer=DEFAULT_MAX_WRITE_BUFFER,
        )
        self.max_frame_size = max_frame_size
        self.max_inactivity_ms = max_inactivity_ms

    @property
    def keep_alive_clients(self) -> int:
        """Logged-in clients with inactivity checks: their KeepAliveInfos come in real time, so a virtual clock must
        not jump over the read checks (as for MQTT's keep-alive clients, the pytest fixture's autojump should wait)."""
        return sum(
            1
            for p in self._connections
            if p.converter is not None and p.converter.connection is not None and p.converter.max_inactivity_ms > 0
        )


async def start_openwire_server(
    broker: Broker,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    connect_timeout: float = CONNECT_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_inactivity_ms: int = MAX_INACTIVITY_MS,
    sock: socket.socket | Sequence[socket.socket] | None = None,
    ssl: SSLContext | None = None,
) -> OpenWireServer:
    """Listen for ActiveMQ's OpenWire clients (the JMS client's ``tcp://host:port``) on ``host:port`` (0: a free
    port, see ``.port``) for ``broker``.

    ``max_frame_size`` bounds a frame (negotiated down to the client's); ``max_connections`` bounds the client
    sockets of all the broker's listeners together; ``max_inactivity_ms`` is the inactivity the server offers (0:
    no checks); ``sock`` serves on already bound sockets; ``ssl`` makes it an ``ssl://`` listener. Credentials in
    ConnectionInfo go to the broker's security plugin, if it has one.
    """
    server = OpenWireServer(
        broker,
        max_frame_size=max_frame_size,
        connect_timeout=connect_timeout,
        max_connections=max_connections,
        max_inactivity_ms=max_inactivity_ms,
    )
    await server._listen(
        broker,
        server._make_protocol,
        host,
        port,
        sock,
        ssl,
        max_connections=max_connections,
        handshake_timeout=server.connect_timeout,
        log=log,
    )
    return server
