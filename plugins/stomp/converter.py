"""STOMP frames to broker operations and back, as ActiveMQ 5.17's ``ProtocolConverter`` does it; sans I/O.

One :class:`StompConverter` serves one client connection. The listener feeds it decoded frames
(:meth:`~StompConverter.receive_frame`) and writes what :meth:`~StompConverter.data_to_send` returns; the converter
does everything through the client's :class:`~minibroker.BrokerConnection` (its methods are synchronous; it
authorizes every operation) and never touches a socket, a timer or the event loop.

Beside it, one idea per module: :mod:`.values` (Java's value formats, the refusals), :mod:`.naming` (STOMP
destination names), :mod:`.messages` (SEND to Message, dispatch to MESSAGE), :mod:`.subscriptions` (what each
subscription holds, how acks reach the broker) and :mod:`.output` (the connection's output, and the routes that make
MESSAGEs of the broker's dispatches: the converter's base class); this module is the protocol's state machine.

Theory of operation
-------------------
* **Output** is a FIFO of frames, each kept with the protocol version it is written in (CONNECTED and anything
  before it in 1.0, unescaped, as ActiveMQ writes CONNECTED before switching versions). Dispatches from the broker
  arrive through the route given to ``BrokerConnection.add_consumer`` -- possibly while another connection's frame
  is being handled -- and only append MESSAGE frames; ``on_output`` tells the listener there is something to write.
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
* **Producer flow control**: a SEND to a queue over its memory limit asks ``Broker.admit`` like every edge; when
  it must wait, the converter keeps it in :attr:`~StompConverter.held_admission` and takes no further frame; the
  listener awaits the admission and calls :meth:`~StompConverter.release_held`, which sends (RECEIPT) or answers
  the wait's error (ERROR), as ActiveMQ blocks the producer's connection.
* **Closing**: DISCONNECT, UNSUBSCRIBE and a dropped transport all give back every unacked message with
  ``redelivered:true`` (the broker counts them all as delivered), roll back open transactions and forget the
  connection's temporary destinations.
* **redelivered** is the *message's* own counter, as ActiveMQ's FrameTranslator reads ``getJMSRedelivered()`` of the
  broker's message: a queue raises it when a consumer gives a message back, but a topic message's stays 0 (a durable
  subscription counts a redelivery on the dispatch only, which a JMS client reads and a STOMP client never sees).
"""

from __future__ import annotations

import functools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Final, NoReturn

import attrs

from minibroker import NOW_UNKNOWN_DELIVERED, AckType, ConsumerInfo, MessageAck
from minibroker._defaults import DEFAULT_MAX_TRANSFORMATION_ENTRIES
from minibroker.errors import (
    AccessDenied,
    DestinationDoesNotExist,
    MinibrokerError,
    RemoteProtocolError,
)
from minibroker.message import Destination, DestinationKind, Message
from minibroker.refusals import (
    check_browser_destination,
    check_consumer_destination,
    check_stomp_subscribe_headers,
    refuse,
)
from minibroker.transport import commands as c

from .advisories import renders_advisories_of
from .codec import StompFrame
from .messages import message_from_send
from .naming import DestinationNames, new_connection_name
from .output import _ConnectionOutput
from .subscriptions import (
    Delivery,
    Ignored,
    StompAckMode,
    Subscription,
    Transaction,
    find_delivery,
    send_ack,
    send_auto_acks,
)
from .values import (
    PROTOCOL_EXCEPTION,
    DropConnection,
    StompError,
    escape_value,
    negotiate_version,
    parse_bool_option,
    parse_heart_beat,
    parse_int_option,
)

if TYPE_CHECKING:  # types only: the driver's results (a held send's Admission) load when a send is held (issue 45)
    from minibroker import Admission, Broker, BrokerConnection, Dispatch

__all__ = [
    "ACTIVEMQ_VERSION",
    "PROTOCOL_EXCEPTION",
    "Authenticator",
    "StompAckMode",
    "StompConverter",
    "StompError",
]

#: what CONNECTED's ``server`` header claims, so clients that look at it behave as against the real broker
ACTIVEMQ_VERSION: Final = "5.17.2"

#: ``authenticator(login, passcode)``: True admits the client; False or ``AccessDenied`` refuses it
Authenticator = Callable[[str | None, str | None], bool]

log = logging.getLogger("minibroker.stomp")

QUEUE = DestinationKind.QUEUE
TOPIC = DestinationKind.TOPIC

#: default prefetch by kind of destination (ActiveMQPrefetchPolicy), whatever the ack mode
QUEUE_PREFETCH: Final = 1000
TOPIC_PREFETCH: Final = 32767
#: a SUBSCRIBE with ``activemq.subscriptionName`` (ProtocolConverter.onStompSubscribe; recorded in its advisory)
DURABLE_TOPIC_PREFETCH: Final = 100
BROWSER_PREFETCH: Final = 500


@attrs.define(slots=True, eq=False)
class _HeldSend:
    """A SEND whose queue is over its memory limit: its messages (made when the frame came, as ActiveMQ stamps them)
    wait for the broker's admission, and the connection's following frames wait behind them."""

    frame: StompFrame
    messages: list[Message]
    transaction: int | None
    admission: Admission


def _not_connected(message: Message, transaction_id: int | None, sync: bool) -> None:
    raise StompError("Not connected.")


class _Held(Exception):
    """The frame is held (producer flow control): no reply yet."""


class StompConverter(_ConnectionOutput):
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
        #: the broker connection this client logged in as (None until CONNECT): the one door
        self.connection: BrokerConnection | None = None
        #: CONNECTED's ``session``: the client id
        self.session_id = ""
        #: (broker writes a heart-beat after this many ms of silence, broker expects input every this many ms); 0 = off
        self.heart_beat: tuple[int, int] = (0, 0)
        #: write what is pending, then close the transport (DISCONNECT, fatal error)
        self.close_after_output = False
        #: the broker connection is gone
        self.closed = False
        self._name = new_connection_name()
        #: STOMP destination names and broker destinations, both ways (temporary destinations included)
        self._names = DestinationNames(broker, self._name)
        self._message_seq = 0
        self._ack_seq = 0
        #: what to write, oldest first, each with the version it is written in: a frame, or a MESSAGE already encoded
        self._out: list[tuple[StompFrame | bytes, str]] = []
        #: message bytes rendered since the output was last taken, and how many may be (the listener sets 1 MiB):
        #: past it a dispatch waits in ``_backlog`` (a reference, not a rendered copy) until the peer has read what
        #: went before, so a window of large messages is never rendered at once for a client that does not read
        self._pending_bytes = 0
        self.render_budget = 1 << 62
        #: the most map entries a transformation renders or parses, and the most characters it renders (the
        #: listener's ``max_transformation_entries`` and ``max_frame_size``): past them, transformations.py
        self.max_transformation_entries = DEFAULT_MAX_TRANSFORMATION_ENTRIES
        #: a dispatch could not be written: the connection is closing as a failed transport (_render_or_fail)
        self._render_failed = False
        self.max_render_size: int | None = None
        self._backlog: deque[tuple[Subscription, Dispatch]] = deque()
        self._auto_acks: deque[tuple[int, str]] = deque()
        self._subs: dict[str, Subscription] = {}
        self._by_consumer: dict[int, Subscription] = {}
        self._all_subs: list[Subscription] = []
        self._acks: dict[str, tuple[Subscription, Delivery]] = {}
        self._transactions: dict[str, Transaction] = {}
        #: inside a call whose caller writes the output afterwards (a frame; flush_output's auto acks): no on_output
        self._in_frame = False
        #: a SEND waiting for room (producer flow control); no frame is handled until it is released
        self._held: _HeldSend | None = None
        #: what a held SEND waits for (None: nothing is held); await it, then call :meth:`release_held`. A plain
        #: attribute, kept with ``_held``: the listener reads it before every frame
        self.held_admission: Admission | None = None
        #: the broker incarnation this connection lives in (Broker.restart() starts a new one)
        self._incarnation = -1
        self._producer_id = f"{self._name}:-1:1"
        #: the broker connection's send of a message whose id was minted for it (set at CONNECT)
        self._send_minted: Callable[[Message, int | None, bool], Awaitable[object] | None] = _not_connected
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
            except DropConnection:
                self._fail_connection()
                return
            except _Held:
                return  # answered by release_held
            except MinibrokerError as exc:
                self._send_failed(frame, exc)
                self._error(StompError.of(exc), frame)
                return
            receipt = frame.headers.get("receipt")
            if receipt is not None and command not in ("CONNECT", "STOMP", "DISCONNECT"):
                # before the MESSAGEs the frame itself caused (a SUBSCRIBE's backlog)
                self._out.insert(mark, (StompFrame("RECEIPT", {"receipt-id": receipt}), self.version))
        finally:
            self._in_frame = False

    def release_held(self, error: MinibrokerError | None) -> None:
        """The held SEND's wait ended: ``error`` (the wait timed out, the broker stopped) is its ERROR; else it is
        sent, after asking again (another producer may have filled the queue first: then it stays held)."""
        held, self._held = self._held, None
        self.held_admission = None
        if held is None or self.closed or self.close_after_output:
            return
        self._in_frame = True
        try:
            if error is None:
                try:
                    self._send_or_hold(held.frame, held.messages, held.transaction)
                except _Held:
                    return
                except MinibrokerError as exc:
                    error = exc
            if error is not None:
                self._send_failed(held.frame, error)
                self._error(StompError.of(error), held.frame)
                return
            receipt = held.frame.headers.get("receipt")
            if receipt is not None:
                self._emit(StompFrame("RECEIPT", {"receipt-id": receipt}))
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
        if self._backlog:
            pending.append(f"stomp {self.session_id}: {len(self._backlog)} message(s) waiting for the peer to read")
        return pending

    # -- output helpers ---------------------------------------------------------------------------------------------

    def _error(self, exc: StompError, frame: StompFrame | None) -> None:
        message = exc.message
        headers = {"message": message, "content-type": "text/plain"}
        if frame is not None:
            receipt = frame.headers.get("receipt")
            if receipt is not None:
                headers["receipt-id"] = receipt
        body = f"{exc.java_class}: {exc.localized or message}\n".encode()
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
        version = negotiate_version(headers.get("accept-version"))
        client_sends, client_wants = parse_heart_beat(headers.get("heart-beat", "0,0"))
        login = headers.get("login")
        passcode = headers.get("passcode")
        if self.authenticator is not None:
            try:
                admitted = self.authenticator(login, passcode)
            except AccessDenied as exc:
                refusal = exc.message or str(exc)
                admitted = False
            else:
                refusal = f"User name [{'null' if login is None else login}] or password is invalid."  # Java's null
            if not admitted:
                # ActiveMQ logs a refused login at WARN with the peer's address (TransportConnection's security error)
                log.warning("refusing the STOMP login from %s: %s", self.remote_address, refusal)
                raise StompError(refusal, fatal=True, java_class="java.lang.SecurityException")
        client_id = headers.get("client-id")
        if client_id is not None and self.broker.client_connected(client_id):
            raise StompError(
                f"Broker: {self.broker.name} - Client: {client_id} already connected from {self.remote_address}",
                fatal=True,
                java_class="javax.jms.InvalidClientIDException",
            )
        try:
            self._incarnation = self.broker.incarnation
            self.connection = self.broker.connect(client_id, user=login, password=passcode, remote=True)
            self._names.connection = self.connection
            # the ids of this connection's messages are minted for each SEND and never sent again (a STOMP client
            # that sends again does so on a new connection, under new ids): the connection's hot send may take them
            self._send_minted = self.connection.minted_sender()
        except MinibrokerError as exc:
            raise StompError.of(exc, fatal=True) from None
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

    @property
    def connection_id(self) -> int | None:
        return None if self.connection is None else self.connection.connection_id

    def stomp_name(self, destination: Destination) -> str:
        """How this client sees a broker destination: ``/queue/X``, ``/topic/X``, ``/temp-queue/N``, ..."""
        return self._names.stomp_name(destination)

    # -- SEND ---------------------------------------------------------------------------------------------------------

    def _on_send(self, frame: StompFrame) -> None:
        headers = frame.headers
        name = headers.get("destination")
        if name is None:
            raise StompError("SEND received without a Destination specified!")
        names = self._names
        destinations = names.parsed.get(name) or names.parse(name, fallback=True)
        if names.remote_temporaries:
            self._check_remote_temporaries(destinations)
        seq = self._message_seq + 1
        if len(headers) == 2 and "content-length" in headers and len(destinations) == 1:
            # the plainest SEND (a counted body, no other header): what message_from_send makes of it, without its
            # walk of the headers (tested against it)
            producer = self._producer_id
            destination = destinations[0]
            message = Message(
                f"{producer}:{seq}", destination, frame.body, {}, 4, False, self._now(), 0.0, None, None, None, None, 0,
                producer, seq,
            )  # fmt: skip
            self._message_seq = seq
            # the minted sender asks flow control itself; after Broker.restart() it would reach the core it was made
            # with: the full way then
            if self.broker.incarnation == self._incarnation:
                waiting = self._send_minted(message, None, False)
                if waiting is None:
                    return
                if isinstance(waiting, Coroutine):  # it must wait for room (not yet started): held as any SEND is
                    waiting.close()
            self._send_or_hold(frame, [message], None)
            return
        transformation = headers.get("transformation")
        message = message_from_send(frame, destinations[0], names, self._now(), self._producer_id, seq)
        if transformation is not None:
            from .transformations import message_from_transformed_send  # loaded when a client first asks for one

            message = message_from_transformed_send(
                message, transformation, "content-length" in headers, self.max_transformation_entries
            )
        self._message_seq = seq
        tx_name = headers.get("transaction")
        txn = None if tx_name is None else self._core_transaction(tx_name)
        if len(destinations) == 1:
            if self.broker.admit(message.destination, txn) is None:  # the hot path: no flow control in the way
                assert self.connection is not None
                self.connection.send(message, txn)
                return
            messages = [message]
        else:
            # one composite destination: the broker checks every part before any copy goes (all or nothing)
            composite = Destination(destinations[0].kind, ",".join(str(d) for d in destinations))
            messages = [attrs.evolve(message, destination=composite)]
        self._send_or_hold(frame, messages, txn)

    def _check_remote_temporaries(self, destinations: list[Destination]) -> None:
        """A SEND to a temporary destination that does not exist (never made, or gone with its connection) is
        refused, as ActiveMQ's region refuses to make a temporary one on a send (AbstractRegion.addDestination)."""
        for destination in destinations:
            if destination in self._names.remote_temporaries and self.broker.temporary_owner(destination) is None:
                raise DestinationDoesNotExist(f"temp-{destination}", destination=destination)

    def _send_or_hold(self, frame: StompFrame, messages: list[Message], txn: int | None) -> None:
        """Send every message once the broker admits them all (a composite SEND is never half sent), else hold."""
        broker = self.broker
        for message in messages:
            admission = broker.admit(message.destination, txn)
            if admission is not None:
                self._held = _HeldSend(frame, messages, txn, admission)
                self.held_admission = admission
                raise _Held
        connection = self.connection
        assert connection is not None
        for message in messages:
            connection.send(message, txn)

    def _core_transaction(self, name: str | None) -> int | None:
        if name is None:
            return None
        txn = self._transactions.get(name)
        if txn is None:
            raise StompError(f"Invalid transaction id: {name}")
        return txn.core_id

    # -- SUBSCRIBE / UNSUBSCRIBE ------------------------------------------------------------------------------------

    def _on_subscribe(self, frame: StompFrame) -> None:
        headers = frame.headers
        sub_id = headers.get("id")
        name = headers.get("destination")
        if self.version != "1.0" and sub_id is None:
            raise StompError("SUBSCRIBE received without a subscription id!")
        # an id already in use is taken, as ActiveMQ 5.17 takes it (recorded): the id names the new subscription
        # from then on (UNSUBSCRIBE removes that one), and the first keeps running until the connection goes
        if not name:
            raise StompError("Invalid empty or 'null' Destination header")
        destinations = self._names.parse(name, fallback=True)
        first = destinations[0]
        if len(destinations) > 1:  # one consumer over every part, as a native composite consumer
            first = Destination(first.kind, ",".join(str(d) for d in destinations))
        from minibroker.destination_options import split_consumer_options  # with the first SUBSCRIBE (issue 45)

        destination, options = split_consumer_options(first)  # ?consumer.* options, as ActiveMQ reads them
        transformation = headers.get("transformation")  # how messages are written to it (transformations.py)
        check_stomp_subscribe_headers(headers)  # activemq.retroactive, ...: UnsupportedFeature
        if destination.is_queue:
            prefetch = QUEUE_PREFETCH
        else:
            prefetch = DURABLE_TOPIC_PREFETCH if "activemq.subscriptionName" in headers else TOPIC_PREFETCH
        browser = headers.get("browser") == "true"
        # also for browsers, which never reach the core's consumers
        (check_browser_destination if browser else check_consumer_destination)(destination)
        if destination.name.startswith("ActiveMQ.Advisory.") and not renders_advisories_of(destination):
            raise refuse("stomp-advisory", str(destination))  # structures minibroker does not keep (advisories.py)
        if browser:
            if self.version == "1.0":
                raise StompError("Queue Browser feature only valid for Stomp v1.1+ clients!")
            prefetch = BROWSER_PREFETCH
        size = parse_int_option(headers.get("activemq.prefetchSize"))
        if size is not None and size >= 0:
            prefetch = size
        priority = parse_int_option(headers.get("activemq.priority"))
        exclusive = parse_bool_option(headers.get("activemq.exclusive"))
        no_local = parse_bool_option(headers.get("activemq.noLocal"))
        if options.prefetch is not None:
            prefetch = options.prefetch
        if options.priority is not None:
            priority = options.priority
        if options.exclusive is not None:
            exclusive = options.exclusive
        if options.no_local is not None:
            no_local = options.no_local
        durable_name = headers.get("activemq.subscriptionName")
        if durable_name is not None and destination.is_queue:
            raise StompError("Invalid Subscription: cannot durably subscribe to a Queue destination!")
        ack = headers.get("ack")
        mode = ack if ack in (StompAckMode.CLIENT, StompAckMode.INDIVIDUAL) else StompAckMode.AUTO
        sub = Subscription(sub_id, destination, self.stomp_name(destination), mode, browser)
        sub.transformation = transformation
        if sub_id is not None:
            escaped_id = escape_value(sub_id, self.version)
            sub.id_line = None if escaped_id is None else "\nsubscription:" + escaped_id
        selector = headers.get("selector") or options.selector or None
        if selector is not None:
            from minibroker.selector import CONVERT_STRINGS_PREFIX

            # as ActiveMQ's connector: STOMP headers are all strings, so comparisons read them as numbers or booleans
            selector = CONVERT_STRINGS_PREFIX + selector
        if browser:
            assert self.connection is not None
            matching = self.connection.dispatch(c.Browse(destination.name, selector)) if destination.is_queue else []
            self._register(sub)
            for message in matching:
                self._deliver(sub, message, 0)
            self._emit(
                StompFrame(
                    "MESSAGE",
                    {
                        **({"subscription": sub_id} if sub_id is not None else {}),
                        "browser": "end",
                        "destination": sub.stomp_destination,
                        "message-id": "0",
                    },
                )
            )
            return
        info = ConsumerInfo(
            destination=destination,
            prefetch=prefetch,
            selector=selector,
            priority=max(-128, min(127, priority)) if priority is not None else 0,
            exclusive=bool(exclusive),
            no_local=bool(no_local),
            subscription_name=durable_name,  # with CONNECT's client-id: a durable subscription (ActiveMQ's headers)
        )
        assert self.connection is not None
        # a C call, no Python frame; an ack:auto subscription's plain MESSAGEs take the hot path (_on_auto_dispatch)
        on_dispatch = self._on_dispatch
        if mode == StompAckMode.AUTO and transformation is None and self.version != "1.0" and sub.id_line is not None:
            on_dispatch = self._on_auto_dispatch
        route: Callable[[Dispatch], None] = functools.partial(on_dispatch, sub)
        sub.consumer_id = self.connection.add_consumer(info, route)
        self._register(sub)

    def _register(self, sub: Subscription) -> None:
        if sub.header_id is not None:
            self._subs[sub.header_id] = sub
        if sub.consumer_id is not None:
            self._by_consumer[sub.consumer_id] = sub
        self._all_subs.append(sub)

    def _on_unsubscribe(self, frame: StompFrame) -> None:
        headers = frame.headers
        name = headers.get("destination")
        destination = self._names.parse(name, fallback=True)[0] if name is not None else None
        sub_id = headers.get("id")
        if self.version != "1.0" and sub_id is None:
            raise StompError("UNSUBSCRIBE received without a subscription id!")
        if sub_id is None and destination is None:
            raise StompError("Must specify the subscriptionId or the destination you are unsubscribing from")
        durable_name = headers.get("activemq.subscriptionName")
        if durable_name is not None:
            # ActiveMQ sends RemoveSubscriptionInfo alone: a subscriber still open here (or anywhere) keeps it, and the
            # broker answers "Durable consumer is in use"; STOMP 1.0 names the subscription as its client id
            assert self.connection is not None
            self.connection.dispatch(c.Unsubscribe(durable_name, durable_name if self.version == "1.0" else None))
            return
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

    def _remove(self, sub: Subscription) -> None:
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
            assert self.connection is not None
            self.connection.dispatch(c.RemoveConsumer(sub.consumer_id, NOW_UNKNOWN_DELIVERED))

    # -- ACK / NACK ---------------------------------------------------------------------------------------------------

    def _find(self, frame: StompFrame, *, nack: bool) -> tuple[Subscription, Delivery] | None:
        """The subscription and delivery an ACK/NACK names (None: no such one); an unknown transaction is refused."""
        return find_delivery(
            frame,
            self.version,
            nack=nack,
            acks=self._acks,
            subs=self._subs,
            all_subs=self._all_subs,
            check_transaction=self._core_transaction,
        )

    def _run_auto_acks(self, limit: int | None) -> None:
        send_auto_acks(self.connection, self._auto_acks, self._by_consumer, limit)

    def _unexpected(self, frame: StompFrame, word: str) -> NoReturn:
        raise StompError(f"Unexpected {word} received for message-id [{frame.headers.get('message-id', 'null')}]")

    def _forget(self, sub: Subscription, deliveries: Iterable[Delivery]) -> None:
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
            if known is not None and known[0].mode == StompAckMode.INDIVIDUAL and not known[0].browser:
                sub, delivery = known
                message_id = delivery.message_id
                connection = self.connection
                assert connection is not None and sub.consumer_id is not None and ack_id is not None
                if not connection.ack_one(sub.consumer_id, message_id, individual=True):
                    connection.ack(  # not held any more (or a filter watches acks): the full ack, refused as it should
                        MessageAck(sub.consumer_id, AckType.INDIVIDUAL, message_id, message_id, 1, None),
                    )
                sub.unacked.pop(message_id, None)
                self._acks.pop(ack_id, None)
                return
        found = self._find(frame, nack=False)
        if found is None:
            self._unexpected(frame, "ACK")
        sub, delivery = found
        tx_name = frame.headers.get("transaction")
        txn = self._transactions[tx_name] if tx_name is not None else None
        assert self.connection is not None
        if sub.browser:
            self._forget(sub, [delivery])
            return
        self._forget(sub, send_ack(self.connection, sub, delivery, txn))

    def _on_nack(self, frame: StompFrame) -> None:
        try:
            found = self._find(frame, nack=True)
        except Ignored:
            return  # 1.1: a known subscription and an unknown message id: ActiveMQ says nothing
        if found is None:
            self._unexpected(frame, "NACK")
        sub, delivery = found
        if sub.browser:
            raise StompError("Cannot Nack a message on a Queue Browser Subscription.")
        tx_name = frame.headers.get("transaction")
        txn = self._transactions[tx_name] if tx_name is not None else None
        assert self.connection is not None and sub.consumer_id is not None
        # one message, straight to the dead-letter path (or the broker redelivery plugin); no cause is given
        self.connection.ack(
            MessageAck(
                sub.consumer_id,
                AckType.POISON,
                delivery.message_id,
                delivery.message_id,
                1,
                None if txn is None else txn.core_id,
            ),
        )
        self._forget(sub, [delivery])

    # -- transactions -------------------------------------------------------------------------------------------------

    def _on_begin(self, frame: StompFrame) -> None:
        name = frame.headers.get("transaction")
        if name is None:
            raise StompError("Must specify the transaction you are beginning")
        if name in self._transactions:
            raise StompError(f"The transaction was already started: {name}")
        assert self.connection is not None
        self._transactions[name] = Transaction(self.connection.begin())

    def _take_transaction(self, frame: StompFrame) -> Transaction:
        name = frame.headers.get("transaction")
        if name is None:
            raise StompError("Must specify the transaction you are committing")
        txn = self._transactions.pop(name, None)
        if txn is None:
            raise StompError(f"Invalid transaction id: {name}")
        return txn

    def _send_failed(self, frame: StompFrame, error: MinibrokerError) -> None:
        """A SEND in a transaction failed without a receipt asked (ActiveMQ answered it as a ConnectionError, not a
        response): its transaction can only roll back now (TransportConnection's rollbackOnlyOnAsyncException)."""
        headers = frame.headers
        if frame.command != "SEND" or "receipt" in headers:
            return
        txn = self._transactions.get(headers.get("transaction", ""))
        if txn is not None and txn.rollback_only is None:
            txn.rollback_only = error.message or str(error)

    def _on_commit(self, frame: StompFrame) -> None:
        txn = self._take_transaction(frame)
        assert self.connection is not None
        if txn.rollback_only is not None:  # Transaction.prePrepare: the commit fails, nothing of it happens
            self.connection.dispatch(c.Rollback(txn.core_id))
            raise StompError(
                "COMMIT FAILED: Transaction marked rollback only", java_class="javax.transaction.xa.XAException"
            )
        self.connection.dispatch(c.Commit(txn.core_id))

    def _on_abort(self, frame: StompFrame) -> None:
        txn = self._take_transaction(frame)
        assert self.connection is not None
        self.connection.dispatch(c.Rollback(txn.core_id))
        # ActiveMQ 5.17: the acked messages stay with their subscription, not redelivered, ackable again
        touched: list[Subscription] = []
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
        self._held = None
        self.held_admission = None
        if self.connection is None or self.broker.incarnation != self._incarnation:
            return  # never connected, or the broker restarted: nothing of ours is left in it
        self._run_auto_acks(None)
        subs = list(self._all_subs)
        for sub in subs:
            sub.closed = True  # messages released by one are not handed to another of this connection
        for sub in subs:
            self._remove(sub)
        self._subs.clear()
        self.connection.close(-1 if graceful else None)
        self._transactions.clear()
        self._names.forget_temporaries()
