"""OpenWire commands to broker operations and back, as ActiveMQ 5.17's ``TransportConnection`` answers them; sans I/O.

One :class:`OpenWireConverter` serves one client connection. The listener writes :meth:`~OpenWireConverter.hello`
first, feeds it decoded commands (:meth:`~OpenWireConverter.receive`) and writes what
:meth:`~OpenWireConverter.data_to_send` returns; everything the client asks goes through its
:class:`~minibroker.BrokerConnection` (which authorizes it), as for every other edge.

Theory of operation
-------------------
* **Handshake**: each side sends WireFormatInfo first; the settings are the AND (booleans) and the minimum
  (version, frame size, inactivity) of both offers, so offering loose encoding without cache or stack traces makes
  the client speak exactly that. Then the broker sends its BrokerInfo; ConnectionInfo logs in.
* **Responses**: a command with ``responseRequired`` gets a Response with its ``commandId`` as correlation id, or an
  ExceptionResponse carrying the Java exception class ActiveMQ would throw (:func:`java_class`); a Response goes out
  before the dispatches its command caused. A command without one that fails gets a ConnectionError, which the
  client hands to its exception listener, and the connection goes on (ActiveMQ's ``serviceException``).
* **Ids**: the client names connections, sessions, consumers, producers and local transactions; the converter maps
  them to the broker's ids (``_consumers``, ``_producers``, ``_transactions``). A message keeps its OpenWire id
  text (``ID:...:<producer seq>``) as its broker message id, so acks name messages by the same text.
* **Dispatch**: the broker's dispatches (possibly during another client's command) become MessageDispatch commands;
  a browser gets the queue's messages and then a dispatch with no message (end of browse); a pull (prefetch 0)
  that times out gets one too. ``on_output`` tells the listener there is something to write.
* **Flow control**: a send the broker must hold (:meth:`~minibroker.Broker.admit`) parks in :attr:`held`; the
  listener stops reading, awaits it, and calls :meth:`release_held`.
* **Refusals**: what minibroker does not do (XA, network bridges, blobs, ...) is answered with an
  ExceptionResponse (or ConnectionError) naming the ``UnsupportedFeature``: never a hang, never a silent difference.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, Final

import attrs

from minibroker import AckType, Admission, Broker, BrokerConnection, ConsumerInfo, Dispatch, MessageAck
from minibroker.errors import (
    DestinationDoesNotExist,
    InvalidDestination,
    MinibrokerError,
)
from minibroker.message import Destination, DestinationKind
from minibroker.message import Message as BrokerMessage
from minibroker.refusals import refuse
from minibroker.transport import commands as c

from . import commands as ow
from .codec import WireFormat, decode_command, encode_command
from .errors import java_class, throwable
from .messages import broker_destination, broker_message, message_key, openwire_message
from .passthrough import WireMessage, consumer_prefix, dispatch_frame, wire_message, wire_of
from .primitives import OpenWireFormatError, marshal_primitive_map, unmarshal_primitive_map
from .refusals import refuse_openwire

__all__ = ["ACTIVEMQ_VERSION", "OPENWIRE_VERSION", "OpenWireConverter", "java_class"]

log = logging.getLogger("minibroker.openwire")

_TEMPORARY = (ow.ActiveMQTempQueue, ow.ActiveMQTempTopic)
#: a MessageAck's type byte -> the broker's AckType (a dict look-up: calling the enum costs more, once per ack)
_ACK_TYPES: Final = {int(t): t for t in AckType}

#: the OpenWire version ActiveMQ 5.17 speaks (CommandTypes.PROTOCOL_VERSION): the most minibroker offers
OPENWIRE_VERSION: Final = 12
ACTIVEMQ_VERSION: Final = "5.17.2"
#: ActiveMQ's default ``maxInactivityDuration`` and its initial delay (ms)
MAX_INACTIVITY_MS: Final = 30_000
INACTIVITY_INITIAL_DELAY_MS: Final = 10_000


@attrs.define(slots=True, eq=False)
class _Consumer:
    """One client consumer: its OpenWire id, the broker's id, and what its dispatches need."""

    openwire_id: ow.ConsumerId
    destination: ow.ActiveMQDestination | None
    browser: bool
    core_id: int | None = None
    closed: bool = False
    #: what it subscribed with (None: a browser)
    request: ConsumerInfo | None = None
    #: MessagePulls it made: a prefetch-0 consumer that never pulled holds nothing
    pulls: int = 0
    #: its MessageDispatch frames' first bytes, up to the destination (passthrough.consumer_prefix)
    prefix: bytes = b""


@attrs.define(slots=True, eq=False)
class _HeldSend:
    command: ow.Message
    message: BrokerMessage
    transaction: int | None
    admission: Admission


class _Held(Exception):
    """The send waits for the broker's admission: no answer yet."""


class OpenWireConverter:
    """One OpenWire client connection's protocol state, in front of a :class:`~minibroker.Broker`.

    ``on_output`` is called whenever commands were added outside :meth:`receive` (a dispatch caused by another
    connection, a pull's timeout) so the I/O side can schedule a write.
    """

    def __init__(
        self,
        broker: Broker,
        *,
        on_output: Callable[[], None] | None = None,
        remote_address: str = "",
        broker_url: str | None = None,
        max_frame_size: int = 104_857_600,
        max_inactivity_ms: int = MAX_INACTIVITY_MS,
    ) -> None:
        self.broker = broker
        self.on_output = on_output
        self.remote_address = remote_address
        #: where the client reached the broker (BrokerInfo's brokerURL, as ActiveMQ's connector publishes it)
        self.broker_url = broker_url
        #: until the client's WireFormatInfo: what the server offers; then what both agreed on
        self.fmt = WireFormat(OPENWIRE_VERSION, False, max_frame_size)
        self.max_inactivity_ms = max_inactivity_ms
        self.inactivity_initial_delay_ms = INACTIVITY_INITIAL_DELAY_MS
        self.negotiated = False
        #: the broker connection (None until ConnectionInfo): the one door
        self.connection: BrokerConnection | None = None
        self.connection_info: ow.ConnectionInfo | None = None
        #: write what is pending, then close the transport (ShutdownInfo, a fatal error)
        self.close_after_output = False
        self.closed = False
        #: the client's failover transport said so (ConnectionControl)
        self.fault_tolerant = False
        #: commands to write, or frames already written (a passed-through dispatch)
        self._out: list[ow.DataStructure | bytes] = []
        #: where the Response of the command being handled goes: before what it caused (dispatches), after what
        #: ActiveMQ sends ahead of it (ConnectionInfo's ConnectionControl)
        self._mark = 0
        self._in_command = False
        self._incarnation = -1
        self._sessions: set[ow.SessionId] = set()
        self._consumers: dict[ow.ConsumerId, _Consumer] = {}
        self._producers: dict[ow.ProducerId, tuple[int, int]] = {}  # -> (broker id, window size)
        self._producer_seq = 0
        self._transactions: dict[int, int] = {}  # LocalTransactionId.value -> broker transaction
        self._temporaries: set[Destination] = set()
        self._held: _HeldSend | None = None
        self._handlers: dict[type[ow.DataStructure], Callable[[Any], ow.Response | None]] = {
            ow.WireFormatInfo: self._on_wire_format,
            ow.ConnectionInfo: self._on_connection_info,
            ow.SessionInfo: self._on_session_info,
            ow.ConsumerInfo: self._on_consumer_info,
            ow.ProducerInfo: self._on_producer_info,
            ow.RemoveInfo: self._on_remove_info,
            ow.RemoveSubscriptionInfo: self._on_remove_subscription,
            ow.TransactionInfo: self._on_transaction_info,
            ow.DestinationInfo: self._on_destination_info,
            ow.MessageAck: self._on_ack,
            ow.MessagePull: self._on_pull,
            ow.ShutdownInfo: self._on_shutdown,
            ow.FlushCommand: lambda command: None,
            ow.BrokerInfo: lambda command: self._refuse("openwire-network-bridge", "BrokerInfo"),
            ow.MessageDispatchNotification: lambda command: self._refuse(
                "openwire-network-bridge", "MessageDispatchNotification"
            ),
            ow.BrokerSubscriptionInfo: lambda command: self._refuse(
                "openwire-network-bridge", "BrokerSubscriptionInfo"
            ),
            ow.ReplayCommand: lambda command: self._refuse("openwire-replay", "ReplayCommand"),
            ow.ControlCommand: lambda command: self._refuse("openwire-control-command", command.command),
            ow.ConnectionControl: self._on_connection_control,
            ow.ConsumerControl: self._on_consumer_control,
        }

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("connected" if self.connection is not None else "new")
        return f"<OpenWireConverter {self.remote_address} {state} consumers={len(self._consumers)}>"

    # -- the interface the listener uses ------------------------------------------------------------------------------

    def hello(self) -> ow.WireFormatInfo:
        """The server's WireFormatInfo, written as soon as the socket is open."""
        offer = {
            "TcpNoDelayEnabled": True,
            "SizePrefixDisabled": False,
            "CacheSize": 1024,
            "ProviderName": "ActiveMQ",
            "StackTraceEnabled": False,
            "PlatformDetails": "minibroker (Python)",
            "CacheEnabled": False,
            "TightEncodingEnabled": False,
            "MaxFrameSize": _long(self.fmt.max_frame_size),
            "MaxInactivityDuration": _long(self.max_inactivity_ms),
            "MaxInactivityDurationInitalDelay": _long(self.inactivity_initial_delay_ms),
            "MaxFrameSizeEnabled": True,
            "ProviderVersion": ACTIVEMQ_VERSION,
        }
        return ow.WireFormatInfo(version=OPENWIRE_VERSION, marshalled_properties=marshal_primitive_map(offer))

    def receive(self, command: ow.DataStructure) -> None:
        """Handle one command from the client; replies and dispatches go to the output."""
        if self.close_after_output:
            return
        if self.closed:  # after RemoveInfo of the connection: only its ShutdownInfo is left to come
            self.close_after_output = isinstance(command, ow.ShutdownInfo)
            return
        if type(command) is ow.KeepAliveInfo:  # the inactivity monitor's: answered in kind, never with a Response
            if command.response_required:
                self._emit(ow.KeepAliveInfo())
            return
        self._in_command = True
        mark = self._mark = len(self._out)
        required = isinstance(command, ow.BaseCommand) and command.response_required
        try:
            if not self.negotiated and not isinstance(command, ow.WireFormatInfo):
                raise OpenWireFormatError(f"{type(command).__name__} before WireFormatInfo")
            if isinstance(command, ow.Message):
                response = self._on_message(command)
            else:
                handler = self._handlers.get(type(command))
                if handler is None:
                    raise refuse_openwire("openwire-unknown-command", type(command).__name__)
                response = handler(command)
        except _Held:
            return  # answered by release_held
        except MinibrokerError as exc:
            if isinstance(exc, OpenWireFormatError):
                self.protocol_error(exc)
                return
            self._answer_error(command, exc, mark)
            return
        finally:
            self._in_command = False
        if required:
            assert isinstance(command, ow.BaseCommand)
            self._out.insert(self._mark, response or ow.Response(correlation_id=command.command_id))

    def protocol_error(self, error: Exception) -> None:
        """The bytes are no OpenWire (or a frame is too large): a ConnectionError, then the connection closes."""
        log.info("OpenWire protocol error from %s: %s", self.remote_address, error)
        self._emit(ow.ConnectionErrorCommand(exception=throwable(error)))
        self._fail_connection()

    def internal_error(self) -> None:
        self._in_command = False
        self._emit(
            ow.ConnectionErrorCommand(exception=ow.JavaThrowable("java.lang.RuntimeException", "Internal error"))
        )
        self._fail_connection()

    def connection_lost(self) -> None:
        """The transport is gone without ShutdownInfo: the broker takes back what the client held (redelivered)."""
        if not self.closed:
            self._teardown(None)

    @property
    def held(self) -> Admission | None:
        """What a held send waits for (None: nothing is held); await it, then call :meth:`release_held`."""
        return None if self._held is None else self._held.admission

    def release_held(self, error: MinibrokerError | None) -> None:
        held, self._held = self._held, None
        if held is None or self.closed or self.close_after_output:
            return
        self._in_command = True
        try:
            if error is None:
                try:
                    self._send_or_hold(held.command, held.message, held.transaction)
                except _Held:
                    return
                except MinibrokerError as exc:
                    error = exc
            if error is not None:
                self._answer_error(held.command, error, len(self._out))
            elif held.command.response_required:
                self._out.append(ow.Response(correlation_id=held.command.command_id))
        finally:
            self._in_command = False

    def pending_work(self) -> list[str]:
        return [f"openwire {self.remote_address}: {len(self._out)} command(s) to write"] if self._out else []

    @property
    def has_output(self) -> bool:
        return bool(self._out)

    def take_commands(self) -> list[ow.DataStructure]:
        """What :meth:`data_to_send` would write, as commands (a frame written already is read back)."""
        out, self._out = self._out, []
        commands = [decode_command(c[4:], self.fmt) if isinstance(c, bytes) else c for c in out]
        return [c for c in commands if c is not None]

    def data_to_send(self) -> bytes:
        out, self._out = self._out, []
        fmt = self.fmt
        return b"".join(c if c.__class__ is bytes else encode_command(c, fmt) for c in out)  # type: ignore[arg-type]

    # -- output helpers ---------------------------------------------------------------------------------------------

    def _emit(self, command: ow.DataStructure | bytes) -> None:
        self._out.append(command)
        if not self._in_command and self.on_output is not None:
            self.on_output()

    def _answer_error(self, command: ow.DataStructure, exc: MinibrokerError, mark: int) -> None:
        error = throwable(exc)
        if isinstance(command, ow.BaseCommand) and command.response_required:
            self._out.insert(mark, ow.ExceptionResponse(correlation_id=command.command_id, exception=error))
        else:
            log.info("OpenWire client %s: %s failed: %s", self.remote_address, type(command).__name__, exc)
            self._emit(ow.ConnectionErrorCommand(exception=error, connection_id=self._connection_id()))
        if self.connection is None and isinstance(command, ow.ConnectionInfo):
            self.close_after_output = True  # a refused login ends the connection, as on ActiveMQ

    def _refuse(self, feature: str, value: object) -> ow.Response | None:
        raise refuse_openwire(feature, value)

    def _connection_id(self) -> ow.ConnectionId | None:
        return None if self.connection_info is None else self.connection_info.connection_id

    def _fail_connection(self) -> None:
        self.close_after_output = True
        if not self.closed:
            self._teardown(None)

    def _conn(self) -> BrokerConnection:
        if self.connection is None:
            raise OpenWireFormatError("a command before ConnectionInfo")
        return self.connection

    # -- handshake and connection ------------------------------------------------------------------------------------

    def _on_wire_format(self, info: ow.WireFormatInfo) -> None:
        if info.magic != b"ActiveMQ":
            raise OpenWireFormatError(f"bad magic {info.magic!r}: not an OpenWire client")
        if self.negotiated:
            return None  # ActiveMQ ignores a second one
        offer: dict[str, Any] = {}
        if info.marshalled_properties:
            offer = unmarshal_primitive_map(info.marshalled_properties) or {}
        version = min(info.version, OPENWIRE_VERSION) if info.version > 0 else OPENWIRE_VERSION
        if version < OPENWIRE_VERSION:
            raise OpenWireFormatError(f"OpenWire version {info.version}: minibroker speaks version 12 only")
        self.fmt.version = version
        self.fmt.stack_trace = False  # offered off: the AND is off
        frame = offer.get("MaxFrameSize")
        if isinstance(frame, int) and 0 < frame < self.fmt.max_frame_size:
            self.fmt.max_frame_size = int(frame)
        inactivity = offer.get("MaxInactivityDuration")
        if isinstance(inactivity, int) and inactivity >= 0:  # 0 on either side: no inactivity checks
            self.max_inactivity_ms = min(self.max_inactivity_ms, int(inactivity)) if inactivity else 0
        delay = offer.get("MaxInactivityDurationInitalDelay")
        if isinstance(delay, int) and delay > 0:
            self.inactivity_initial_delay_ms = min(self.inactivity_initial_delay_ms, int(delay))
        self.negotiated = True
        name = self.broker.name
        self._emit(
            ow.BrokerInfo(broker_id=ow.BrokerId(f"ID:minibroker-{name}"), broker_url=self.broker_url, broker_name=name)
        )
        return None

    def _on_connection_info(self, info: ow.ConnectionInfo) -> None:
        if info.broker_master_connector or info.broker_path:
            raise refuse_openwire("openwire-network-bridge", "ConnectionInfo from a broker")
        if self.connection is not None:
            return None  # a failover client's replay of its own ConnectionInfo on this connection
        self._incarnation = self.broker.incarnation
        # a JMS client may resend after a failover reconnect: its connection keeps ActiveMQ's producer audit
        self.connection = self.broker.connect(
            info.client_id,
            user=info.user_name,
            password=info.password,
            remote=True,
            audit_producers=True,
            failover_reconnect=bool(info.failover_reconnect),
        )
        self.connection_info = info
        # ActiveMQ tells every new connection where else it may go (nowhere: no cluster), before its Response
        self._emit(ow.ConnectionControl(connected_brokers="", reconnect_to=""))
        self._mark = len(self._out)
        return None

    def _on_session_info(self, info: ow.SessionInfo) -> None:
        self._conn()
        if info.session_id is not None:
            self._sessions.add(info.session_id)

    def _on_shutdown(self, info: ow.ShutdownInfo) -> None:
        if not self.closed:
            self._teardown(-1)
        self.close_after_output = True

    def _teardown(self, last_delivered_seq: int | None) -> None:
        """Close the broker connection: consumers, producers, transactions and temporary destinations go with it."""
        self.closed = True
        self._held = None
        for consumer in self._consumers.values():
            consumer.closed = True
        self._consumers.clear()
        self._producers.clear()
        self._transactions.clear()
        self._temporaries.clear()
        connection = self.connection
        if connection is None or self.broker.incarnation != self._incarnation:
            return
        try:
            connection.close(last_delivered_seq)
        except MinibrokerError as exc:  # the broker stopped first: nothing left to tell it
            log.debug("OpenWire connection of %s ended with %s", self.remote_address, exc)

    # -- removing ---------------------------------------------------------------------------------------------------

    def _on_remove_info(self, info: ow.RemoveInfo) -> None:
        target = info.object_id
        seq = info.last_delivered_sequence_id
        if isinstance(target, ow.ConsumerId):
            consumer = self._consumers.pop(target, None)
            if consumer is not None:
                self._remove_consumer(consumer, seq)
        elif isinstance(target, ow.ProducerId):
            producer = self._producers.pop(target, None)
            if producer is not None:
                self._conn().remove_producer(producer[0])
        elif isinstance(target, ow.SessionId):
            self._sessions.discard(target)
            for consumer_id in [k for k in self._consumers if _same_session(k, target)]:
                self._remove_consumer(self._consumers.pop(consumer_id), seq)
            for producer_id in [k for k in self._producers if _same_session(k, target)]:
                self._conn().remove_producer(self._producers.pop(producer_id)[0])
        elif isinstance(target, ow.ConnectionId) and not self.closed:
            self._teardown(seq)
        return None

    def _remove_consumer(self, consumer: _Consumer, last_delivered_seq: int) -> None:
        consumer.closed = True
        if consumer.core_id is not None and not consumer.browser:
            self._conn().dispatch(c.RemoveConsumer(consumer.core_id, last_delivered_seq))

    def _on_remove_subscription(self, info: ow.RemoveSubscriptionInfo) -> None:
        if not info.subscription_name:
            raise InvalidDestination("no subscription name to remove")
        self._conn().dispatch(c.Unsubscribe(info.subscription_name, info.client_id))

    # -- producers and messages -------------------------------------------------------------------------------------

    def _on_producer_info(self, info: ow.ProducerInfo) -> None:
        if info.broker_path:
            raise refuse_openwire("openwire-network-bridge", "ProducerInfo with a broker path")
        if info.producer_id is None:
            raise OpenWireFormatError("ProducerInfo without its ProducerId")
        destination = None if info.destination is None else broker_destination(info.destination)
        if destination is not None and isinstance(info.destination, _TEMPORARY) and not self._is_temporary(destination):
            # ActiveMQ's addProducer adds the destination without creating a temporary one: gone, it is refused
            raise DestinationDoesNotExist(f"temp-{destination}", destination=destination)
        self._producer_seq += 1
        self._conn().add_producer(self._producer_seq, destination)
        self._producers[info.producer_id] = (self._producer_seq, info.window_size)

    def _on_message(self, command: ow.Message) -> ow.Response | None:
        if command.broker_path or command.recieved_by_df_bridge:
            raise refuse_openwire("openwire-network-bridge", "a message forwarded by a broker")
        self._conn()
        wire = None if command.raw is None else wire_of(command, command.raw)
        message = broker_message(command) if wire is None else wire_message(command, wire)
        txn = self._transaction(command.transaction_id)
        self._send_or_hold(command, message, txn)
        return None

    def _send_or_hold(self, command: ow.Message, message: BrokerMessage, txn: int | None) -> None:
        connection = self._conn()
        admission = self.broker.admit(message.destination, txn)
        if admission is not None:
            self._held = _HeldSend(command, message, txn, admission)
            raise _Held
        connection.send(message, txn)
        producer = None if command.producer_id is None else self._producers.get(command.producer_id)
        if producer is not None and producer[1] > 0 and not command.response_required:
            # a producer with a window counts what it sent until the broker says so (ActiveMQMessage.getSize())
            size = 1024 + len(command.marshalled_properties or b"") + len(command.content or b"")
            self._emit(ow.ProducerAck(producer_id=command.producer_id, size=size))

    # -- consumers --------------------------------------------------------------------------------------------------

    def _on_consumer_info(self, info: ow.ConsumerInfo) -> None:
        connection = self._conn()
        if info.consumer_id is None:
            raise OpenWireFormatError("ConsumerInfo without its ConsumerId")
        # the same inputs as the destination options every edge refuses (consumer.retroactive, ...): the same rows
        if info.network_subscription or info.broker_path or info.additional_predicate is not None:
            raise refuse("destination-option-networkSubscription", str(info.destination))
        if info.retroactive:
            raise refuse("destination-option-retroactive", str(info.destination))
        if info.maximum_pending_message_limit:
            raise refuse("destination-option-maximumPendingMessageLimit", info.maximum_pending_message_limit)
        destination = broker_destination(info.destination)
        consumer = _Consumer(info.consumer_id, info.destination, info.browser, prefix=consumer_prefix(info.consumer_id))
        if info.browser:
            self._browse(consumer, destination, info.selector)
            return
        subscription = info.subscription_name if destination.is_topic else None
        request = ConsumerInfo(
            destination=destination,
            prefetch=max(0, info.prefetch_size),
            selector=info.selector or None,
            priority=info.priority,
            exclusive=info.exclusive,
            no_local=info.no_local,
            session_id=info.consumer_id.session_id,
            subscription_name=subscription,
        )
        self._consumers[info.consumer_id] = consumer
        consumer.request = request
        route: Callable[[Dispatch], None] = functools.partial(self._on_dispatch, consumer)
        try:
            consumer.core_id = connection.add_consumer(request, route)
        except BaseException:
            self._consumers.pop(info.consumer_id, None)
            raise

    def _browse(self, consumer: _Consumer, destination: Destination, selector: str | None) -> None:
        """ActiveMQ's queue browser: the queue's messages as they are, then a dispatch without one (the end)."""
        from minibroker.refusals import check_browser_destination

        check_browser_destination(destination)
        connection = self._conn()
        matching = connection.dispatch(c.Browse(destination.name, selector or None)) if destination.is_queue else []
        self._consumers[consumer.openwire_id] = consumer
        for message in matching:
            self._emit(self._dispatch_command(consumer, message, 0, 0, False))
        self._emit(ow.MessageDispatch(consumer_id=consumer.openwire_id, destination=consumer.destination))

    def _on_dispatch(self, consumer: _Consumer, dispatch: Dispatch) -> None:
        if consumer.closed:
            return
        if consumer.core_id is None:
            consumer.core_id = dispatch.consumer_id
        message = dispatch.message
        if message is None:  # a pull that found nothing
            self._emit(ow.MessageDispatch(consumer_id=consumer.openwire_id, destination=consumer.destination))
            return
        if message.__class__ is WireMessage and not self._is_temporary(message.destination):
            frame = dispatch_frame(message, consumer.prefix, dispatch, round(self.broker.clock.now() * 1000))
            if frame is not None:  # the frame's bytes reused (passthrough.py)
                self._emit(frame)
                return
        self._emit(
            self._dispatch_command(
                consumer, message, dispatch.broker_seq, dispatch.redelivery_counter, dispatch.group_first
            )
        )

    def _dispatch_command(
        self, consumer: _Consumer, message: BrokerMessage, broker_seq: int, counter: int, group_first: bool
    ) -> ow.MessageDispatch:
        command = openwire_message(
            message,
            broker_seq=broker_seq,
            redelivery_counter=counter,
            group_first=group_first,
            is_temporary=self._is_temporary,
            now_ms=round(self.broker.clock.now() * 1000),
        )
        return ow.MessageDispatch(
            consumer_id=consumer.openwire_id,
            destination=command.destination,
            message=command,
            redelivery_counter=counter,
        )

    def _is_temporary(self, destination: Destination) -> bool:
        return destination in self._temporaries or self.broker.temporary_owner(destination) is not None

    def _on_consumer_control(self, control: ow.ConsumerControl) -> None:
        """A failover client restores its consumers with prefetch 0 until it has dealt with the interruption, then
        sends their prefetch back in a ConsumerControl (ConnectionStateTracker); ActiveMQ sets the subscription's
        prefetch (the connection's ``set_prefetch``). Closing, flushing, starting or stopping a consumer this way
        is refused."""
        consumer = None if control.consumer_id is None else self._consumers.get(control.consumer_id)
        if consumer is None:
            return None  # gone already: ActiveMQ ignores it too
        request = consumer.request
        if control.close or control.flush or control.start or control.stop or request is None:
            raise refuse_openwire("openwire-control-command", "ConsumerControl close/flush/start/stop")
        prefetch = max(0, control.prefetch)
        if prefetch == request.prefetch or consumer.core_id is None:
            return None
        consumer.request = attrs.evolve(request, prefetch=prefetch)
        self._conn().set_prefetch(consumer.core_id, prefetch)
        return None

    def _on_connection_control(self, control: ow.ConnectionControl) -> None:
        """A failover client says it is fault tolerant before it restores its state; ActiveMQ's broker notes that
        and acts on nothing else a client's ConnectionControl says."""
        self.fault_tolerant = control.fault_tolerant

    def _on_pull(self, pull: ow.MessagePull) -> None:
        consumer = None if pull.consumer_id is None else self._consumers.get(pull.consumer_id)
        if consumer is None or consumer.core_id is None or consumer.browser:
            return None
        consumer.pulls += 1
        timeout = pull.timeout / 1000.0 if pull.timeout > 0 else float(pull.timeout)
        self._conn().pull(consumer.core_id, timeout)
        return None

    def _on_ack(self, ack: ow.MessageAck) -> None:
        consumer = None if ack.consumer_id is None else self._consumers.get(ack.consumer_id)
        if consumer is None or consumer.browser or consumer.core_id is None:
            return None  # a consumer already gone (its acks may follow its RemoveInfo), or a browser
        if ack.last_message_id is None:
            raise OpenWireFormatError("MessageAck without its last message id")
        ack_type = _ACK_TYPES.get(ack.ack_type)
        if ack_type is None:
            raise OpenWireFormatError(f"unknown ack type {ack.ack_type}")
        cause = ack.poison_cause
        last, first = ack.last_message_id, ack.first_message_id
        last_key = message_key(last)
        # one message acked (AUTO_ACKNOWLEDGE: every ack): its first and last ids are the same, one text does
        first_key = None if first is None else last_key if first == last else message_key(first)
        self._conn().ack(
            MessageAck(
                consumer.core_id,
                ack_type,
                last_key,
                first_key,
                ack.message_count,
                self._transaction(ack.transaction_id),
                None if cause is None else f"{cause.class_name}: {cause.message}",
            )
        )
        return None

    # -- transactions -----------------------------------------------------------------------------------------------

    def _transaction(self, transaction_id: ow.DataStructure | None) -> int | None:
        if transaction_id is None:
            return None
        if not isinstance(transaction_id, ow.LocalTransactionId):
            raise refuse_openwire("openwire-xa-transaction", type(transaction_id).__name__)
        core = self._transactions.get(transaction_id.value)
        if core is None:
            from minibroker.errors import TransactionError

            raise TransactionError(f"Transaction 'TX:{transaction_id.value}' has not been started.")
        return core

    def _on_transaction_info(self, info: ow.TransactionInfo) -> None:
        connection = self._conn()
        transaction_id = info.transaction_id
        if not isinstance(transaction_id, ow.LocalTransactionId):
            raise refuse_openwire("openwire-xa-transaction", type(transaction_id).__name__)
        kind = info.type
        if kind == ow.TransactionType.BEGIN:
            self._transactions[transaction_id.value] = connection.begin()
        elif kind == ow.TransactionType.COMMIT_ONE_PHASE:
            core = self._transaction(transaction_id)
            assert core is not None
            del self._transactions[transaction_id.value]
            connection.dispatch(c.Commit(core))
        elif kind == ow.TransactionType.ROLLBACK:
            core = self._transaction(transaction_id)
            assert core is not None
            del self._transactions[transaction_id.value]
            connection.dispatch(c.Rollback(core))
        else:
            raise refuse_openwire("openwire-xa-transaction", ow.TransactionType(kind).name if 0 <= kind <= 7 else kind)
        return None

    # -- temporary destinations -------------------------------------------------------------------------------------

    def _on_destination_info(self, info: ow.DestinationInfo) -> None:
        connection = self._conn()
        wanted = info.destination
        if not isinstance(wanted, (ow.ActiveMQTempQueue, ow.ActiveMQTempTopic)):
            return None  # a named destination exists as soon as it is used, on ActiveMQ as here
        destination = broker_destination(wanted)
        if info.operation_type == ow.DestinationInfo.ADD:
            kind = DestinationKind.QUEUE if isinstance(wanted, ow.ActiveMQTempQueue) else DestinationKind.TOPIC
            prefix = destination.name.rpartition(":")[0]
            made = connection.dispatch(c.CreateTemporary(kind, prefix))
            if made != destination:
                connection.dispatch(c.DeleteTemporary(made))
                raise InvalidDestination(
                    f"temporary destination {wanted.physical_name}: minibroker names it {made.name}",
                    destination=str(destination),
                )
            self._temporaries.add(destination)
        elif info.operation_type == ow.DestinationInfo.REMOVE:
            connection.dispatch(c.DeleteTemporary(destination))
            self._temporaries.discard(destination)
        return None


def _same_session(item: ow.ConsumerId | ow.ProducerId, session: ow.SessionId) -> bool:
    return item.connection_id == session.connection_id and item.session_id == session.value


def _long(value: int) -> int:
    from minibroker.typed import Long

    return Long(value)
