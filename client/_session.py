"""A session: one unit of ordered work, with an acknowledge mode and (when transacted) one open transaction.

A session is meant to be used by one task at a time, as a JMS session is used by one thread. Listeners of a
session's consumers run one after another on the session's own dispatcher task, never concurrently.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from minibroker import ConsumerInfo
from minibroker.destination_options import split_consumer_options
from minibroker.errors import (
    DurableSubscriptionError,
    IllegalStateError,
    InvalidDestination,
    MinibrokerError,
    SessionClosed,
    TransactionRolledBack,
)
from minibroker.message import ORIGINAL_EXPIRATION, Destination, DestinationKind, HasDestination, Message
from minibroker.redelivery import DelayLevelPolicy, RetryPolicy
from minibroker.refusals import check_browser_destination
from minibroker.transport import commands as c

from ._ack_mode import AckMode
from ._consumer import Consumer
from ._message import without_original_expiration
from ._producer import Producer
from ._temporary import TemporaryDestination, TemporaryQueue, TemporaryTopic, make_temporary

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = ["QueueBrowser", "Session"]

LISTENER_SET = "Cannot synchronously receive a message when a MessageListener is set"


class Session:
    """A JMS session: one ack mode (or a transaction), the producers and consumers made from it, and the order of
    their messages. Made with ``await connection.create_session(ack_mode)``."""

    def __init__(self, connection: Connection, session_id: int, ack_mode: AckMode) -> None:
        self.connection = connection
        self.session_id = session_id
        self.ack_mode = ack_mode
        self.consumers: list[Consumer] = []
        self.producers: list[Producer] = []
        self._closed = False
        self._transaction_id: int | None = None
        self._tx_consumers: list[Consumer] = []
        self._deferred_closes: list[Consumer] = []
        self._dispatcher: asyncio.Task[None] | None = None
        self._dispatcher_wakeup: asyncio.Event | None = None
        self._producer_seq = 0
        self.last_delivered_seq = -1
        #: consumers of this session with a listener (a sync receive is refused while there are any)
        self._listener_count = 0
        self._consumer_numbers = 0
        #: set when the transport failed during the open transaction: its commit must fail
        self._transaction_lost = False

    def __repr__(self) -> str:
        return f"<Session {self.session_id} {self.ack_mode.name}>"

    @property
    def transacted(self) -> bool:
        return self.ack_mode is AckMode.SESSION_TRANSACTED

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosed("The Session is closed", session_id=self.session_id)
        self.connection._check_open()

    # -- producers and consumers ------------------------------------------------------------------------------------

    async def create_temporary_queue(self) -> TemporaryQueue:
        """A temporary queue owned by this session's connection (JMS ``createTemporaryQueue()``): only the
        connection may consume from it, it is deleted with the connection, any connection may send to it. The usual
        ``reply_to`` of a request."""
        queue = await self._create_temporary(DestinationKind.QUEUE)
        assert isinstance(queue, TemporaryQueue)
        return queue

    async def create_temporary_topic(self) -> TemporaryTopic:
        """A temporary topic owned by this session's connection (JMS ``createTemporaryTopic()``)."""
        topic = await self._create_temporary(DestinationKind.TOPIC)
        assert isinstance(topic, TemporaryTopic)
        return topic

    async def _create_temporary(self, kind: DestinationKind) -> TemporaryDestination:
        self._check_open()
        conn = self.connection
        name = conn.connection_id if conn.connection_id.startswith("ID:") else f"ID:{conn.connection_id}"
        destination = await conn._link.request(c.CreateTemporary(kind, name))
        return make_temporary(conn, destination)

    async def create_producer(self, destination: str | Destination | HasDestination | None = None) -> Producer:
        """A producer for ``destination`` ("orders" or "queue://orders" is a queue, "topic://x" a topic), or for
        any destination when None (then each send names one)."""
        self._check_open()
        self._producer_seq += 1
        dest = None if destination is None else Destination.parse(destination)
        producer = Producer(self, self._producer_seq, dest)
        self.connection._last_producer_id += 1
        producer.broker_id = self.connection._last_producer_id
        self.connection._link.add_producer(producer.broker_id, dest)
        self.producers.append(producer)
        return producer

    async def create_consumer(
        self,
        destination: str | Destination | HasDestination,
        *,
        prefetch: int | None = None,
        selector: str | None = None,
        priority: int = 0,
        exclusive: bool = False,
        no_local: bool = False,
        redelivery_policy: RetryPolicy | None = None,
        group: str | None = None,
    ) -> Consumer:
        """A consumer. ``prefetch`` defaults to the connection's prefetch policy (queue 1000, topic 32767);
        0 means pull: each ``receive()`` asks the broker for one message.

        ``redelivery_policy`` overrides the connection's policy for this consumer. With a
        :class:`~minibroker.client.DelayLevelPolicy` failed messages are retried RocketMQ's way through the queue
        ``%RETRY%<group>`` (``group`` defaults to the destination's name), which this consumer also reads; the
        broker needs ``scheduler_support=True`` for the delays.
        """
        self._check_open()
        dest, options = split_consumer_options(Destination.parse(destination))
        prefetch = prefetch if options.prefetch is None else options.prefetch
        selector = selector if options.selector is None else options.selector
        priority = priority if options.priority is None else options.priority
        exclusive = exclusive if options.exclusive is None else options.exclusive
        no_local = no_local if options.no_local is None else options.no_local
        conn = self.connection
        if prefetch is None:
            prefetch = conn.prefetch_for(dest)
        if prefetch < 0:
            raise ValueError(f"prefetch must be >= 0, not {prefetch}")
        if selector and selector.strip():
            from minibroker.selector import parse_selector

            parse_selector(selector)  # InvalidSelector here, as ActiveMQMessageConsumer checks it before asking
        prefetch = min(prefetch, 32767)
        policy = redelivery_policy or conn.redelivery_policy_for(dest)
        consumer = Consumer(self, dest, prefetch, policy, selector)
        info = ConsumerInfo(dest, prefetch, selector, priority, exclusive, False, no_local, self.session_id)
        consumer.info = info
        if isinstance(policy, DelayLevelPolicy):
            consumer.group = group or dest.name
        self.consumers.append(consumer)
        try:
            await self._subscribe(consumer)
        except BaseException:
            self.consumers.remove(consumer)
            raise
        return consumer

    async def _subscribe(self, consumer: Consumer) -> None:
        link = self.connection._link
        assert consumer.info is not None
        consumer.consumer_id = await link.add_consumer(consumer.info, consumer._on_dispatch)
        if consumer.group is not None and isinstance(consumer.redelivery_policy, DelayLevelPolicy):
            retry = Destination.queue(consumer.redelivery_policy.retry_destination(consumer.group))
            consumer.retry_consumer_id = await link.add_consumer(
                attrs.evolve(consumer.info, destination=retry, selector=None), consumer._on_dispatch
            )

    async def create_durable_subscriber(
        self,
        topic: str | Destination,
        name: str,
        *,
        selector: str | None = None,
        no_local: bool = False,
        prefetch: int | None = None,
    ) -> Consumer:
        """A durable subscriber (JMS ``createDurableSubscriber``): the subscription ``name`` of this connection's
        ``client_id`` keeps the topic's messages while no subscriber is active and delivers them when one comes
        back. One active subscriber per name; another topic or selector replaces the subscription."""
        self._check_open()
        dest = Destination.parse(topic)
        if not dest.is_topic:
            raise InvalidDestination(f"a durable subscriber is on a topic, not {dest}", destination=str(dest))
        if self.connection.client_id is None:
            raise DurableSubscriptionError(
                "You cannot create a durable subscriber without specifying a unique clientID on a Connection",
                subscription_name=name,
            )
        conn = self.connection
        if prefetch is None:
            prefetch = conn.prefetch_for(dest)
        policy = conn.redelivery_policy_for(dest)
        consumer = Consumer(self, dest, prefetch, policy, selector)
        consumer.info = ConsumerInfo(dest, prefetch, selector, 0, False, False, no_local, self.session_id, name)
        self.consumers.append(consumer)
        try:
            await self._subscribe(consumer)
        except BaseException:
            self.consumers.remove(consumer)
            raise
        return consumer

    async def unsubscribe(self, name: str) -> None:
        """Remove this connection's durable subscription ``name`` and what it kept (JMS ``unsubscribe``); refused
        while a subscriber is active on it."""
        self._check_open()
        await self.connection._link.request(c.Unsubscribe(name))

    async def create_browser(self, queue: str | Destination, selector: str | None = None) -> QueueBrowser:
        """A queue browser: sees queued and in-flight messages without consuming them; with a ``selector`` only
        those that match (at most the queue's browse page of them, ``max_browse_page_size``, as ActiveMQ)."""
        self._check_open()
        dest = Destination.parse(queue)
        check_browser_destination(dest)  # a browser on orders.> or qa,qb: UnsupportedFeature
        if not dest.is_queue:
            raise IllegalStateError(f"only queues can be browsed, not {dest}")
        if selector is not None:
            from minibroker.selector import parse_selector

            parse_selector(selector)  # InvalidSelector here, as JMS's createBrowser throws it
        return QueueBrowser(self, dest, selector)

    def _next_consumer_number(self) -> int:
        self._consumer_numbers += 1
        return self._consumer_numbers

    async def _resubscribe(self) -> None:
        """After a failover: forget what was prefetched and subscribe every consumer again on the new transport."""
        if self._transaction_id is not None:
            self._transaction_id = None
            self._transaction_lost = True
        for producer in self.producers:
            self.connection._link.add_producer(producer.broker_id, producer.destination)
        for consumer in list(self.consumers):
            consumer._transport_interrupted()
            old = {consumer.consumer_id: 0, consumer.retry_consumer_id: 1}
            await self._subscribe(consumer)
            # ActiveMQ replays a consumer with the same id; here the broker gives new ones: re-point what the
            # application holds, so that its acks reach the new subscription
            new = (consumer.consumer_id, consumer.retry_consumer_id)
            for msg in consumer._delivered:
                which = old.get(msg.sub_id)
                replacement = None if which is None else new[which]
                if replacement is not None:
                    msg.sub_id = replacement

    def _forget(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            if consumer.listener is not None:
                self._listener_count -= 1
        if consumer in self._deferred_closes:
            self._deferred_closes.remove(consumer)

    def _note_delivered(self, seq: int) -> None:
        if seq > self.last_delivered_seq:
            self.last_delivered_seq = seq

    # -- acknowledgement --------------------------------------------------------------------------------------------

    def _acknowledge_all(self) -> None:
        """CLIENT mode: each consumer of the session acks everything it has delivered."""
        for consumer in list(self.consumers):
            consumer._acknowledge_delivered()

    async def acknowledge(self) -> None:
        """Ack everything delivered on this session (CLIENT mode); a no-op in other modes."""
        self._check_open()
        if self.ack_mode is AckMode.CLIENT_ACKNOWLEDGE:
            self._acknowledge_all()

    async def recover(self) -> None:
        """Redeliver every delivered, unacked message of the session (after the redelivery delay)."""
        self._check_open()
        if self.transacted:
            raise IllegalStateError("This session is transacted", session_id=self.session_id)
        for consumer in list(self.consumers):
            consumer._rollback()

    # -- transactions -----------------------------------------------------------------------------------------------

    def _in_transaction(self) -> bool:
        return self._transaction_id is not None

    def _transaction_for(self, consumer: Consumer | None = None) -> int:
        """The open transaction, begun on first use; ``consumer`` joins it (ActiveMQ ``registerSync``)."""
        if self._transaction_id is None:
            self._transaction_id = self.connection._link_begin()
        if consumer is not None and consumer not in self._tx_consumers:
            self._tx_consumers.append(consumer)
        return self._transaction_id

    def _defer_close(self, consumer: Consumer) -> None:
        self._deferred_closes.append(consumer)

    async def _run_deferred_closes(self) -> None:
        for consumer in list(self._deferred_closes):
            self._deferred_closes.remove(consumer)
            consumer._close_deferred = False
            await consumer.close()

    async def commit(self) -> None:
        """Make the transaction's sends visible and its receives consumed."""
        self._check_open()
        if not self.transacted:
            raise IllegalStateError("Not a transacted session", session_id=self.session_id)
        if self._transaction_lost:
            self._transaction_lost = False
            consumers = list(self._tx_consumers)
            self._tx_consumers.clear()
            for consumer in consumers:
                consumer._rollback()
            raise TransactionRolledBack(
                "rolling back transaction after failover: its messages were dispatched again",
                session_id=self.session_id,
            )
        txn = self._transaction_id
        if txn is not None:
            consumers = list(self._tx_consumers)
            for consumer in consumers:
                consumer._acknowledge_delivered()
            self._transaction_id = None
            self._tx_consumers.clear()
            try:
                await self.connection._link.request(c.Commit(txn))
            except TransactionRolledBack:
                for consumer in consumers:
                    consumer._rollback()
                raise
            for consumer in consumers:
                consumer._after_commit()
        await self._run_deferred_closes()

    async def rollback(self) -> None:
        """Discard the transaction's sends and redeliver its receives (after the redelivery delay)."""
        self._check_open()
        if not self.transacted:
            raise IllegalStateError("Not a transacted session", session_id=self.session_id)
        await self._rollback_transaction()
        await self._run_deferred_closes()

    async def _rollback_transaction(self) -> None:
        txn = self._transaction_id
        if txn is None:
            if self._transaction_lost:
                self._transaction_lost = False
                consumers = list(self._tx_consumers)
                self._tx_consumers.clear()
                for consumer in consumers:
                    consumer._rollback()
            return
        consumers = list(self._tx_consumers)
        for consumer in consumers:  # ActiveMQ's beforeEnd: acked in the transaction, closed consumers too
            consumer._acknowledge_delivered()
        self._transaction_id = None
        self._tx_consumers.clear()
        await self.connection._link.request(c.Rollback(txn))
        for consumer in consumers:
            consumer._rollback()

    # -- listeners --------------------------------------------------------------------------------------------------

    def _check_no_listener(self) -> None:
        if any(c.listener is not None for c in self.consumers):
            raise IllegalStateError(LISTENER_SET, session_id=self.session_id)

    def _listeners_changed(self) -> None:
        self._listener_count = sum(1 for c in self.consumers if c.listener is not None)
        if self._listener_count and self._dispatcher is None:
            self._dispatcher_wakeup = asyncio.Event()
            self._dispatcher = asyncio.get_running_loop().create_task(
                self._dispatch_loop(), name=f"minibroker-session-{self.session_id}-listeners"
            )
        self._wake_dispatcher()

    def _wake_dispatcher(self) -> None:
        if self._dispatcher_wakeup is not None:
            self._dispatcher_wakeup.set()

    async def _dispatch_loop(self) -> None:
        """Run listeners one message at a time, as ActiveMQ's session thread does."""
        wakeup = self._dispatcher_wakeup
        assert wakeup is not None
        conn = self.connection
        while not self._closed:
            progressed = False
            if conn.started:
                for consumer in list(self.consumers):
                    if consumer.listener is None or consumer.closed:
                        continue
                    while consumer._has_deliverable() and consumer.listener is not None and not consumer.closed:
                        item = consumer._buffer.popleft()
                        if item is None:
                            continue
                        conn._listener_running += 1
                        try:
                            await consumer._deliver_to_listener(item)
                        finally:
                            conn._listener_running -= 1
                        progressed = True
            if not progressed:
                wakeup.clear()
                await wakeup.wait()

    # -- closing ----------------------------------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the consumers (their unacked messages go back to the broker), then roll back an open transaction."""
        if self._closed:
            return
        consumers = list(self.consumers)
        for consumer in consumers:
            consumer._dispose()
        # As ActiveMQ's session dispose: consumers stop first, then the open transaction rolls back while the broker
        # still has them, so a message past its redelivery limit is poison-acked to the DLQ, not just released.
        await self._rollback_transaction()
        last = max((c.last_delivered_seq for c in consumers), default=-1)
        for consumer in consumers:
            await self.connection._link.request(c.RemoveConsumer(consumer.consumer_id, last))
            if consumer.retry_consumer_id is not None:
                await self.connection._link.request(c.RemoveConsumer(consumer.retry_consumer_id, last))
        await self._shutdown()

    async def _close_with_connection(self) -> None:
        """The connection closes: stop the consumers and roll back an open transaction (as ActiveMQ's session
        dispose does), then stop locally; the connection's own close releases the rest at the broker."""
        if self._closed:
            return
        for consumer in list(self.consumers):
            consumer._dispose()
        with contextlib.suppress(MinibrokerError):  # the link is gone: the broker releases it all (as ActiveMQ)
            await self._rollback_transaction()
        self._abandon()

    async def _shutdown(self) -> None:
        task = self._abandon()
        if task is not None and task is not asyncio.current_task():
            await asyncio.wait([task])

    def _abandon(self) -> asyncio.Task[None] | None:
        """Stop locally without telling the broker (the connection does, or the transport is gone)."""
        for consumer in list(self.consumers):
            consumer._dispose()
        self._transaction_id = None
        self._tx_consumers.clear()
        self._deferred_closes.clear()
        self._closed = True
        self.connection._forget(self)
        task, self._dispatcher = self._dispatcher, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        return task

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class QueueBrowser:
    """Looks at a queue without consuming: queued and in-flight messages (only acked ones are hidden)."""

    def __init__(self, session: Session, queue: Destination, selector: str | None = None) -> None:
        self.session = session
        self.queue = queue
        #: the message selector (None: every message)
        self.selector = selector

    async def messages(self) -> Sequence[Message]:
        """A snapshot, oldest first; empty when the connection is not started (as in ActiveMQ)."""
        self.session._check_open()
        if not self.session.connection.started:
            return []
        messages = await self.session.connection._link.request(c.Browse(self.queue.name, self.selector))
        return [
            without_original_expiration(m) if m.properties and ORIGINAL_EXPIRATION in m.properties else m
            for m in messages
        ]

    async def close(self) -> None:
        return None
