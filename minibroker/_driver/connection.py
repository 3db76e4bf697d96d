"""One client connection's door into the broker (ActiveMQ's ``TransportConnection``).

Every edge (the in-process link, the native TCP server, STOMP, MQTT) logs in through :meth:`Broker.connect` and gets
a :class:`BrokerConnection`; from then on it does everything through that object: consumers, producers, sends, acks,
transactions, temporary destinations, and the reads an edge offers (browse, statistics, range reads, cursor acks,
broker info, batch publishes, purges; an operator's requests on single messages and its listings are in
operations.py). Authorization happens here, once, for every operation and every edge alike,
through the filter chain's ``on_authorize`` (a security filter such as :class:`~minibroker.plugins.auth.AuthPlugin`
applies ActiveMQ's rules for composite and wildcard destinations there). No edge authorizes for itself.

What is not a connection's (a test's or an operator's views: ``broker.queue_statistics``, ``broker.purge``) stays
on :class:`~minibroker.Broker` and is unchecked, as ActiveMQ's JMX is outside its security plugin.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from .._core.effects import Dispatch
from ..errors import (
    AccessDenied,
    ConnectionClosed,
    IllegalStateError,
    InvalidAcknowledge,
    LimitExceeded,
    TransactionError,
)
from ..message import Destination, DestinationKind, composite_parts
from ..refusals import check_send_destination
from ..transport import commands as c
from .operations import _OperatorRequests
from .rights import ADMIN, READ, WRITE

if TYPE_CHECKING:  # types only: durable subscriptions, the replay rules and the views load when first used (issue 45)
    from .._core.commands import ConsumerInfo, MessageAck
    from .._core.durable import DurableView
    from .._core.queue import QueueStatistics
    from .._core.replay import BrokerInfo, CursorAck, PublishResult, RangeRead
    from .._core.subscription import QueueEntry
    from ..errors import MinibrokerError
    from ..filters import ConnectionContext
    from ..message import Message
    from ..transport.commands import Command
    from .broker import Broker
    from .flow import Admission
    from .resent_sends import ResentSends

__all__ = ["ADMIN", "HANDLERS", "READ", "WRITE", "BrokerConnection"]


DispatchRoute = Callable[[Dispatch], None]
R = TypeVar("R")


def _no_ack_one(consumer_id: int, message_id: str) -> bool:
    """A filter watches acks: every ack goes through the chain as a full one."""
    return False


class BrokerConnection(_OperatorRequests):
    """An open client connection: its identity (``connection_id``, ``client_id``, ``principal``) and every operation
    it may perform, each authorized here (see the module notes). Made by :meth:`Broker.connect`."""

    __slots__ = ("_incarnation", "_plain_acks", "_resent_sends", "broker", "connection_id", "context")

    def __init__(self, broker: Broker, context: ConnectionContext) -> None:
        self.broker = broker
        self.context = context
        self.connection_id = context.connection_id
        self._incarnation = broker.incarnation
        #: no filter watches acks (the chain is built once per broker): ack_one goes straight to the core
        self._plain_acks = not broker._hook_ack
        #: a client that may resend after a failover reconnect (ActiveMQ's JMS client): resent_sends.py
        self._resent_sends: ResentSends | None = None

    def __repr__(self) -> str:
        return f"<BrokerConnection {self.connection_id} client_id={self.context.client_id!r}>"

    @property
    def client_id(self) -> str | None:
        return self.context.client_id

    @property
    def principal(self) -> object | None:
        """Who a security filter says this connection is (None: unchecked, the application itself)."""
        return self.context.principal

    @property
    def open(self) -> bool:
        """Not closed, and the broker has not restarted since it opened (a restart drops every connection)."""
        broker = self.broker
        return self._incarnation == broker._incarnation and self.connection_id in broker.core.connections

    # -- authorization: the one place ------------------------------------------------------------------------------

    def authorize(self, action: str, destination: Destination) -> None:
        """Raise :class:`~minibroker.errors.AccessDenied` unless this connection may ``action`` (:data:`READ`,
        :data:`WRITE`, :data:`ADMIN`) ``destination`` (a composite or wildcard destination as a whole, as ActiveMQ's
        authorization map reads it); without a security filter, anything goes."""
        broker = self.broker
        if broker._hook_authorize:
            broker._chain.on_authorize(self.context, action, destination)

    def may(self, action: str, destination: Destination) -> bool:
        """Whether :meth:`authorize` lets ``action`` on ``destination`` through."""
        try:
            self.authorize(action, destination)
        except AccessDenied:
            return False
        return True

    def may_see(self, destination: Destination) -> bool:
        """Whether a listing shows ``destination`` to this connection: it may read or administer it."""
        return self.may(READ, destination) or self.may(ADMIN, destination)

    def dispatch(self, command: Command[R]) -> R:
        """Carry out a request (:mod:`minibroker.transport.commands`) through its row of :data:`HANDLERS`."""
        result: R = HANDLERS[type(command)](self, command)
        return result

    # -- lifecycle --------------------------------------------------------------------------------------------------

    def close(self, last_delivered_seq: int | None = -1) -> None:
        """Close the connection: its consumers, producers, transactions and temporary destinations go with it.
        ``last_delivered_seq`` None: the transport failed (what it held comes back redelivered). Closing twice,
        or after the broker restarted, does nothing."""
        broker = self.broker
        if self._incarnation != broker._incarnation:
            return
        broker._close_connection(self.connection_id, self.context, last_delivered_seq)

    # -- consumers --------------------------------------------------------------------------------------------------

    def add_consumer(self, info: ConsumerInfo, route: DispatchRoute) -> int:
        """A consumer (queue, topic, composite, wildcard, durable, browser) reading ``info.destination``: needs the
        right to read it; its dispatches go to ``route``."""
        broker = self.broker
        broker._check_open()
        connection = broker.core.connections.get(self.connection_id)
        if connection is not None:
            broker.connection_limits.check_consumers(self.connection_id, len(connection.consumers))
        broker.connection_limits.check_composite(info.destination)
        if broker._hook_authorize:
            self.authorize(READ, info.destination)
        consumer_id = broker._chain.on_subscribe(self.context, info)
        # the backlog dispatched to the new consumer waits in the core's output until this flush
        broker._routes[consumer_id] = route
        broker._flush()
        return consumer_id

    def remove_consumer(self, consumer_id: int, last_delivered_seq: int = -1) -> None:
        broker = self.broker
        self._check_consumer_owner(consumer_id)
        broker.core.remove_consumer(self.connection_id, consumer_id, last_delivered_seq)
        broker._routes.pop(consumer_id, None)
        broker._flush_leaving()

    def unsubscribe(self, name: str, client_id: str | None = None) -> None:
        """Remove the connection's durable subscription ``name`` (JMS ``session.unsubscribe``; of ``client_id``'s
        when given, as ActiveMQ's RemoveSubscriptionInfo may name another): refused while its subscriber is active,
        or when there is none. (ActiveMQ's security plugin does not check it either.)"""
        broker = self.broker
        broker._check_open()
        broker.core.unsubscribe(self.connection_id, name, client_id)
        broker._flush()

    def pull(self, consumer_id: int, timeout: float) -> None:
        broker = self.broker
        self._check_consumer_owner(consumer_id)
        broker.core.pull(self.connection_id, consumer_id, timeout)
        broker._flush()

    def set_prefetch(self, consumer_id: int, prefetch: int) -> None:
        """Give one of this connection's consumers a new prefetch (ActiveMQ's ``ConsumerControl``): the window is
        the new one from now on, and what it has room for is dispatched."""
        broker = self.broker
        self._check_consumer_owner(consumer_id)
        broker.core.set_prefetch(self.connection_id, consumer_id, prefetch)
        broker._flush()

    def _check_consumer_owner(self, consumer_id: int, error: type[MinibrokerError] = IllegalStateError) -> None:
        """Refuse an id naming another connection's consumer, before any filter or the core sees it: no connection
        may detach, ack or pull for a consumer it does not own (issue 15, item 2)."""
        sub = self.broker.core.subscriptions.get(consumer_id)
        if sub is not None and sub.connection_id != self.connection_id:
            raise error(
                f"consumer {consumer_id} is not a consumer of this connection",
                consumer_id=consumer_id,
                connection_id=self.connection_id,
            )

    # -- producers and sends ----------------------------------------------------------------------------------------

    def add_producer(self, producer_id: int, destination: Destination | None) -> None:
        """A producer of the connection comes (None: an anonymous one): counted, and advised on
        ``ActiveMQ.Advisory.Producer.*`` (ActiveMQ's ProducerInfo)."""
        broker = self.broker
        broker._check_open()
        connection = broker.core.connections.get(self.connection_id)
        if connection is not None:
            broker.connection_limits.check_producers(self.connection_id, len(connection.producers))
        if destination is not None:
            broker.connection_limits.check_composite(destination)
        broker.core.add_producer(self.connection_id, producer_id, destination)
        broker._flush()

    def remove_producer(self, producer_id: int) -> None:
        """The producer goes (unknown ids are ignored: a producer of a closed connection went with it)."""
        broker = self.broker
        if broker._closed:
            return
        broker.core.remove_producer(self.connection_id, producer_id)
        broker._flush()

    def admit(self, destination: Destination) -> Admission | None:
        """Producer flow control (:meth:`Broker.admit`): None when a send may go now, else what to await first."""
        return self.broker.admit(destination)

    def send(self, message: Message, transaction_id: int | None = None) -> None:
        """Send ``message`` (in transaction ``transaction_id``): needs the right to write its destination; a
        composite goes to each of its parts, all or nothing."""
        broker = self.broker
        if broker._closed:
            broker._check_open()
        if transaction_id is not None:
            self._check_transaction_owner(transaction_id)
        if self._resent_sends is not None and self._resent_sends.is_resent(message):
            return  # stored before the client's reconnect: dropped, answered (ActiveMQ's canDispatch)
        if "," in message.destination.name:
            broker.connection_limits.check_composite(message.destination)
            self._send_composite(message, transaction_id)
            return
        if broker._hook_authorize:
            self.authorize(WRITE, message.destination)
        if broker._hook_send:
            broker._chain.on_send(self.context, message, transaction_id)
        else:
            broker.core.send(self.connection_id, message, transaction_id)
        broker._flush()

    def send_if_admitted(self, message: Message, transaction_id: int | None = None) -> bool:
        """:meth:`send` when flow control lets the message through now (True); False: the edge must wait
        (:meth:`send_when_admitted`). One call instead of two on the in-process hot path."""
        broker = self.broker
        core = broker.core
        if core.memory_limited and broker.admit(message.destination, transaction_id) is not None:
            return False
        if (
            transaction_id is None
            and broker._plain_sends
            and self._resent_sends is None
            and "," not in message.destination.name
        ):
            # the hot path: a running broker no filter watches sends or rights on, one destination, a client that
            # does not resend (a resending one's sends are checked against what the store kept: send)
            core.send(self.connection_id, message, None)
            broker._flush()
        else:
            self.send(message, transaction_id)
        return True

    def minted_sender(self) -> Callable[[Message, int | None, bool], Awaitable[object] | None]:
        """The in-process link's send of a message whose id its producer minted for it (``MemoryLink.send_new``):
        :meth:`send_if_admitted`, then :meth:`send_when_admitted` when flow control holds the message back, as one
        function built once per connection, with the core's :meth:`~BrokerCore.send_minted` on the hot path. One
        Python call per send where the link and this connection were two (issue 45)."""
        broker = self.broker
        core = broker.core
        connection_id = self.connection_id
        send_minted = core.send_minted
        flush = broker._flush
        waiters = broker._space_waiters
        plain = self._resent_sends is None  # a client that resends has each send checked (send_if_admitted, send)

        def send(message: Message, transaction_id: int | None, sync: bool) -> Awaitable[object] | None:
            if (
                transaction_id is None
                and plain
                and not core.memory_limited
                and broker._plain_sends
                and "," not in message.destination.name
            ):
                send_minted(connection_id, message)  # send_if_admitted's hot path
                # Broker._flush's conditions: the call is skipped when it would do nothing (most sends: no dispatch)
                if (
                    core.output
                    or broker._journal is not None
                    or waiters.waiting
                    or core.binding
                    or broker._timer_at is not None
                    or core.timers_set != broker._timers_seen
                ):
                    flush()
                return None
            if self.send_if_admitted(message, transaction_id):
                return None
            return self.send_when_admitted(message, transaction_id)

        return send

    def auto_acker(self) -> Callable[[int, str], bool]:
        """The in-process link's ``ack_one`` (an AUTO consumer's ack of each message it receives): :meth:`ack_one`
        with ``refill_at_half``, as one function built once per connection (see :meth:`minted_sender`)."""
        if not self._plain_acks:
            return _no_ack_one
        broker = self.broker
        core = broker.core
        ack_one = core.ack_one
        connection_id = self.connection_id
        flush = broker._flush
        waiters = broker._space_waiters

        def ack(consumer_id: int, message_id: str) -> bool:
            if ack_one(connection_id, consumer_id, message_id, refill_at_half=True):
                if (  # as in minted_sender
                    core.output
                    or broker._journal is not None
                    or waiters.waiting
                    or core.binding
                    or broker._timer_at is not None
                    or core.timers_set != broker._timers_seen
                ):
                    flush()
                return True
            return False

        return ack

    async def send_when_admitted(self, message: Message, transaction_id: int | None = None) -> None:
        """:meth:`send` once flow control lets it through (the in-process link's send); a connection closed while
        it waited gets :class:`~minibroker.errors.ConnectionClosed`."""
        broker = self.broker
        admission = broker.admit(message.destination, transaction_id)
        while admission is not None:
            await admission
            if not self.open:
                raise ConnectionClosed(
                    "the connection closed while its send waited for room", connection_id=self.connection_id
                )
            # a composite goes when every one of its queues has room (one destination: once admitted)
            admission = broker.admit(message.destination, transaction_id) if "," in message.destination.name else None
        self.send(message, transaction_id)

    def _send_composite(self, message: Message, transaction_id: int | None) -> None:
        """A send to ``a,topic://b`` is a copy to each part (ActiveMQ's composite destination), all or nothing:
        the composite is authorized as a whole and every part checked (refused names, a full queue under
        ``send_fail_if_no_space``) before any copy is sent."""
        broker = self.broker
        parts = composite_parts(message.destination)
        core = broker.core
        for part in parts:
            check_send_destination(part)
        if broker._hook_authorize:
            self.authorize(WRITE, message.destination)
        for part in parts:
            if core.memory_limited and part.kind is DestinationKind.QUEUE and not core.has_space(part.name):
                queue = core.queues[part.name]
                if queue.policy.send_fail_if_no_space:
                    raise LimitExceeded(
                        f"Usage Manager Memory Limit reached on {part} (a part of {message.destination})",
                        destination=str(part),
                    )
        for part in parts:
            # CompositeDestinationBroker: each part's copy knows the composite it was sent to
            copy = attrs.evolve(message, destination=part, original_destination=message.destination)
            if broker._hook_send:
                broker._chain.on_send(self.context, copy, transaction_id)
            else:
                core.send(self.connection_id, copy, transaction_id)
        broker._flush()

    def publish(self, messages: Iterable[Message], dedupe: bool = False) -> PublishResult:
        """A batch send outside transactions (the Spark writer's): needs the right to write every destination."""
        broker = self.broker
        if broker._hook_authorize:
            messages = list(messages)
            for destination in dict.fromkeys(m.destination for m in messages):
                self.authorize(WRITE, destination)
        return broker._publish(self.connection_id, messages, dedupe)

    # -- acks -------------------------------------------------------------------------------------------------------

    def ack(self, ack: MessageAck) -> None:
        broker = self.broker
        self._check_consumer_owner(ack.consumer_id, InvalidAcknowledge)
        self._check_transaction_owner(ack.transaction_id)
        if broker._hook_ack:
            broker._chain.on_ack(self.context, ack)
        else:
            broker.core.ack(self.connection_id, ack)
        broker._flush()

    def ack_one(
        self, consumer_id: int, message_id: str, *, refill_at_half: bool = False, individual: bool = False
    ) -> bool:
        """The AUTO (or, ``individual``, the INDIVIDUAL) ack of one message outside a transaction (see
        :meth:`BrokerCore.ack_one`); False: send a full ack instead (always, when a filter watches acks)."""
        if self._plain_acks:
            broker = self.broker
            if broker.core.ack_one(
                self.connection_id, consumer_id, message_id, refill_at_half=refill_at_half, individual=individual
            ):
                broker._flush()
                return True
        return False

    # -- transactions -----------------------------------------------------------------------------------------------

    def begin(self) -> int:
        broker = self.broker
        connection = broker.core.connections.get(self.connection_id)
        if connection is not None:
            broker.connection_limits.check_transactions(self.connection_id, len(connection.transactions))
        return broker.core.begin(self.connection_id)

    def commit(self, transaction_id: int) -> None:
        broker = self.broker
        self._check_transaction_owner(transaction_id)
        broker._chain.on_commit(self.context, transaction_id)
        broker._flush()

    def rollback(self, transaction_id: int) -> None:
        broker = self.broker
        self._check_transaction_owner(transaction_id)
        broker._chain.on_rollback(self.context, transaction_id)
        broker._flush()

    def _check_transaction_owner(self, transaction_id: int | None) -> None:
        """Refuse an id naming another connection's transaction (the core raises the same for an unknown one)."""
        if transaction_id is None:
            return
        txn = self.broker.core.transactions.get(transaction_id)
        if txn is not None and txn.connection_id != self.connection_id:
            raise TransactionError(
                f"unknown transaction {transaction_id}", transaction_id=transaction_id, connection_id=self.connection_id
            )

    # -- temporary destinations -------------------------------------------------------------------------------------

    def create_temporary(self, kind: DestinationKind, connection_name: str | None = None) -> Destination:
        """A temporary queue or topic owned by the connection (named ``<connection name>:<n>``), deleted with it.
        Needs the right to administer ``topic://ActiveMQ.Advisory.TempQueue`` (``TempTopic``): ActiveMQ creates that
        advisory topic with the client's rights when it advises the new destination (AbstractRegion.lookup ->
        AuthorizationBroker.addDestination), so that is what its users need (issue 41)."""
        broker = self.broker
        broker._check_open()
        if broker._hook_authorize:
            kind_name = "TempQueue" if kind is DestinationKind.QUEUE else "TempTopic"
            self.authorize(ADMIN, Destination.topic(f"ActiveMQ.Advisory.{kind_name}"))
        destination = broker.core.create_temporary(self.connection_id, kind, connection_name)
        broker._flush()  # its destination advisory
        return destination

    def delete_temporary(self, destination: Destination) -> None:
        """Delete the connection's temporary destination; refused while a consumer reads it."""
        broker = self.broker
        broker.core.delete_temporary(self.connection_id, destination)
        broker._flush()

    # -- reads and operator-style requests --------------------------------------------------------------------------

    def browse(self, queue: str, selector: str | None = None) -> list[Message]:
        """What a queue browser sees (:meth:`Broker.browse_page`): needs the right to read the queue."""
        broker = self.broker
        if broker._hook_authorize:
            self.authorize(READ, Destination.queue(queue))
        return broker.browse_page(queue, selector)

    def queue_statistics(self, queue: str) -> QueueStatistics | None:
        broker = self.broker
        if broker._hook_authorize:
            self.authorize(READ, Destination.queue(queue))
        return broker.queue_statistics(queue)

    def queue_listing(self, names: Sequence[str]) -> list[QueueStatistics]:
        """The statistics of those of ``names`` this connection may see (read or admin rights)."""
        broker = self.broker
        listed = []
        for name in names:
            if not broker._hook_authorize or self.may_see(Destination.queue(name)):
                stats = broker.queue_statistics(name)
                if stats is not None:
                    listed.append(stats)
        return listed

    def topic_listing(self) -> tuple[list[tuple[str, QueueStatistics]], list[DurableView]]:
        """The topics and durable subscriptions this connection may see, with their statistics."""
        broker = self.broker
        hooked = broker._hook_authorize
        topics = []
        for name in sorted(broker.topic_names()):
            stats = broker.topic_statistics(name)
            if stats is not None and (not hooked or self.may_see(Destination.topic(name))):
                topics.append((name, stats))
        durables = [d for d in broker.durable_subscriptions() if not hooked or self.may_see(Destination.topic(d.topic))]
        return topics, durables

    def purge(self, queue: str, selector: str | None = None) -> int:
        """:meth:`Broker.purge` (a queue, a wildcard of queues, a durable subscription's queue; with a selector,
        the matching waiting messages), for a connection that may administer every queue it empties (a durable
        subscription: its topic); refused as a whole, before anything goes, when one is not."""
        broker = self.broker
        if broker._hook_authorize:
            for name in broker.purge_targets(queue):
                self.authorize(ADMIN, broker.readable_as(name))
        return broker.purge(queue, selector)

    def read_range(
        self,
        queue: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> RangeRead:
        """:meth:`Broker.read_range`, for a connection that may read ``queue`` (a durable subscription's queue is
        read with the right to read its topic)."""
        self._authorize_read(queue)
        return self.broker.read_range(queue, from_seq, to_seq, limit, epoch)

    def select_range(
        self,
        queue: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> tuple[str, int, list[QueueEntry]]:
        self._authorize_read(queue)
        return self.broker.select_range(queue, from_seq, to_seq, limit, epoch)

    def ack_below(self, queue: str, cursor: str, seq: int, epoch: str | None = None) -> CursorAck:
        self._authorize_read(queue)
        return self.broker.ack_below(queue, cursor, seq, epoch)

    def broker_info(self, queues: Sequence[str] | None = None, cursor: str | None = None) -> BrokerInfo:
        """The epoch and the positions of ``queues`` (None: every queue this connection may see); naming a queue
        needs the right to read it (one that does not exist reads as empty, and is not created)."""
        broker = self.broker
        if queues is not None and broker._hook_authorize:
            for name in queues:
                if broker.has_queue(name):
                    self._authorize_read(name)
        info = broker.broker_info(queues, cursor)
        if queues is None and broker._hook_authorize:
            info = attrs.evolve(info, queues=tuple(p for p in info.queues if self.may_see(broker.readable_as(p.queue))))
        return info

    def _authorize_read(self, queue: str) -> None:
        broker = self.broker
        if broker._hook_authorize:
            self.authorize(READ, broker.readable_as(queue))


#: a request's type -> how the connection carries it out (one row per command; the methods above authorize)
HANDLERS: dict[type[c.Command[Any]], Callable[[BrokerConnection, Any], Any]] = {
    c.RemoveConsumer: lambda conn, cmd: conn.remove_consumer(cmd.consumer_id, cmd.last_delivered_seq),
    c.Commit: lambda conn, cmd: conn.commit(cmd.transaction_id),
    c.Rollback: lambda conn, cmd: conn.rollback(cmd.transaction_id),
    c.Unsubscribe: lambda conn, cmd: conn.unsubscribe(cmd.name, cmd.client_id),
    c.CreateTemporary: lambda conn, cmd: conn.create_temporary(cmd.kind, cmd.connection_name),
    c.DeleteTemporary: lambda conn, cmd: conn.delete_temporary(cmd.destination),
    c.Browse: lambda conn, cmd: conn.browse(cmd.queue, cmd.selector),
    c.GetQueueStatistics: lambda conn, cmd: conn.queue_statistics(cmd.queue),
    c.Purge: lambda conn, cmd: conn.purge(cmd.queue, cmd.selector),
    c.ReadRange: lambda conn, cmd: conn.read_range(cmd.queue, cmd.from_seq, cmd.to_seq, cmd.limit, cmd.epoch),
    c.AckBelow: lambda conn, cmd: conn.ack_below(cmd.queue, cmd.cursor, cmd.seq, cmd.epoch),
    c.GetBrokerInfo: lambda conn, cmd: conn.broker_info(cmd.queues, cmd.cursor),
    c.Publish: lambda conn, cmd: conn.publish(cmd.messages, cmd.dedupe),
}
