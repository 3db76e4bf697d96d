"""The STOMP listener: an asyncio server in front of a :class:`~minibroker.Broker` (ActiveMQ's ``stomp://``).

Each TCP connection gets a :class:`~minibroker.plugins.stomp.codec.StompDecoder` and a
:class:`~minibroker.plugins.stomp.converter.StompConverter`; this module only moves bytes and runs timers:

* reads are decoded one frame at a time (the decoder switches version after CONNECTED) and handed to the converter;
* everything the converter produced is written in one ``write`` per event-loop turn (``call_soon`` batching), so a
  burst of dispatches becomes one system call;
* when the socket's buffer is full (``pause_writing``) the converter's auto acks wait, so an ``ack:auto``
  subscription stops at its prefetch window instead of queueing the whole backlog in memory;
* a SEND the broker makes wait (producer flow control) stops the reading: the frames after it wait in the decoder
  and the socket until the broker admits it (or the wait fails), as ActiveMQ blocks a flow-controlled producer;
* a framing error gets an ERROR frame and the connection is closed; a dropped client is a transport failure for the
  broker (``close_connection(id, None)``: what it held comes back redelivered);
* heart-beats and the 30 s CONNECT deadline run on the broker's clock, so a ManualClock drives them in tests.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Sequence
from ssl import SSLContext
from time import perf_counter

from minibroker import Broker
from minibroker._defaults import (
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_TRANSFORMATION_ENTRIES,
    DEFAULT_MAX_WRITE_BUFFER,
    PRE_LOGIN_MAX_FRAME_SIZE,
)
from minibroker.errors import MinibrokerError, RemoteProtocolError
from minibroker.plugins._listening import FRAMES_PER_TURN, TURN_CHECK, TURN_SECONDS, ListenerProtocol, ProtocolListener

from .codec import HEARTBEAT, StompDecoder
from .converter import Authenticator, StompConverter

__all__ = ["CONNECT_TIMEOUT", "DEFAULT_MAX_FRAME_SIZE", "StompServer", "start_stomp_server"]

log = logging.getLogger("minibroker.stomp")

#: the shortest period the listener checks or beats at: a client may ask for 1 ms heart-beats (``heart-beat:0,1``),
#: but 200 such clients would keep a core busy with timers and one-byte writes; the header is still mirrored as
#: ActiveMQ does (docs/fidelity.md, row stomp-heart-beat)
MIN_CHECK_PERIOD = 0.1
#: a heart-beating client is dropped when nothing came for this many of its periods. ActiveMQ drops it after one
#: empty check window; a client whose beats land at the edge of the windows (a few ms after each check) then loses
#: a window now and then to scheduling jitter alone (2 of 20 idle stomp.py clients in 10 s). Checked every period,
#: with the STOMP spec's and stomp.py's 50% grace, an idle healthy client is never dropped and a silent one still goes
#: within two periods.
READ_GRACE = 1.5

#: largest frame accepted; None means ActiveMQ's default: no whole-frame limit, only the command/header/body limits
DEFAULT_MAX_FRAME_SIZE: int | None = None
#: seconds a client has to send CONNECT before the socket is closed (ActiveMQ's default, 30 s)
CONNECT_TIMEOUT = 30.0
#: auto acks sent per write turn before yielding to other connections
_ACK_BATCH = 1000
#: message bytes rendered per flush at most: the rest of a dispatch round waits, unrendered, until the transport has
#: taken these (a window of large messages is never rendered at once for a client that does not read)
_RENDER_BUDGET = 1024 * 1024


class _StompProtocol(ListenerProtocol):
    log = log
    server: StompServer

    def __init__(self, server: StompServer) -> None:
        super().__init__(server)
        # until CONNECTED, only small frames: a stranger cannot make the broker buffer a large partial frame
        self.decoder = StompDecoder(
            role="server",
            max_frame_size=PRE_LOGIN_MAX_FRAME_SIZE
            if server.max_frame_size is None
            else min(server.max_frame_size, PRE_LOGIN_MAX_FRAME_SIZE),
        )
        self.converter: StompConverter | None = None
        self._flush_scheduled = False
        #: the broker-clock time of the last bytes read (the CONNECT counts: as ActiveMQ's first read check does)
        self._clock_now = self.broker.clock.now
        #: the client's heart-beat period, seconds (0: it sends none and is not checked)
        self._read_period = 0.0
        self._written_since_check = False
        self._heartbeats_started = False
        self._registered = False

    # -- the kit's hooks (ListenerProtocol) -------------------------------------------------------------------------

    def _start(self) -> None:
        self.converter = StompConverter(
            self.broker,
            authenticator=self.server.authenticator,
            on_output=self._schedule_flush,
            remote_address=self.remote_address,
        )
        self.converter.render_budget = _RENDER_BUDGET
        self.converter.max_transformation_entries = self.server.max_transformation_entries
        self.converter.max_render_size = self.server.max_frame_size

    def _logged_in(self) -> bool:
        return self.converter is not None and self.converter.connected

    def _release_held(self, error: MinibrokerError | None) -> None:
        if self.converter is not None:
            self.converter.release_held(error)

    def _ended(self) -> None:
        if self.converter is not None:
            self.converter.connection_lost()

    def _deadline_passed(self) -> None:
        self._close()

    def _writable(self) -> None:
        """Auto acks (hence dispatch) waited while the peer did not read: go on."""
        self._schedule_flush()

    # -- input ------------------------------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        converter = self.converter
        assert converter is not None
        self._last_read = self._clock_now()
        try:
            self.decoder.receive_data(data)
        except RemoteProtocolError as exc:
            log.debug("STOMP framing error from %s: %s", converter.remote_address, exc)
            converter.protocol_error(exc)
            self._flush()
            return
        self._handle_input()

    def _handle_input(self) -> None:
        """Hand the decoded frames to the converter, a turn's worth at a time (TakesTurns), until none is left or
        one is held (flow control)."""
        converter = self.converter
        assert converter is not None
        decoder = self.decoder
        try:
            handled = 0
            started = perf_counter()
            while not converter.close_after_output:
                if converter.held_admission is not None:
                    self._hold(converter.held_admission)
                    break
                if handled == FRAMES_PER_TURN or (
                    not handled % TURN_CHECK and handled and perf_counter() - started > TURN_SECONDS
                ):
                    self._give_way()
                    break
                frame = decoder.next_frame()
                if frame is None:
                    break
                handled += 1
                converter.receive_frame(frame)
                decoder.version = converter.version
                if converter.connected and not self._heartbeats_started:
                    self._on_connected()
        except RemoteProtocolError as exc:
            log.debug("STOMP framing error from %s: %s", converter.remote_address, exc)
            converter.protocol_error(exc)
        except Exception:  # a bug (or a failing authenticator) must not leave the connection half-alive
            log.exception("STOMP connection from %s failed", converter.remote_address)
            converter.internal_error()
        self._flush()

    # -- output -----------------------------------------------------------------------------------------------------

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled and not self._closing:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        transport = self.transport
        converter = self.converter
        if transport is None or converter is None or self._closing or transport.is_closing():
            return
        # the auto acks owed, the dispatches waiting to be rendered, then what to write; more: once the transport
        # has taken this
        data, more = converter.flush_output(_ACK_BATCH, self._paused)
        if more:
            self._schedule_flush()
        if data:
            transport.write(data)
            self._written_since_check = True
            if transport.get_write_buffer_size() > self.server.max_write_buffer:
                log.info(
                    "STOMP client %s reads too slowly: %d bytes unsent, disconnecting",
                    converter.remote_address,
                    transport.get_write_buffer_size(),
                )
                self.abort()
                return
        if converter.close_after_output:
            self._close()

    def _close(self) -> None:
        if not self._closing and self.transport is not None:
            self._closing = True
            self.transport.close()

    def _pending_work(self) -> list[str]:
        """What this connection still owes the broker or the client (for ``Broker.settled``)."""
        converter = self.converter
        if converter is None or self._closing:
            return []
        pending = converter.pending_work()
        if self._flush_scheduled:
            pending.append(f"stomp {converter.session_id}: output waiting to be written")
        return pending

    # -- timers -----------------------------------------------------------------------------------------------------

    def _on_connected(self) -> None:
        self._cancel_timers()  # a pending deadline would give virtual time an early, pointless target
        self._heartbeats_started = True
        self.decoder.max_frame_size = self.server.max_frame_size
        converter = self.converter
        assert converter is not None
        if converter.connection_id is not None and not self._registered:
            self._registered = True
            self._register(converter.connection_id, self.abort, self._pending_work)
            if converter.connection is not None:  # what the web console's Connections page shows of it
                converter.connection.context.protocol = "STOMP"
                converter.connection.context.remote_address = converter.remote_address
        send_ms, read_ms = converter.heart_beat
        if send_ms > 0:
            self._every(max(send_ms / 1000.0, MIN_CHECK_PERIOD), self._write_check)
        if read_ms > 0:
            self._read_period = max(read_ms / 1000.0, MIN_CHECK_PERIOD)
            self._every(self._read_period, self._read_check)

    def _every(self, period: float, check: Callable[[], bool]) -> None:
        """Run ``check`` every ``period`` seconds while it returns True. Each firing replaces its own timer in
        ``_timers`` (never appends): a client asking for 1 ms heart-beats must not grow a list per beat."""
        clock = self.broker.clock
        slot = len(self._timers)

        def fire() -> None:
            if self._closing:
                return
            if check():
                self._timers[slot] = clock.call_at(clock.now() + period, fire)

        self._timers.append(clock.call_at(clock.now() + period, fire))

    def _write_check(self) -> bool:
        if not self._written_since_check and self.transport is not None:
            self.transport.write(HEARTBEAT)
        self._written_since_check = False
        return True

    def _read_check(self) -> bool:
        if self._holding is not None:
            return True  # not reading on purpose: a held SEND is not the client's silence
        if self._clock_now() - self._last_read > self._read_period * READ_GRACE:
            converter = self.converter
            log.warning(  # ActiveMQ logs the inactivity close at WARN with the peer's address
                "no heart-beat from %s within a read-check period: closing",
                converter.remote_address if converter else "?",
            )
            self.abort()
            return False
        return True


class StompServer(ProtocolListener[_StompProtocol]):
    """A running STOMP listener. ``url`` is ``stomp://HOST:PORT``; ``await close()`` stops it and drops its clients."""

    protocol_class = _StompProtocol
    scheme = "stomp"
    tls_scheme = "stomp+ssl"

    def __init__(
        self,
        broker: Broker,
        *,
        authenticator: Authenticator | None,
        max_frame_size: int | None,
        connect_timeout: float,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_transformation_entries: int = DEFAULT_MAX_TRANSFORMATION_ENTRIES,
    ) -> None:
        super().__init__(
            broker,
            connect_timeout=connect_timeout,
            max_connections=max_connections,
            max_write_buffer=DEFAULT_MAX_WRITE_BUFFER,
        )
        #: the most map entries a ``transformation`` renders or parses (transformations.py)
        self.max_transformation_entries = max_transformation_entries
        self.authenticator = authenticator
        self.max_frame_size = max_frame_size


async def start_stomp_server(
    broker: Broker,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    authenticator: Authenticator | None = None,
    max_frame_size: int | None = DEFAULT_MAX_FRAME_SIZE,
    connect_timeout: float = CONNECT_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    sock: socket.socket | Sequence[socket.socket] | None = None,
    ssl: SSLContext | None = None,
    max_transformation_entries: int = DEFAULT_MAX_TRANSFORMATION_ENTRIES,
) -> StompServer:
    """Listen for STOMP 1.0/1.1/1.2 clients on ``host:port`` (0: a free port, see ``.port``) for ``broker``.

    ``authenticator(login, passcode)`` checks CONNECT's credentials (None admits everyone, as ActiveMQ without a
    security plugin). ``max_frame_size`` bounds a whole frame in bytes. The server stops with ``await server.close()``
    or when the broker stops. ``sock``: serve on this already bound (and possibly listening) socket, or these sockets,
    instead of binding ``host:port``; the server owns and closes them. ``max_connections`` bounds the client sockets
    open on all the broker's listeners together (native ones included): a socket past it is closed at once.
    ``ssl``: a server-side ``ssl.SSLContext`` makes it a TLS listener (ActiveMQ's ``stomp+ssl://``).
    ``max_transformation_entries``: the most map entries a ``transformation`` renders for a subscriber (past it, or
    past ``max_frame_size`` characters, that subscriber's connection fails, as any rendering that fails) or parses from
    a SEND (past it, the SEND makes ActiveMQ's failed-transformation TextMessage).
    """
    server = StompServer(
        broker,
        authenticator=authenticator,
        max_frame_size=max_frame_size,
        connect_timeout=connect_timeout,
        max_connections=max_connections,
        max_transformation_entries=max_transformation_entries,
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
