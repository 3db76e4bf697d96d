"""The MQTT listener: an asyncio server in front of a :class:`~minibroker.Broker` (ActiveMQ's ``mqtt://``).

Each TCP connection gets an :class:`~minibroker.plugins.mqtt.codec.MqttDecoder` and a
:class:`~minibroker.plugins.mqtt.session.MqttSession`; this module moves bytes and runs the timers, on the broker's
clock (a ManualClock drives them in tests):

* a socket has 30 s to send CONNECT (ActiveMQ's connect attempt timeout), and packets before it are kept small;
* a client that asked for a keep-alive is dropped after one and a half periods without a packet (ActiveMQ's read
  check with its 50% grace), which publishes its will;
* what the session writes in one event-loop turn goes out in one ``write``; a client that does not read is not read
  either (TCP back-pressure), and is dropped once too much waits unsent to it;
* a PUBLISH the broker makes wait (producer flow control) stops the reading until it is admitted;
* a malformed packet closes the connection (MQTT has no error packet), as ActiveMQ does, and harms no one else.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Sequence
from ssl import SSLContext

from minibroker import Broker
from minibroker._defaults import DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_WRITE_BUFFER, PRE_LOGIN_MAX_FRAME_SIZE
from minibroker.errors import InvalidConfiguration, MinibrokerError, RemoteProtocolError
from minibroker.plugins._listening import FRAMES_PER_TURN, ListenerProtocol, ProtocolListener

from .codec import MqttDecoder
from .session import STRATEGIES, MqttSession

__all__ = ["CONNECT_TIMEOUT", "DEFAULT_MAX_PACKET_SIZE", "MqttServer", "start_mqtt_server"]

log = logging.getLogger("minibroker.mqtt")

#: seconds a client has to send CONNECT before the socket is closed
CONNECT_TIMEOUT = 30.0
#: ActiveMQ's MQTT ``maxFrameSize`` default (256 MiB)
DEFAULT_MAX_PACKET_SIZE = 268_435_456
#: a silent client is dropped after this many keep-alive periods (ActiveMQ: the period plus a 50% grace)
KEEP_ALIVE_GRACE = 1.5


class _MqttProtocol(ListenerProtocol):
    log = log
    server: MqttServer

    def __init__(self, server: MqttServer) -> None:
        super().__init__(server)
        self.decoder = MqttDecoder(min(server.max_packet_size, PRE_LOGIN_MAX_FRAME_SIZE))
        self.session: MqttSession | None = None
        self._out = bytearray()
        self._flush_scheduled = False

    # -- the kit's hooks (ListenerProtocol) -------------------------------------------------------------------------

    def _start(self) -> None:
        self.session = MqttSession(
            self.broker,
            self._write,
            self._close,
            remote_address=self.remote_address,
            steal_link=self.server._steal,
            subscription_strategy=self.server.subscription_strategy,
            publish_dollar_topics=self.server.publish_dollar_topics,
        )

    def _logged_in(self) -> bool:
        return self.session is not None and self.session.connected

    def _release_held(self, error: MinibrokerError | None) -> None:
        if self.session is not None:
            self.session.release_held(error)

    def _ended(self) -> None:
        session = self.session
        if session is not None and not session.closed:
            session.disconnect(clean=False)

    # -- input ------------------------------------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        self._last_read = self.broker.clock.now()
        self.decoder.receive_data(data)
        self._handle_input()

    def _handle_input(self) -> None:
        """The packets read so far, a turn's worth at a time (TakesTurns), until one is held (flow control)."""
        session = self.session
        assert session is not None
        try:
            handled = 0
            while not self._closing and session.held is None:
                if handled == FRAMES_PER_TURN:
                    self._give_way()
                    break
                packet = self.decoder.next_packet()
                if packet is None:
                    break
                handled += 1
                was_connected = session.connected
                session.receive(packet)
                if session.connected and not was_connected:
                    self._on_connected()
            if session.held is not None:
                self._hold(session.held[0])
            if self._out:  # its answers (PUBACK...) go at once, not after what else the loop has ready (issue 45)
                self._send_out()
        except RemoteProtocolError as exc:
            log.info("MQTT protocol error from %s: %s", session.remote_address, exc)
            self._fail()
        except Exception:  # a bug must not leave the connection half-alive, nor reach other clients
            log.exception("MQTT connection from %s failed", session.remote_address)
            self._fail()

    # -- output -----------------------------------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        self._out += data
        if not self._flush_scheduled and not self._closing:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        session = self.session
        if session is not None and not self._closing:
            try:
                session.run_pending()
            except MinibrokerError as exc:
                log.debug("MQTT acks of %s not applied: %s", session.remote_address, exc)
        self._send_out()

    def _send_out(self) -> None:
        """Write what the session wrote so far, in one write."""
        transport = self.transport
        if transport is None or transport.is_closing() or not self._out:
            return
        transport.write(bytes(self._out))
        self._out.clear()
        if transport.get_write_buffer_size() > self.server.max_write_buffer:
            log.info("MQTT client reads too slowly: %d bytes unsent, disconnecting", transport.get_write_buffer_size())
            self.abort()

    def _close(self) -> None:
        """The session ended the connection: write what is left, then close."""
        self._flush()
        if not self._closing and self.transport is not None:
            self._closing = True
            self.transport.close()

    def _fail(self) -> None:
        session = self.session
        if session is not None and not session.closed:
            session.disconnect(clean=False)
        self.abort()

    # -- timers -----------------------------------------------------------------------------------------------------

    def _on_connected(self) -> None:
        session = self.session
        assert session is not None and session.connection_id is not None
        self._cancel_timers()
        self.decoder.max_packet_size = self.server.max_packet_size
        self._register(session.connection_id, self._fail, session.pending_work)
        if session.connection is not None:  # what the web console's Connections page shows of it
            session.connection.context.protocol = "MQTT"
            session.connection.context.remote_address = session.remote_address
        if session.keep_alive > 0:
            self._schedule_read_check(float(session.keep_alive))

    def _schedule_read_check(self, period: float) -> None:
        clock = self.broker.clock

        def check() -> None:
            if self._closing:
                return
            if self._holding is None and clock.now() - self._last_read >= period * KEEP_ALIVE_GRACE:
                log.info(
                    "MQTT client %s silent for 1.5 keep-alive periods: closing",
                    self.session.client_id if self.session else "?",
                )
                self._fail()
                return
            self._timers[:] = [clock.call_at(clock.now() + period / 2, check)]

        self._timers.append(clock.call_at(clock.now() + period / 2, check))


class MqttServer(ProtocolListener[_MqttProtocol]):
    """A running MQTT listener. ``url`` is ``mqtt://HOST:PORT``; ``await close()`` stops it and drops its clients."""

    protocol_class = _MqttProtocol
    scheme = "mqtt"
    tls_scheme = "mqtt+ssl"

    def __init__(
        self,
        broker: Broker,
        *,
        max_packet_size: int,
        connect_timeout: float,
        max_connections: int,
        subscription_strategy: str = "default",
    ) -> None:
        if subscription_strategy not in STRATEGIES:
            raise InvalidConfiguration(
                f"MQTT subscription strategy {subscription_strategy!r}: one of {', '.join(STRATEGIES)}",
                key="subscription_strategy",
            )
        super().__init__(
            broker,
            connect_timeout=connect_timeout,
            max_connections=max_connections,
            max_write_buffer=DEFAULT_MAX_WRITE_BUFFER,
        )
        self.subscription_strategy = subscription_strategy
        #: ActiveMQ's ``transport.publishDollarTopics``: deliver PUBLISHes to ``$`` topics (off: acked and dropped)
        self.publish_dollar_topics = False
        self.max_packet_size = max_packet_size

    @property
    def keep_alive_clients(self) -> int:
        """Connected clients that asked for a keep-alive: their PINGREQs come in real time, so a virtual clock must
        not jump over their read checks (the pytest fixture holds autojump on this)."""
        return sum(
            1 for p in self._connections if p.session is not None and p.session.connected and p.session.keep_alive
        )

    def _steal(self, client_id: str, thief: MqttSession) -> bool:
        """A new connection takes over ``client_id`` from an MQTT connection of this listener (ActiveMQ's
        ``allowLinkStealing``, on by default for MQTT); False when no MQTT connection holds it."""
        for protocol in list(self._connections):
            session = protocol.session
            if session is not None and session is not thief and session.connected and session.client_id == client_id:
                protocol._fail()
                return True
        return False


async def start_mqtt_server(
    broker: Broker,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    max_packet_size: int = DEFAULT_MAX_PACKET_SIZE,
    connect_timeout: float = CONNECT_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    sock: socket.socket | Sequence[socket.socket] | None = None,
    ssl: SSLContext | None = None,
    subscription_strategy: str = "default",
    publish_dollar_topics: bool = False,
) -> MqttServer:
    """Listen for MQTT 3.1 / 3.1.1 clients on ``host:port`` (0: a free port, see ``.port``) for ``broker``, with
    ActiveMQ's mapping onto topics and durable subscriptions (see :mod:`minibroker.plugins.mqtt.session`).

    ``max_packet_size`` bounds a packet; ``max_connections`` bounds the client sockets of all the broker's listeners
    together; ``sock`` serves on already bound sockets; ``ssl`` makes it an ``mqtt+ssl://`` listener. Credentials in
    CONNECT go to the broker's security plugin, if it has one. ``subscription_strategy``: ``"default"`` or
    ``"virtual-topic"`` (ActiveMQ's ``mqtt-virtual-topic-subscriptions``, see the session module).
    ``publish_dollar_topics``: ActiveMQ's ``transport.publishDollarTopics``; off (the default, as ActiveMQ's), a
    PUBLISH to a topic starting with ``$`` is acknowledged and dropped.
    """
    server = MqttServer(
        broker,
        max_packet_size=max_packet_size,
        connect_timeout=connect_timeout,
        max_connections=max_connections,
        subscription_strategy=subscription_strategy,
    )
    server.publish_dollar_topics = publish_dollar_topics
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
