"""STOMP frames to broker operations and back, as ActiveMQ 5.17's ``ProtocolConverter`` does it; sans I/O.

One :class:`StompConverter` serves one client connection. The listener feeds it decoded frames
(:meth:`~StompConverter.receive_frame`) and writes what :meth:`~StompConverter.data_to_send` returns; the converter
calls the :class:`~minibroker.Broker` driver directly (its methods are synchronous) and never touches a socket, a
timer or the event loop.

Theory of operation
-------------------
* **Output** is a FIFO of frames, each kept with the protocol version it is written in (CONNECTED and anything
  before it in 1.0, unescaped, as ActiveMQ writes CONNECTED before switching versions). Dispatches from the broker
  arrive through the route given to ``Broker.add_consumer`` -- possibly while another connection's frame is being
  handled -- and only append MESSAGE frames; ``on_output`` tells the listener there is something to write.
* **Auto acknowledgement** is owed at dispatch (ActiveMQ acks an ``ack:auto`` message as it hands it to the
  transport), but acking from inside the broker's routing would reorder dispatches, so those acks wait in
  ``_auto_acks`` and are sent by :meth:`run_pending` (the listener calls it before writing) and, all of them, before
  any frame of this client is handled or the connection is torn down.
* **Client acknowledgement** is tracked per subscription in dispatch order (``unacked``): ``ack:client`` settles
  every message up to the named one (one STANDARD range ack), ``client-individual`` one message (INDIVIDUAL), a NACK
  one message (POISON: dead-letter queue, or the broker redelivery plugin). In a transaction the acks are tied to
  the broker transaction; ABORT makes them ackable again without redelivering (ActiveMQ 5.17).
* **Errors**: a failing frame gets an ERROR (``message``, ``content-type:text/plain``, ``receipt-id`` when asked)
  and, like ActiveMQ, the connection stays usable -- except for the fatal ones (unknown command, bad
  ``accept-version`` or ``heart-beat``, rejected login or client id, framing limits) after which
  :attr:`~StompConverter.close_after_output` is set and the broker connection is already closed.
* **Closing**: DISCONNECT, UNSUBSCRIBE and a dropped transport all give back every unacked message with
  ``redelivered:true`` (the broker counts them all as delivered), roll back open transactions and forget the
  connection's temporary destinations.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Final, NoReturn

import attrs

from minibroker._core.broker import NOW_UNKNOWN_DELIVERED
from minibroker._core.commands import AckType, ConsumerInfo, MessageAck
from minibroker._core.effects import Dispatch
from minibroker._driver import Broker
from minibroker.errors import (
    AccessDenied,
    InvalidClientIdError,
    InvalidDestination,
    InvalidSelector,
    LocalProtocolError,
    MinibrokerError,
    RemoteProtocolError,
)
from minibroker.features import (
    check_consumer_destination,
    check_send_destination,
    check_stomp_subscribe_headers,
    refuse,
)
from minibroker.message import Destination, DestinationKind, Message, PropertyValue

from .codec import VERSIONS, StompDecoder, StompFrame, can_encode_header, encode_frame, escape_header

__all__ = [
    "ACTIVEMQ_VERSION",
    "PROTOCOL_EXCEPTION",
    "AckMode",
    "Authenticator",
    "StompConverter",
    "StompError",
]

#: what CONNECTED's ``server`` header claims, so clients that look at it behave as against the real broker
ACTIVEMQ_VERSION: Final = "5.17.2"
PROTOCOL_EXCEPTION: Final = "org.apache.activemq.transport.stomp.ProtocolException"

#: ``authenticator(login, passcode)``: True admits the client; False or ``AccessDenied`` refuses it
Authenticator = Callable[[str | None, str | None], bool]

QUEUE = DestinationKind.QUEUE
TOPIC = DestinationKind.TOPIC

#: default prefetch by kind of destination (ActiveMQPrefetchPolicy), whatever the ack mode
QUEUE_PREFETCH: Final = 1000
TOPIC_PREFETCH: Final = 32767
BROWSER_PREFETCH: Final = 500

#: SEND headers that are not copied into message properties
_SEND_CONSUMED: Final = frozenset({
    "destination", "transaction", "receipt", "content-length", "message-id", "redelivered", "subscription",
    "JMSXUserID", "JMSXDeliveryCount", "persistent", "priority", "expires", "timestamp", "correlation-id", "type",
    "reply-to", "amq-msg-type", "JMSXGroupID", "JMSXGroupSeq",
})
#: SEND headers that are more than a property or the destination (the rest of _SEND_CONSUMED is read as it comes)
_SEND_SPECIAL: Final = frozenset({
    "amq-msg-type", "priority", "expires", "timestamp", "reply-to", "JMSXGroupSeq", "persistent", "correlation-id",
    "type", "JMSXGroupID",
})
#: Message's fields in the order _message passes them
_MESSAGE_FIELDS: Final = (
    "message_id", "destination", "body", "properties", "priority", "persistent", "timestamp", "expiration",
    "correlation_id", "reply_to", "type", "group_id", "group_seq", "producer_id", "producer_seq",
)
if tuple(field.name for field in attrs.fields(Message))[: len(_MESSAGE_FIELDS)] != _MESSAGE_FIELDS:
    raise ImportError("minibroker.message.Message changed its field order: update the STOMP converter's _message")
#: the headers of a MESSAGE besides its properties: a property of one of these names replaces it (the frame path)
_MESSAGE_HEADERS: Final = frozenset({
    "message-id", "destination", "correlation-id", "expires", "redelivered", "priority", "reply-to", "timestamp",
    "type", "original-destination", "persistent", "subscription", "ack", "content-length",
})
#: scheduler properties ActiveMQ reads as numbers even when a STOMP client sent them as strings
_SCHEDULER_PROPERTIES: Final = frozenset({"AMQ_SCHEDULED_DELAY", "AMQ_SCHEDULED_PERIOD", "AMQ_SCHEDULED_REPEAT"})
_LONG: Final = re.compile(r"[+-]?[0-9]{1,19}")
_JAVA_WS: Final = "".join(chr(i) for i in range(0x21))

_connection_numbers = itertools.count(1)
#: the start of every connection's name, and so of every STOMP temporary destination's physical name
_TEMPORARY_PREFIX: Final = "ID:minibroker-stomp-"
#: temporary destinations of every STOMP connection, per broker: (kind, physical name)
_temporaries: weakref.WeakKeyDictionary[Broker, set[tuple[DestinationKind, str]]] = weakref.WeakKeyDictionary()


class AckMode:
    """The ``ack`` header's values."""

    AUTO: Final = "auto"
    CLIENT: Final = "client"
    INDIVIDUAL: Final = "client-individual"


class StompError(Exception):
    """A frame the converter refuses: becomes an ERROR frame. ``fatal`` closes the connection after it."""

    def __init__(self, message: str, *, fatal: bool = False, java_class: str = PROTOCOL_EXCEPTION) -> None:
        super().__init__(message)
        self.message = message
        self.fatal = fatal
        self.java_class = java_class


class _Drop(Exception):
    """ActiveMQ drops the connection without an ERROR (a non-numeric priority, expires or timestamp)."""


@attrs.define(slots=True, eq=False)
class _Delivery:
    message_id: str
    ack_id: str | None
    index: int


@attrs.define(slots=True, eq=False)
class _Subscription:
    #: the ``id`` header (None: a 1.0 subscription without one)
    header_id: str | None
    destination: Destination
    stomp_destination: str
    mode: str
    browser: bool = False
    consumer_id: int | None = None
    unacked: dict[str, _Delivery] = attrs.field(factory=dict)
    next_index: int = 0
    closed: bool = False
    #: the ``subscription`` header line of its MESSAGEs, escaped ("" without an id; None: MESSAGEs take the frame path)
    id_line: str | None = ""


@attrs.define(slots=True, eq=False)
class _Transaction:
    core_id: int
    #: deliveries acked in this transaction: restored to their subscription on ABORT
    acked: list[tuple[_Subscription, _Delivery]] = attrs.field(factory=list)


def _java_class(exc: MinibrokerError) -> str:
    if isinstance(exc, InvalidSelector):
        return "javax.jms.InvalidSelectorException"
    if isinstance(exc, InvalidDestination):
        return "javax.jms.InvalidDestinationException"
    if isinstance(exc, AccessDenied):
        return "java.lang.SecurityException"
    if isinstance(exc, InvalidClientIdError):
        return "javax.jms.InvalidClientIDException"
    return "javax.jms.JMSException"


def java_string(value: PropertyValue) -> str | None:
    """A property value as Java's ``toString()`` writes it (None: not representable in a header)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double(value)
    return None


def java_double(value: float) -> str:
    """``Double.toString``: ``1.0``, ``0.001``, ``1.0E7``, ``1.0E-4``, ``NaN``, ``Infinity``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "e" not in text else format(Decimal(text), "f")
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = exponent + len(digits) - 1
    mantissa = text[0] + "." + (text[1:] or "0")
    return f"{'-' if sign else ''}{mantissa}E{power}"


def _escape_value(text: str, version: str) -> str | None:
    """``text`` escaped for a 1.1/1.2 header; None when it holds a NUL (no version can carry one)."""
    return None if "\0" in text else escape_header(text, version)


def _parse_long(value: str) -> int:
    """Java ``Long.parseLong``: a non-number drops the connection, as ActiveMQ's converter does."""
    if not _LONG.fullmatch(value):
        raise _Drop(f"not a number: {value!r}")
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise _Drop(f"out of range: {value!r}")
    return number


def _parse_int_option(value: str | None) -> int | None:
    if value is None:
        return None
    text = value.strip(_JAVA_WS)
    if not re.fullmatch(r"[+-]?[0-9]{1,10}", text):
        return None
    number = int(text)
    return number if -(2**31) <= number < 2**31 else None


def _parse_bool_option(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip(_JAVA_WS).lower() == "true"


class StompConverter:
    """One STOMP client connection's protocol state, in front of a :class:`~minibroker.Broker`.

    ``on_output`` is called (with no argument) whenever frames or deferred work were added outside a call to
    :meth:`receive_frame` -- a dispatch caused by another connection, a redelivery timer -- so the I/O side can
    schedule a write. ``remote_address`` appears in the duplicate client-id error, as in ActiveMQ.
    """

    def __init__(
        self,
        broker: Broker,
        *,
        authenticator: Authenticator | None = None,
        on_output: Callable[[], None] | None = None,
        remote_address: str = "",
    ) -> None:
        self.broker = broker
        self.authenticator = authenticator
        self.on_output = on_output
        self.remote_address = remote_address
        #: the negotiated protocol version ("1.0" until CONNECTED)
        self.version = "1.0"
        self.connected = False
        #: the broker's connection id, once CONNECT succeeded
        self.connection_id: int | None = None
        #: CONNECTED's ``session``: the client id
        self.session_id = ""
        #: (broker writes a heart-beat after this many ms of silence, broker expects input every this many ms); 0 = off
        self.heart_beat: tuple[int, int] = (0, 0)
        #: write what is pending, then close the transport (DISCONNECT, fatal error)
        self.close_after_output = False
        #: the broker connection is gone
        self.closed = False
        self._name = f"{_TEMPORARY_PREFIX}{next(_connection_numbers)}"
        self._message_seq = 0
        self._ack_seq = 0
        #: what to write, oldest first, each with the version it is written in: a frame, or a MESSAGE already encoded
        self._out: list[tuple[StompFrame | bytes, str]] = []
        self._auto_acks: deque[tuple[int, str]] = deque()
        self._subs: dict[str, _Subscription] = {}
        self._by_consumer: dict[int, _Subscription] = {}
        self._all_subs: list[_Subscription] = []
        self._acks: dict[str, tuple[_Subscription, _Delivery]] = {}
        self._transactions: dict[str, _Transaction] = {}
        #: temporary destinations created by this connection: stomp name -> physical name, and back
        self._temp_by_stomp: dict[tuple[DestinationKind, str], str] = {}
        self._temp_names: dict[tuple[DestinationKind, str], str] = {}
        self._in_frame = False
        #: the broker core this connection lives in (Broker.restart() starts a new one)
        self._core: object | None = None
        #: STOMP destination names already converted (a temporary destination keeps its name per connection)
        self._destinations: dict[str, list[Destination]] = {}
        self._strict_destinations: dict[str, list[Destination]] = {}
        #: broker destinations whose STOMP name cannot change (no temporary destination is named like them)
        self._stomp_names: dict[Destination, str] = {}
        #: the same, escaped for the negotiated version (a version is negotiated before any MESSAGE is made)
        self._escaped_names: dict[Destination, str] = {}
        self._producer_id = f"{self._name}:-1:1"
        self._now = broker.clock.now
        self._handlers: dict[str, Callable[[StompFrame], None]] = {
            "CONNECT": self._on_connect,
            "STOMP": self._on_connect,
            "SEND": self._on_send,
            "SUBSCRIBE": self._on_subscribe,
            "UNSUBSCRIBE": self._on_unsubscribe,
            "ACK": self._on_ack,
            "NACK": self._on_nack,
            "BEGIN": self._on_begin,
            "COMMIT": self._on_commit,
            "ABORT": self._on_abort,
            "DISCONNECT": self._on_disconnect,
        }

    def __repr__(self) -> str:
        state = "closed" if self.closed else ("connected" if self.connected else "new")
        return f"<StompConverter {self.session_id or self._name} {state} v{self.version} subs={len(self._all_subs)}>"

    # -- the interface the listener uses ------------------------------------------------------------------------------

    def receive_frame(self, frame: StompFrame) -> None:
        """Handle one frame from the client; replies and messages go to the output."""
        if self.close_after_output or self.closed:
            return
        self._in_frame = True
        try:
            if self._auto_acks:
                self._run_auto_acks(None)
            mark = len(self._out)
            command = frame.command
            try:
                handler = self._handlers.get(command)
                if handler is None:
                    raise StompError(f"Unknown STOMP action: {command}", fatal=True)
                if not self.connected and command not in ("CONNECT", "STOMP"):
                    raise StompError("Not connected.")
                handler(frame)
            except StompError as exc:
                self._error(exc, frame)
                return
            except _Drop:
                self._fail_connection()
                return
            except MinibrokerError as exc:
                self._error(StompError(exc.message or str(exc), java_class=_java_class(exc)), frame)
                return
            receipt = frame.headers.get("receipt")
            if receipt is not None and command not in ("CONNECT", "STOMP", "DISCONNECT"):
                # before the MESSAGEs the frame itself caused (a SUBSCRIBE's backlog)
                self._out.insert(mark, (StompFrame("RECEIPT", {"receipt-id": receipt}), self.version))
        finally:
            self._in_frame = False

    def protocol_error(self, error: RemoteProtocolError) -> None:
        """The decoder failed (a framing limit, a bad content-length): ERROR, then close (fatal in ActiveMQ)."""
        self._error(StompError(error.message or str(error), fatal=True), None)

    def internal_error(self) -> None:
        """Something failed inside the broker side of this connection: ERROR, then close."""
        self._in_frame = False
        self._error(StompError("Internal error", fatal=True, java_class="java.lang.RuntimeException"), None)

    def connection_lost(self) -> None:
        """The transport is gone without DISCONNECT: the broker releases what the client held (redelivered)."""
        if not self.closed:
            self._teardown(graceful=False)

    def run_pending(self, limit: int | None = None) -> bool:
        """Send the auto acks owed for messages already handed out (at most ``limit``); True if some remain."""
        self._run_auto_acks(limit)
        return bool(self._auto_acks)

    def pending_work(self) -> list[str]:
        """Descriptions of work not done yet (auto acks owed, frames not taken)."""
        pending = []
        if self._auto_acks:
            pending.append(f"stomp {self.session_id}: {len(self._auto_acks)} auto ack(s) to send")
        if self._out:
            pending.append(f"stomp {self.session_id}: {len(self._out)} frame(s) to write")
        return pending

    @property
    def has_output(self) -> bool:
        return bool(self._out)

    def take_frames(self) -> list[StompFrame]:
        """The frames to send, oldest first (they leave the output); MESSAGEs encoded early are decoded back."""
        out, self._out = self._out, []
        frames: list[StompFrame] = []
        for item, version in out:
            if isinstance(item, bytes):
                decoder = StompDecoder(role="client", version=version)
                decoder.receive_data(item)
                frames.extend(decoder)
            else:
                frames.append(item)
        return frames

    def data_to_send(self) -> bytes:
        """The output encoded for the wire (each frame in the version it was produced under)."""
        out, self._out = self._out, []
        if not out:
            return b""
        chunks = []
        for item, version in out:
            if type(item) is bytes:
                chunks.append(item)
                continue
            assert isinstance(item, StompFrame)
            try:
                chunks.append(encode_frame(item, version))
            except LocalProtocolError:
                chunks.append(encode_frame(_sanitized(item, version), version))
        return b"".join(chunks)

    # -- output helpers ---------------------------------------------------------------------------------------------

    def _emit(self, frame: StompFrame | bytes, version: str | None = None) -> None:
        self._out.append((frame, version or self.version))
        if not self._in_frame and self.on_output is not None:
            self.on_output()

    def _error(self, exc: StompError, frame: StompFrame | None) -> None:
        message = exc.message
        headers = {"message": message, "content-type": "text/plain"}
        if frame is not None:
            receipt = frame.headers.get("receipt")
            if receipt is not None:
                headers["receipt-id"] = receipt
        body = f"{exc.java_class}: {message}\n".encode()
        self._emit(StompFrame("ERROR", headers, body))
        if exc.fatal:
            self._fail_connection()

    def _fail_connection(self) -> None:
        """Close after the pending output; the broker sees a failed transport (what ActiveMQ does on fatal errors)."""
        self.close_after_output = True
        if not self.closed:
            self._teardown(graceful=False)

    # -- CONNECT ------------------------------------------------------------------------------------------------------

    def _on_connect(self, frame: StompFrame) -> None:
        if self.connected:
            raise StompError("Already connected.")
        headers = frame.headers
        accept = headers.get("accept-version")
        if accept is None:
            version = "1.0"
        else:
            offered = {v.strip(_JAVA_WS) for v in accept.split(",")}
            common = [v for v in VERSIONS if v in offered]
            if not common:
                raise StompError(
                    f"Invalid Protocol version[{accept}], supported versions are: [1.2, 1.1, 1.0]", fatal=True
                )
            version = common[-1]
        heart_beat = headers.get("heart-beat", "0,0")
        parts = heart_beat.split(",")
        if len(parts) != 2 or not all(_LONG.fullmatch(p) for p in parts):
            raise StompError(f"Invalid heart-beat header:{heart_beat}", fatal=True)
        client_sends, client_wants = (max(0, int(p)) for p in parts)
        login = headers.get("login")
        passcode = headers.get("passcode")
        if self.authenticator is not None:
            try:
                admitted = self.authenticator(login, passcode)
            except AccessDenied as exc:
                raise StompError(exc.message or str(exc), fatal=True,
                                 java_class="java.lang.SecurityException") from None
            if not admitted:
                raise StompError(f"User name [{login}] or password is invalid.", fatal=True,
                                 java_class="java.lang.SecurityException")
        client_id = headers.get("client-id")
        if client_id is not None and any(c.client_id == client_id for c in self.broker.core.connections.values()):
            raise StompError(
                f"Broker: {self.broker.name} - Client: {client_id} already connected from {self.remote_address}",
                fatal=True, java_class="javax.jms.InvalidClientIDException",
            )
        try:
            self._core = self.broker.core
            self.connection_id = self.broker.open_connection(client_id, user=login, password=passcode, remote=True)
        except MinibrokerError as exc:
            raise StompError(exc.message or str(exc), fatal=True, java_class=_java_class(exc)) from None
        self.connected = True
        self.session_id = client_id if client_id is not None else self._name
        self.heart_beat = (client_wants, client_sends)
        reply = {"session": self.session_id}
        request_id = headers.get("request-id", headers.get("receipt"))
        if request_id is not None:
            reply["response-id"] = request_id
            reply["receipt-id"] = request_id
        reply["version"] = version
        reply["heart-beat"] = f"{client_wants},{client_sends}"
        reply["server"] = f"ActiveMQ/{ACTIVEMQ_VERSION}"
        # CONNECTED goes out before the switch to the new version: never escaped
        self._emit(StompFrame("CONNECTED", reply), "1.0")
        self.version = version

    # -- destinations -------------------------------------------------------------------------------------------------

    def _temporaries(self) -> set[tuple[DestinationKind, str]]:
        found = _temporaries.get(self.broker)
        if found is None:
            found = _temporaries[self.broker] = set()
        return found

    def _temporary(self, kind: DestinationKind, name: str) -> Destination:
        physical = self._temp_by_stomp.get((kind, name))
        if physical is None:
            physical = f"{self._name}:{len(self._temp_by_stomp) + 1}"
            self._temp_by_stomp[(kind, name)] = physical
            self._temp_names[(kind, physical)] = name
            self._temporaries().add((kind, physical))
        return Destination(kind, physical)

    def _destination(self, name: str, *, fallback: bool) -> list[Destination]:
        """STOMP destination names (a comma list is composite) as broker destinations."""
        cache = self._destinations if fallback else self._strict_destinations
        found = cache.get(name)
        if found is None:
            found = [self._one_destination(part, fallback=fallback) for part in name.strip(_JAVA_WS).split(",")]
            if len(cache) >= 1024:
                cache.clear()
            cache[name] = found
        return found

    def _one_destination(self, name: str, *, fallback: bool) -> Destination:
        if name.startswith("/queue/"):
            return Destination.parse("queue://" + name[7:])
        if name.startswith("/topic/"):
            return Destination.parse("topic://" + name[7:])
        if name.startswith("/temp-queue/"):
            return self._temporary(QUEUE, name[12:])
        if name.startswith("/temp-topic/"):
            return self._temporary(TOPIC, name[12:])
        if name.startswith("/remote-temp-queue/"):
            return Destination.parse("queue://" + name[19:])
        if name.startswith("/remote-temp-topic/"):
            return Destination.parse("topic://" + name[19:])
        if fallback:
            return Destination.parse(name)
        raise StompError(
            f"Illegal destination name: [{name}] -- ActiveMQ STOMP destinations must begin with one of: "
            "/queue/ /topic/ /temp-queue/ /temp-topic/"
        )

    def stomp_name(self, destination: Destination) -> str:
        """How this client sees a broker destination: ``/queue/X``, ``/topic/X``, ``/temp-queue/N``, ..."""
        found = self._stomp_names.get(destination)
        if found is not None:
            return found
        kind = destination.kind
        name = destination.name
        if name.startswith(_TEMPORARY_PREFIX):  # possibly a STOMP temporary destination, now or later: not cached
            temporaries = _temporaries.get(self.broker)
            if temporaries and (kind, name) in temporaries:
                own = self._temp_names.get((kind, name))
                if own is not None:
                    return ("/temp-queue/" if kind is QUEUE else "/temp-topic/") + own
                return ("/remote-temp-queue/" if kind is QUEUE else "/remote-temp-topic/") + name
            return ("/queue/" if kind is QUEUE else "/topic/") + name
        found = ("/queue/" if kind is QUEUE else "/topic/") + name
        if len(self._stomp_names) >= 1024:
            self._stomp_names.clear()
            self._escaped_names.clear()
        self._stomp_names[destination] = found
        return found

    # -- SEND ---------------------------------------------------------------------------------------------------------

    def _on_send(self, frame: StompFrame) -> None:
        headers = frame.headers
        name = headers.get("destination")
        if name is None:
            raise StompError("SEND received without a Destination specified!")
        destinations = self._destinations.get(name) or self._destination(name, fallback=True)
        if "transformation" in headers:
            raise refuse("stomp-transformation", headers["transformation"])  # issue 17: jms-xml/json not supported
        message = self._message(frame, destinations[0])
        tx_name = headers.get("transaction")
        txn = None if tx_name is None else self._core_transaction(tx_name)
        connection_id = self.connection_id
        assert connection_id is not None
        if len(destinations) == 1:
            self.broker.send(connection_id, message, txn)
            return
        for destination in destinations:  # issue 17: a refused part refuses the whole SEND, before any copy goes
            check_send_destination(destination)
        for destination in destinations:
            same = destination is message.destination or destination == message.destination
            self.broker.send(connection_id, message if same else attrs.evolve(message, destination=destination), txn)

    def _core_transaction(self, name: str | None) -> int | None:
        if name is None:
            return None
        txn = self._transactions.get(name)
        if txn is None:
            raise StompError(f"Invalid transaction id: {name}")
        return txn.core_id

    def _message(self, frame: StompFrame, destination: Destination) -> Message:
        headers = frame.headers
        now = self._now()
        priority = 4
        expiration = 0.0
        timestamp = now
        properties: dict[str, PropertyValue] = {}
        reply_to: Destination | None = None
        group_seq = 0
        persistent = False
        correlation_id = message_type = group_id = None
        is_text = "content-length" not in headers
        if not _SEND_SPECIAL.isdisjoint(headers):  # anything beyond destination, content-length and properties
            kind = headers.get("amq-msg-type")
            if kind is not None:
                if kind not in ("text", "bytes"):
                    raise StompError(f"Unsupported message type '{kind}'")
                is_text = kind == "text"
            if (value := headers.get("priority")) is not None:
                priority = _parse_long(value)
            if (value := headers.get("expires")) is not None:
                expires = _parse_long(value)
                expiration = expires / 1000.0 if expires > 0 else 0.0
            if (value := headers.get("timestamp")) is not None:
                timestamp = _parse_long(value) / 1000.0
            if (value := headers.get("reply-to")) is not None:
                try:
                    reply_to = self._one_destination(value.strip(_JAVA_WS), fallback=False)
                except (StompError, InvalidDestination):
                    properties["reply-to"] = value
            if (value := headers.get("JMSXGroupSeq")) is not None:
                parsed = _parse_int_option(value)
                group_seq = parsed if parsed is not None else 0
            persistent = headers.get("persistent") == "true"
            correlation_id = headers.get("correlation-id")
            message_type = headers.get("type")
            group_id = headers.get("JMSXGroupID")
        body: str | bytes = frame.body.decode("utf-8", "replace") if is_text else frame.body
        for name, value in headers.items():
            if name in _SEND_CONSUMED:
                continue
            if name in _SCHEDULER_PROPERTIES and _LONG.fullmatch(value.strip(_JAVA_WS)):
                properties[name] = int(value.strip(_JAVA_WS))
            else:
                properties[name] = value
        self._message_seq = seq = self._message_seq + 1
        producer = self._producer_id
        # positional: the field order is checked at import (_MESSAGE_FIELDS); keywords cost ~0.4 us more per send
        return Message(f"{producer}:{seq}", destination, body, properties, priority, persistent, timestamp,
                       expiration, correlation_id, reply_to, message_type, group_id, group_seq, producer, seq)

    # -- SUBSCRIBE / UNSUBSCRIBE ------------------------------------------------------------------------------------

    def _on_subscribe(self, frame: StompFrame) -> None:
        headers = frame.headers
        sub_id = headers.get("id")
        name = headers.get("destination")
        if self.version != "1.0" and sub_id is None:
            raise StompError("SUBSCRIBE received without a subscription id!")
        if not name:
            raise StompError("Invalid empty or 'null' Destination header")
        destinations = self._destination(name, fallback=True)
        if len(destinations) != 1:
            raise refuse("stomp-composite-subscribe", name)
        destination = destinations[0]
        check_consumer_destination(destination)  # issue 17: also for browsers, which never reach the core's consumers
        check_stomp_subscribe_headers(headers)  # activemq.retroactive, transformation, ...: UnsupportedFeature
        prefetch = QUEUE_PREFETCH if destination.is_queue else TOPIC_PREFETCH
        browser = headers.get("browser") == "true"
        if browser:
            if self.version == "1.0":
                raise StompError("Queue Browser feature only valid for Stomp v1.1+ clients!")
            prefetch = BROWSER_PREFETCH
        size = _parse_int_option(headers.get("activemq.prefetchSize"))
        if size is not None and size >= 0:
            prefetch = size
        priority = _parse_int_option(headers.get("activemq.priority"))
        exclusive = _parse_bool_option(headers.get("activemq.exclusive"))
        no_local = _parse_bool_option(headers.get("activemq.noLocal"))
        if "activemq.subscriptionName" in headers:
            if destination.is_queue:
                raise StompError("Invalid Subscription: cannot durably subscribe to a Queue destination!")
            raise refuse("stomp-durable", headers["activemq.subscriptionName"])
        ack = headers.get("ack")
        mode = ack if ack in (AckMode.CLIENT, AckMode.INDIVIDUAL) else AckMode.AUTO
        sub = _Subscription(sub_id, destination, self.stomp_name(destination), mode, browser)
        if sub_id is not None:
            escaped_id = _escape_value(sub_id, self.version)
            sub.id_line = None if escaped_id is None else "\nsubscription:" + escaped_id
        if browser:
            self._register(sub)
            if destination.is_queue:
                self._browse(sub)
            self._emit(StompFrame("MESSAGE", {**({"subscription": sub_id} if sub_id is not None else {}),
                                              "browser": "end", "destination": sub.stomp_destination,
                                              "message-id": "0"}))
            return
        selector = headers.get("selector") or None
        if selector is not None:
            from minibroker.selector import CONVERT_STRINGS_PREFIX

            # as ActiveMQ's connector: STOMP headers are all strings, so comparisons read them as numbers or booleans
            selector = CONVERT_STRINGS_PREFIX + selector
        info = ConsumerInfo(
            destination=destination,
            prefetch=prefetch,
            selector=selector,
            priority=max(-128, min(127, priority)) if priority is not None else 0,
            exclusive=bool(exclusive),
            no_local=bool(no_local),
        )
        assert self.connection_id is not None
        route: Callable[[Dispatch], None] = functools.partial(self._on_dispatch, sub)  # a C call, no Python frame
        sub.consumer_id = self.broker.add_consumer(self.connection_id, info, route)
        self._register(sub)

    def _register(self, sub: _Subscription) -> None:
        if sub.header_id is not None:
            self._subs[sub.header_id] = sub
        if sub.consumer_id is not None:
            self._by_consumer[sub.consumer_id] = sub
        self._all_subs.append(sub)

    def _browse(self, sub: _Subscription) -> None:
        """A queue browser: what the queue holds, in flight included, without consuming it (at most a page)."""
        core = self.broker.core
        queue = core.queues.get(sub.destination.name)
        if queue is None:
            return
        for message in core.browse(sub.destination.name, limit=queue.policy.max_browse_page_size):
            self._deliver(sub, message, 0)

    def _on_dispatch(self, sub: _Subscription, dispatch: Dispatch) -> None:
        message = dispatch.message
        if message is None or sub.closed:
            return
        if sub.consumer_id is None:
            sub.consumer_id = dispatch.consumer_id
        if sub.mode != AckMode.AUTO:
            self._deliver(sub, message, dispatch.redelivery_counter)
            return
        # _deliver and _emit inline (the hot path of an auto subscription), then the ack owed
        data = self._message_bytes(sub, message, dispatch.redelivery_counter, None)
        self._out.append((data if data is not None else self._message_frame(sub, message, dispatch.redelivery_counter,
                                                                           None), self.version))
        self._auto_acks.append((dispatch.consumer_id, message.message_id))
        if not self._in_frame and self.on_output is not None:
            self.on_output()

    def _deliver(self, sub: _Subscription, message: Message, redelivery_counter: int) -> None:
        ack_id: str | None = None
        if sub.mode != AckMode.AUTO:
            if self.version == "1.2":
                self._ack_seq += 1
                ack_id = str(self._ack_seq)
            delivery = _Delivery(message.message_id, ack_id, sub.next_index)
            sub.next_index += 1
            sub.unacked[message.message_id] = delivery
            if ack_id is not None:
                self._acks[ack_id] = (sub, delivery)
        data = self._message_bytes(sub, message, redelivery_counter, ack_id)
        self._out.append((data if data is not None else self._message_frame(sub, message, redelivery_counter, ack_id),
                          self.version))
        if not self._in_frame and self.on_output is not None:
            self.on_output()

    def _message_bytes(
        self, sub: _Subscription, message: Message, redelivery_counter: int, ack_id: str | None
    ) -> bytes | None:
        """The MESSAGE frame :meth:`_message_frame` makes, encoded at once (the usual case, about 4x cheaper than a
        header dict and :func:`encode_frame`); None when it takes the frame path: STOMP 1.0, a property named like
        one of the frame's own headers (it would replace that header in place), or a value that cannot be written as
        it is (a NUL: the frame path writes it sanitized). Checked against the frame path in the tests."""
        version = self.version
        id_line = sub.id_line
        properties = message.properties
        if version == "1.0" or id_line is None or (properties and not _MESSAGE_HEADERS.isdisjoint(properties)):
            return None
        message_id = _escape_value(message.message_id, version)
        if message_id is None:
            return None
        destination = message.destination
        name = self._escaped_names.get(destination)
        if name is None:
            name = _escape_value(self.stomp_name(destination), version)
            if name is None:
                return None
            if destination in self._stomp_names:  # not a temporary destination: its name stays
                self._escaped_names[destination] = name
        body = message.body
        if (
            type(body) is bytes and not properties and not redelivery_counter and not message.persistent
            and message.correlation_id is None and message.reply_to is None and message.type is None
            and message.original_destination is None
        ):  # the plainest MESSAGE (no optional header): one f-string
            expiration = message.expiration
            ack_line = "" if ack_id is None else "\nack:" + ack_id
            head = (
                f"MESSAGE\nmessage-id:{message_id}\ndestination:{name}"
                f"\nexpires:{round(expiration * 1000) if expiration else 0}\npriority:{message.priority}"
                f"\ntimestamp:{round(message.timestamp * 1000)}{id_line}{ack_line}\ncontent-length:{len(body)}\n\n"
            )
            return b"".join((head.encode("utf-8"), body, b"\0\n"))
        parts = ["MESSAGE\nmessage-id:", message_id, "\ndestination:", name]
        if message.correlation_id is not None:
            text = _escape_value(message.correlation_id, version)
            if text is None:
                return None
            parts += ("\ncorrelation-id:", text)
        expiration = message.expiration
        parts += ("\nexpires:", str(int(round(expiration * 1000))) if expiration else "0")
        if redelivery_counter > 0:
            parts.append("\nredelivered:true")
        parts += ("\npriority:", str(message.priority))
        if message.reply_to is not None:
            text = _escape_value(self.stomp_name(message.reply_to), version)
            if text is None:
                return None
            parts += ("\nreply-to:", text)
        parts += ("\ntimestamp:", str(int(round(message.timestamp * 1000))))
        if message.type is not None:
            text = _escape_value(message.type, version)
            if text is None:
                return None
            parts += ("\ntype:", text)
        if message.original_destination is not None:
            text = _escape_value(self.stomp_name(message.original_destination), version)
            if text is None:
                return None
            parts += ("\noriginal-destination:", text)
        if message.persistent:
            parts.append("\npersistent:true")
        if properties:
            for key, value in properties.items():
                text = value if type(value) is str else java_string(value)
                if text is None:
                    continue
                escaped_key = _escape_value(key, version)
                escaped_text = _escape_value(text, version)
                if escaped_key is not None and escaped_text is not None:  # else: dropped, as can_encode_header says
                    parts += ("\n", escaped_key, ":", escaped_text)
        parts.append(id_line)
        if ack_id is not None:
            parts += ("\nack:", ack_id)  # digits
        if isinstance(body, str):
            data = body.encode("utf-8")
            if b"\0" in data:
                parts += ("\ncontent-length:", str(len(data)))
        else:
            data = body
            parts += ("\ncontent-length:", str(len(data)))
        parts.append("\n\n")
        return b"".join(("".join(parts).encode("utf-8"), data, b"\0\n"))

    def _message_frame(
        self, sub: _Subscription, message: Message, redelivery_counter: int, ack_id: str | None
    ) -> StompFrame:
        destination = message.destination
        headers: dict[str, str] = {
            "message-id": message.message_id,
            "destination": self._stomp_names.get(destination) or self.stomp_name(destination),
        }
        if message.correlation_id is not None:
            headers["correlation-id"] = message.correlation_id
        expiration = message.expiration
        headers["expires"] = str(int(round(expiration * 1000))) if expiration else "0"
        if redelivery_counter > 0:
            headers["redelivered"] = "true"
        headers["priority"] = str(message.priority)
        if message.reply_to is not None:
            headers["reply-to"] = self.stomp_name(message.reply_to)
        headers["timestamp"] = str(int(round(message.timestamp * 1000)))
        if message.type is not None:
            headers["type"] = message.type
        if message.original_destination is not None:
            headers["original-destination"] = self.stomp_name(message.original_destination)
        if message.persistent:
            headers["persistent"] = "true"
        properties = message.properties
        if properties:
            version = self.version
            for name, value in properties.items():
                text = value if type(value) is str else java_string(value)
                if text is not None and can_encode_header(name, text, version):
                    headers[name] = text
        if sub.header_id is not None:
            headers["subscription"] = sub.header_id
        if ack_id is not None:
            headers["ack"] = ack_id
        body = message.body
        if isinstance(body, str):
            data = body.encode("utf-8")
            if b"\0" in data:
                # a text body holding NUL would end the frame early: counted, unlike ActiveMQ (which corrupts it)
                headers["content-length"] = str(len(data))
            else:
                headers.pop("content-length", None)
        else:
            data = body
            headers["content-length"] = str(len(data))
        return StompFrame("MESSAGE", headers, data)

    def _on_unsubscribe(self, frame: StompFrame) -> None:
        headers = frame.headers
        name = headers.get("destination")
        destination = self._destination(name, fallback=True)[0] if name is not None else None
        sub_id = headers.get("id")
        if self.version != "1.0" and sub_id is None:
            raise StompError("UNSUBSCRIBE received without a subscription id!")
        if sub_id is None and destination is None:
            raise StompError("Must specify the subscriptionId or the destination you are unsubscribing from")
        if "activemq.subscriptionName" in headers:
            raise refuse("stomp-durable", headers["activemq.subscriptionName"])
        if sub_id is not None:
            sub = self._subs.pop(sub_id, None)
            if sub is not None:
                self._remove(sub)
                return
        else:
            for sub in self._all_subs:
                if sub.destination == destination:
                    if sub.header_id is not None and self._subs.get(sub.header_id) is sub:
                        del self._subs[sub.header_id]
                    self._remove(sub)
                    return
        raise StompError("No subscription matched.")

    def _remove(self, sub: _Subscription) -> None:
        """Close one subscription: every message it holds goes back, counted as delivered (redelivered:true)."""
        sub.closed = True
        if sub in self._all_subs:
            self._all_subs.remove(sub)
        for delivery in sub.unacked.values():
            if delivery.ack_id is not None:
                self._acks.pop(delivery.ack_id, None)
        sub.unacked.clear()
        if sub.consumer_id is not None:
            self._by_consumer.pop(sub.consumer_id, None)
            assert self.connection_id is not None
            self.broker.remove_consumer(self.connection_id, sub.consumer_id, NOW_UNKNOWN_DELIVERED)

    # -- ACK / NACK ---------------------------------------------------------------------------------------------------

    def _find(self, frame: StompFrame, *, nack: bool) -> tuple[_Subscription, _Delivery] | None:
        """The subscription and delivery an ACK/NACK names, after ActiveMQ's header checks (None: no such one)."""
        headers = frame.headers
        version = self.version
        message_id = headers.get("message-id")
        sub_id = headers.get("subscription")
        if nack:
            if version == "1.0":
                raise StompError("NACK received but connection is in v1.0 mode.")
            if version == "1.1":
                if sub_id is None:
                    raise StompError("NACK received without a subscription id for acknowledge!")
                if message_id is None:
                    raise StompError("NACK received without a message-id to acknowledge!")
        else:
            if message_id is None and version != "1.2":
                raise StompError("ACK received without a message-id to acknowledge!")
            if version == "1.1" and sub_id is None:
                raise StompError("ACK received without a subscription id for acknowledge!")
        ack_id = headers.get("id") if version == "1.2" else None
        if version == "1.2" and ack_id is None:
            raise StompError(
                "NACK received without an ack header to acknowledge!" if nack
                else "ACK received without a ack id for acknowledge!"
            )
        self._core_transaction(headers.get("transaction"))
        if ack_id is not None:
            return self._acks.get(ack_id)
        assert message_id is not None
        if sub_id is not None:
            sub = self._subs.get(sub_id)
            if sub is None:
                return None
            delivery = sub.unacked.get(message_id)
            if delivery is None:
                if nack:
                    raise _Ignored
                return None
            return sub, delivery
        for sub in self._all_subs:
            delivery = sub.unacked.get(message_id)
            if delivery is not None:
                return sub, delivery
        return None

    def _unexpected(self, frame: StompFrame, word: str) -> NoReturn:
        raise StompError(f"Unexpected {word} received for message-id [{frame.headers.get('message-id', 'null')}]")

    def _forget(self, sub: _Subscription, deliveries: Iterable[_Delivery]) -> None:
        for delivery in deliveries:
            sub.unacked.pop(delivery.message_id, None)
            if delivery.ack_id is not None:
                self._acks.pop(delivery.ack_id, None)

    def _on_ack(self, frame: StompFrame) -> None:
        headers = frame.headers
        if self.version == "1.2" and "transaction" not in headers:
            # the usual client-individual ACK: a known ack id, no transaction (anything else: the general path)
            ack_id = headers.get("id")
            known = None if ack_id is None else self._acks.get(ack_id)
            if known is not None and known[0].mode == AckMode.INDIVIDUAL and not known[0].browser:
                sub, delivery = known
                message_id = delivery.message_id
                assert self.connection_id is not None and sub.consumer_id is not None and ack_id is not None
                self.broker.ack(self.connection_id, MessageAck(
                    sub.consumer_id, AckType.INDIVIDUAL, message_id, message_id, 1, None))
                sub.unacked.pop(message_id, None)
                self._acks.pop(ack_id, None)
                return
        found = self._find(frame, nack=False)
        if found is None:
            self._unexpected(frame, "ACK")
        sub, delivery = found
        tx_name = frame.headers.get("transaction")
        txn = self._transactions[tx_name] if tx_name is not None else None
        assert self.connection_id is not None
        if sub.browser:
            self._forget(sub, [delivery])
            return
        assert sub.consumer_id is not None
        if sub.mode == AckMode.CLIENT:
            span: list[_Delivery] = []
            for item in sub.unacked.values():
                span.append(item)
                if item is delivery:
                    break
            first = span[0].message_id
            if txn is None:
                self.broker.ack(self.connection_id, MessageAck(
                    sub.consumer_id, AckType.STANDARD, delivery.message_id, first, len(span)))
            else:
                # the prefetch slots are free at once; the messages are settled at COMMIT
                self.broker.ack(self.connection_id, MessageAck(
                    sub.consumer_id, AckType.DELIVERED, delivery.message_id, first, len(span)))
                self.broker.ack(self.connection_id, MessageAck(
                    sub.consumer_id, AckType.STANDARD, delivery.message_id, first, len(span), txn.core_id))
                txn.acked.extend((sub, item) for item in span)
            self._forget(sub, span)
        else:
            self.broker.ack(self.connection_id, MessageAck(
                sub.consumer_id, AckType.INDIVIDUAL, delivery.message_id, delivery.message_id, 1,
                None if txn is None else txn.core_id))
            if txn is not None:
                txn.acked.append((sub, delivery))
            self._forget(sub, [delivery])

    def _on_nack(self, frame: StompFrame) -> None:
        try:
            found = self._find(frame, nack=True)
        except _Ignored:
            return  # 1.1: a known subscription and an unknown message id: ActiveMQ says nothing
        if found is None:
            self._unexpected(frame, "NACK")
        sub, delivery = found
        if sub.browser:
            raise StompError("Cannot Nack a message on a Queue Browser Subscription.")
        tx_name = frame.headers.get("transaction")
        txn = self._transactions[tx_name] if tx_name is not None else None
        assert self.connection_id is not None and sub.consumer_id is not None
        # one message, straight to the dead-letter path (or the broker redelivery plugin); no cause is given
        self.broker.ack(self.connection_id, MessageAck(
            sub.consumer_id, AckType.POISON, delivery.message_id, delivery.message_id, 1,
            None if txn is None else txn.core_id))
        self._forget(sub, [delivery])

    def _run_auto_acks(self, limit: int | None) -> None:
        """Send the owed auto acks, oldest first (at most ``limit`` messages, counting those dispatched meanwhile).

        Consecutive acks of one consumer go as one STANDARD range ack (first..last, with its count), which the broker
        checks against what it dispatched: all of a consumer's auto acks are owed in dispatch order, so the range is
        exactly those messages. Should it not be (the broker refuses the count or the ids), each message is acked on
        its own, as before; a refusal then means the message is no longer held (the consumer went away meanwhile).
        A lone message goes through ``Broker.ack_one`` (the same STANDARD ack, without building a MessageAck).
        """
        pending = self._auto_acks
        connection_id = self.connection_id
        if not pending or connection_id is None:
            return
        budget: float = math.inf if limit is None else limit
        ack = self.broker.ack
        ack_one = self.broker.ack_one
        by_consumer = self._by_consumer
        while pending and budget > 0:
            consumer_id, first = pending.popleft()
            budget -= 1
            if not pending or pending[0][0] != consumer_id:  # one message (prefetch 1, or several consumers)
                if consumer_id in by_consumer:
                    try:
                        if not ack_one(connection_id, consumer_id, first):  # not held any more: the full ack
                            ack(connection_id, MessageAck(consumer_id, AckType.STANDARD, first, first, 1))
                    except MinibrokerError:
                        pass
                continue
            ids = [first]
            while pending and budget > 0 and pending[0][0] == consumer_id:
                ids.append(pending.popleft()[1])
                budget -= 1
            if consumer_id not in by_consumer:
                continue
            try:
                ack(connection_id, MessageAck(consumer_id, AckType.STANDARD, ids[-1], first, len(ids)))
                continue
            except MinibrokerError:
                if len(ids) == 1:
                    continue
            for message_id in ids:
                try:
                    ack(connection_id, MessageAck(consumer_id, AckType.STANDARD, message_id, message_id, 1))
                except MinibrokerError:
                    pass

    # -- transactions -------------------------------------------------------------------------------------------------

    def _on_begin(self, frame: StompFrame) -> None:
        name = frame.headers.get("transaction")
        if name is None:
            raise StompError("Must specify the transaction you are beginning")
        if name in self._transactions:
            raise StompError(f"The transaction was already started: {name}")
        assert self.connection_id is not None
        self._transactions[name] = _Transaction(self.broker.begin(self.connection_id))

    def _take_transaction(self, frame: StompFrame) -> _Transaction:
        name = frame.headers.get("transaction")
        if name is None:
            raise StompError("Must specify the transaction you are committing")
        txn = self._transactions.pop(name, None)
        if txn is None:
            raise StompError(f"Invalid transaction id: {name}")
        return txn

    def _on_commit(self, frame: StompFrame) -> None:
        txn = self._take_transaction(frame)
        assert self.connection_id is not None
        self.broker.commit(self.connection_id, txn.core_id)

    def _on_abort(self, frame: StompFrame) -> None:
        txn = self._take_transaction(frame)
        assert self.connection_id is not None
        self.broker.rollback(self.connection_id, txn.core_id)
        # ActiveMQ 5.17: the acked messages stay with their subscription, not redelivered, ackable again
        touched: list[_Subscription] = []
        for sub, delivery in txn.acked:
            if sub.closed:
                continue
            sub.unacked[delivery.message_id] = delivery
            if delivery.ack_id is not None:
                self._acks[delivery.ack_id] = (sub, delivery)
            if sub not in touched:
                touched.append(sub)
        for sub in touched:
            sub.unacked = dict(sorted(sub.unacked.items(), key=lambda item: item[1].index))

    # -- DISCONNECT and teardown --------------------------------------------------------------------------------------

    def _on_disconnect(self, frame: StompFrame) -> None:
        receipt = frame.headers.get("receipt")
        if receipt is not None:
            self._emit(StompFrame("RECEIPT", {"receipt-id": receipt}))
        self._teardown(graceful=True)
        self.close_after_output = True

    def _teardown(self, *, graceful: bool) -> None:
        """Give back what the client held (all counted as delivered), roll back, forget temporaries."""
        self.closed = True
        if self.connection_id is None or self.broker.core is not self._core:
            return  # never connected, or the broker restarted: nothing of ours is left in it
        self._run_auto_acks(None)
        subs = list(self._all_subs)
        for sub in subs:
            sub.closed = True  # messages released by one are not handed to another of this connection
        for sub in subs:
            self._remove(sub)
        self._subs.clear()
        self.broker.close_connection(self.connection_id, -1 if graceful else None)
        self._transactions.clear()
        temporaries = _temporaries.get(self.broker)
        for kind, physical in self._temp_names:
            if temporaries is not None:
                temporaries.discard((kind, physical))
            if kind is QUEUE:
                self.broker.queue(physical).purge()
        self._temp_names.clear()
        self._temp_by_stomp.clear()


class _Ignored(Exception):
    """A NACK ActiveMQ accepts without doing anything."""


def _sanitized(frame: StompFrame, version: str) -> StompFrame:
    """A frame whose headers were refused by the encoder, made writable (control characters replaced)."""
    headers: dict[str, str] = {}
    for name, value in frame.headers.items():
        if not can_encode_header(name, value, version):
            name = re.sub(r"[\0\r\n:]", "_", name) if version == "1.0" else name.replace("\0", "_")
            value = re.sub(r"[\0\r\n]", " ", value) if version == "1.0" else value.replace("\0", " ")
        headers.setdefault(name, value)
    body = frame.body
    if b"\0" in body and "content-length" not in headers:
        headers["content-length"] = str(len(body))
    return StompFrame(frame.command, headers, body)
