"""The client-side consumer: its buffer of prefetched messages, what it has delivered, and how it acks.

This is where ActiveMQ's acknowledge modes live (``ActiveMQMessageConsumer``): acks are built here from what the
application has been given, and local redelivery (rollback, recover, a listener that raises) happens here too, with
the redelivery policy's delay taken on the connection's clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import attrs

from minibroker import AckType, ConsumerInfo, Dispatch, MessageAck
from minibroker.clock import TimerHandle
from minibroker.errors import ConsumerClosed, InvalidConfiguration, MinibrokerError
from minibroker.message import Destination, Message
from minibroker.redelivery import DelayLevelPolicy, RedeliveryPolicy, RetryPolicy
from minibroker.transport.commands import RemoveConsumer

from ._ack_mode import AckMode
from ._message import ReceivedMessage

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["Consumer", "MessageListener"]

#: receive()'s fast path on (tests/client/test_receive_fast_path.py turns it off to compare with the general path)
FAST_RECEIVE = True

MessageListener = Callable[[ReceivedMessage], Awaitable[None] | None]

ZERO_PREFETCH_LISTENER = (
    "Illegal prefetch size of zero. This setting is not supported for asynchronous consumers please set a value of "
    "at least 1"
)
_NULL = None  # a null dispatch in the buffer: the broker's "nothing for your pull"


class Consumer:
    """Receives messages from one destination. Use ``receive()``, ``async for``, or ``set_listener()``."""

    def __init__(
        self,
        session: Session,
        destination: Destination,
        prefetch: int,
        redelivery_policy: RetryPolicy,
        selector: str | None,
    ) -> None:
        self.session = session
        self.destination = destination
        self.prefetch = prefetch
        self.selector = selector
        self.redelivery_policy = redelivery_policy
        self.consumer_id = 0
        #: what the consumer asked the broker for; sent again when a fault-tolerant connection reconnects
        self.info: ConsumerInfo | None = None
        #: ActiveMQ-style consumer id, as it appears in poison causes
        self.name = f"ID:{session.connection.connection_id}:{session.session_id}:{session._next_consumer_number()}"
        self._buffer: deque[ReceivedMessage | None] = deque()
        self._running = True
        #: the connection is started: a stopped one holds prefetched messages back from receive() (as ActiveMQ)
        self._started = session.connection.started
        self._delivered: list[ReceivedMessage] = []
        self._delivered_counter = 0
        self._additional_window = 0
        self._pending_ack: MessageAck | None = None
        #: the broker sequence id of the last message handed to the application (ActiveMQ lastDeliveredSequenceId)
        self.last_delivered_seq = -1
        self._listener: MessageListener | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._close_deferred = False
        self._redelivery_timers: list[TimerHandle] = []
        #: consumer group of a delay-level (RocketMQ-style) retry policy; its retries go through %RETRY%<group>
        self.group: str | None = None
        self.retry_consumer_id: int | None = None
        self._retry_seq = 0
        self._arrivals = 0
        #: the AUTO range ack being folded over a network link (see _ack_auto_later)
        self._auto_ack: MessageAck | None = None
        self._auto_ack_arrival = 0
        self._retry_tasks: set[asyncio.Task[None]] = set()
        self._in_transaction = False
        conn = session.connection
        self._priority_buffer = conn.message_priority_supported
        self._audit = conn.audit
        self._non_blocking = conn.non_blocking_redelivery
        mode = session.ack_mode
        self._transacted = mode is AckMode.SESSION_TRANSACTED
        topic = destination.is_topic
        #: ActiveMQ's "ack-each": AUTO, or DUPS_OK on a queue
        self._ack_each = mode is AckMode.AUTO_ACKNOWLEDGE or (mode is AckMode.DUPS_OK_ACKNOWLEDGE and not topic)
        #: "ack-batch": DUPS_OK on a topic
        self._ack_batch = mode is AckMode.DUPS_OK_ACKNOWLEDGE and topic
        self._client_ack = mode is AckMode.CLIENT_ACKNOWLEDGE
        self._individual_ack = mode is AckMode.INDIVIDUAL_ACKNOWLEDGE
        #: whether a first delivery (the broker's counter 0) can already be past the redelivery limit: never with
        #: the shipped policies, so receive()'s transacted fast path asks the policy only about redeliveries
        self._first_dispatch_checked = bool(
            getattr(redelivery_policy, "pre_dispatch_check", True) and redelivery_policy.exceeded(0)
        )

    def __repr__(self) -> str:
        return f"<Consumer {self.consumer_id} on {self.destination} prefetch={self.prefetch}>"

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def listener(self) -> MessageListener | None:
        return self._listener

    # -- dispatches from the broker ---------------------------------------------------------------------------------

    def _on_dispatch(self, dispatch: Dispatch) -> None:
        if self._closed:
            return
        if dispatch.message is None:
            self._buffer.append(_NULL)
        else:
            audit = self._audit
            if audit.enabled and audit.is_duplicate(dispatch.message, self):
                self._on_duplicate(dispatch)
                return
            msg = ReceivedMessage(dispatch, self)
            self._arrivals = msg.arrival = self._arrivals + 1
            if self._priority_buffer and self._buffer:
                self._insert_by_priority(msg)
            else:
                self._buffer.append(msg)
        waiter = self._waiter
        if waiter is not None or self._listener is not None:
            self._wake()

    def _on_duplicate(self, dispatch: Dispatch) -> None:
        """A message this connection has seen before (after a failover): never shown to the application again.

        Inside a transaction that already holds it, the broker is only told it is delivered; otherwise it is poison
        acked, so it lands in the DLQ with ActiveMQ's cause text (semantics §7).
        """
        message = dispatch.message
        assert message is not None
        if self._transacted and any(d.message_id == message.message_id for d in self._delivered):
            txn = self.session._transaction_for(self)
            ack = MessageAck(dispatch.consumer_id, AckType.DELIVERED, message.message_id, message.message_id, 1, txn)
        else:
            ack = MessageAck(
                dispatch.consumer_id,
                AckType.POISON,
                message.message_id,
                message.message_id,
                1,
                poison_cause=f"java.lang.Throwable: Suppressing duplicate delivery on connection, consumer {self.name}",
            )
        # not from inside the broker's dispatch loop: right after it
        asyncio.get_running_loop().call_soon(self._send_ack, ack)

    def _transport_interrupted(self) -> None:
        """The connection failed over: prefetched messages are forgotten (the broker sends them again)."""
        audit = self.session.connection.audit
        for item in self._buffer:
            if item is not None:
                audit.rollback(item.message, self)
        self._buffer.clear()
        self._pending_ack = None
        self._delivered_counter = 0
        self._additional_window = 0

    def _insert_by_priority(self, msg: ReceivedMessage) -> None:
        """Client-side reordering (``messagePrioritySupported``): higher priority first, FIFO within a priority."""
        buffer = self._buffer
        for i, other in enumerate(buffer):
            if other is not None and other.priority < msg.priority:
                buffer.insert(i, msg)
                return
        buffer.append(msg)

    def _connection_started(self, started: bool) -> None:
        self._started = started
        if started:
            self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self._listener is not None:
            self.session._wake_dispatcher()

    def _has_deliverable(self) -> bool:
        """A message can be handed out now (not while a redelivery delay blocks, nor once the application has
        closed the consumer, even if the close waits for the transaction to end)."""
        return self._running and self._started and bool(self._buffer) and not self._close_deferred

    # -- synchronous receive ----------------------------------------------------------------------------------------

    async def receive(self, timeout: float | None = None) -> ReceivedMessage | None:
        """The next message, or None when ``timeout`` seconds pass first. ``timeout=0``: don't wait; None: forever.

        In AUTO and DUPS_OK modes the message is acked before this returns.
        """
        if self._closed or self._close_deferred:
            self._check_open()
        session = self.session
        if session._listener_count:
            session._check_no_listener()
        buffer = self._buffer
        pull = self.prefetch == 0
        # Fast path: a plain message is already here (the common case with a prefetch window). The loop below is its
        # reference: with FAST_RECEIVE off every receive takes it, and a test checks both give the same results.
        if buffer and FAST_RECEIVE and not pull and self._running and self._started:
            item = buffer[0]
            # (a transacted message past the redelivery limit takes the loop below, which poisons it)
            if (
                item is not None
                and not item.message.expiration
                and not self._ack_batch
                and not (
                    self._transacted
                    and (item.dispatch_counter or self._first_dispatch_checked)
                    and self._redelivery_exceeded(item)
                )
            ):
                buffer.popleft()
                self.last_delivered_seq = seq = item.broker_seq
                if seq > session.last_delivered_seq:
                    session.last_delivered_seq = seq
                if self._ack_each:
                    # AUTO: the ack of exactly this message, sent before receive() returns
                    link = session.connection._link
                    if link.coalesce_acks:
                        self._ack_auto_later(item)
                    else:
                        try:
                            acked = link.ack_one(item.sub_id, item.message.message_id)
                        except MinibrokerError as exc:  # the store could not write it: reported as every ack
                            session.connection._report_async_error(exc)  # error is, the message stays held
                            acked = True
                        if not acked:
                            self._send_ack(
                                MessageAck(item.sub_id, AckType.STANDARD, item.message_id, item.message_id, 1)
                            )
                else:  # CLIENT, INDIVIDUAL and transacted: delivered, acked DELIVERED in a batch (ackLater)
                    self._delivered.append(item)
                    self._ack_later(item, AckType.DELIVERED)
                return item
        clock = session.connection.clock
        deadline = None if timeout is None or timeout <= 0 else clock.now() + timeout
        while True:
            if pull:
                self._send_pull(timeout, deadline)
                item = await self._dequeue(None, wait=True)
            else:
                item = await self._dequeue(deadline, wait=timeout != 0)
            if item is None:
                return None
            if item.message.is_expired(clock.now()):
                self._before_consumed(item)
                self._after_consumed(item, expired=True)
                continue
            if self._redelivery_exceeded(item):
                self._poison_ack(
                    item,
                    f"Dispatch[{item.dispatch_counter}] to {self.name} exceeds redelivery policy limit:"
                    f"{self._policy_text()}",
                )
                continue
            self._before_consumed(item)
            self._after_consumed(item)
            return item

    def receive_immediately(self) -> Awaitable[ReceivedMessage | None]:
        """``receive(timeout=0)``, JMS ``receiveNoWait``: a message that is already here, or None.

        Awaitable, not synchronous (so not ``*_nowait``): with prefetch 0 it asks the broker first.
        """
        return self.receive(0)

    def _send_pull(self, timeout: float | None, deadline: float | None) -> None:
        if self._buffer:
            return
        if timeout is None:
            wire = 0.0
        elif timeout == 0:
            wire = -1.0
        else:
            assert deadline is not None
            wire = max(deadline - self.session.connection.clock.now(), 0.0)
            if wire == 0:
                wire = -1.0
        self.session.connection._link.pull(self.consumer_id, wire)

    async def _dequeue(self, deadline: float | None, *, wait: bool) -> ReceivedMessage | None:
        """Take the next message from the buffer, waiting until ``deadline`` (None: forever) if allowed."""
        clock = self.session.connection.clock
        while True:
            if self._closed:
                return None
            if self._running and self._started and self._buffer:
                return self._buffer.popleft()
            if not wait or (deadline is not None and clock.now() >= deadline):
                return None
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiter = waiter
            timer = None
            if deadline is not None:
                timer = clock.call_at(deadline, _resolver(waiter))
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()

    def __aiter__(self) -> AsyncIterator[ReceivedMessage]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[ReceivedMessage]:
        while not self._closed:
            msg = await self.receive()
            if msg is None:
                return
            yield msg

    # -- delivery bookkeeping (ActiveMQ before/afterMessageIsConsumed) -----------------------------------------------

    def _before_consumed(self, msg: ReceivedMessage) -> None:
        self.last_delivered_seq = msg.broker_seq
        self.session._note_delivered(msg.broker_seq)
        if not self._ack_batch:
            self._delivered.append(msg)
        if self._transacted:
            self._ack_later(msg, AckType.DELIVERED)

    def _after_consumed(self, msg: ReceivedMessage, expired: bool = False) -> None:
        if self._closed:
            return
        if expired:
            self._send_ack(MessageAck(msg.sub_id, AckType.EXPIRED, msg.message_id, msg.message_id, 1))
            if msg in self._delivered:
                self._delivered.remove(msg)
            return
        if self._transacted:
            return
        if self._ack_each:
            delivered = self._delivered
            if delivered:
                acks = self._range_acks(AckType.STANDARD, delivered)
                delivered.clear()
                for ack in acks:
                    self._send_ack(ack)
        elif self._ack_batch:
            self._ack_later(msg, AckType.STANDARD)
        elif msg in self._delivered:
            self._ack_later(msg, AckType.DELIVERED)

    def _ack_later(self, msg: ReceivedMessage, ack_type: AckType) -> None:
        """Tell the broker about deliveries in batches, so it can widen the prefetch window (``ackLater``)."""
        txn = None
        if self._transacted:
            session = self.session
            txn = session._transaction_id
            if txn is None or self not in session._tx_consumers:  # Session._transaction_for's work, when any
                txn = session._transaction_for(self)
        self._delivered_counter += 1
        old = self._pending_ack
        if old is None:
            first = msg.message_id
        elif old.ack_type == ack_type and old.consumer_id == msg.sub_id:
            first = old.first_message_id or old.last_message_id
        else:
            first = msg.message_id
            if old.ack_type != AckType.DELIVERED:
                self._send_ack(old)
        # once per delivered message: tuple.__new__ skips the NamedTuple's Python-level __new__
        pending = tuple.__new__(
            MessageAck, (msg.sub_id, ack_type, msg.message_id, first, self._delivered_counter, txn, None, None)
        )
        self._pending_ack = pending
        if 0.5 * self.prefetch <= self._delivered_counter - self._additional_window:
            self._pending_ack = None
            self._delivered_counter = 0
            self._additional_window = 0
            self._send_ack(pending)

    @staticmethod
    def _range_acks(
        ack_type: AckType,
        messages: list[ReceivedMessage],
        txn: int | None = None,
        poison_cause: str | None = None,
        *,
        by_dispatch_run: bool = True,
    ) -> list[MessageAck]:
        """Range acks covering ``messages``: one per broker subscription and, with ``by_dispatch_run``, per run in the
        broker's dispatch order (normally exactly one; a non-blocking redelivery puts a message after others
        dispatched later). Without it, one range from the first received to the last, as ActiveMQ's CLIENT
        acknowledge sends it: when the application received them out of dispatch order (client-side priority
        reordering, a non-blocking redelivery) the broker cannot match the range and acks nothing (recorded)."""
        acks: list[MessageAck] = []
        start = 0
        for i in range(1, len(messages) + 1):
            if (
                i == len(messages)
                or messages[i].sub_id != messages[start].sub_id
                or (by_dispatch_run and messages[i].arrival < messages[i - 1].arrival)
            ):
                run = messages[start:i]
                acks.append(
                    MessageAck(
                        run[0].sub_id, ack_type, run[-1].message_id, run[0].message_id, len(run), txn, poison_cause
                    )
                )
                start = i
        return acks

    def _ack_auto_later(self, item: ReceivedMessage) -> None:
        """Over a network link, extend the pending AUTO range ack when ``item`` was dispatched right after the
        range's last message (consecutive arrivals: nothing else of this subscription lies between them); the range
        goes out at the end of this loop iteration, or before any other ack of this consumer."""
        pending = self._auto_ack
        if pending is not None and pending.consumer_id == item.sub_id and self._auto_ack_arrival + 1 == item.arrival:
            self._auto_ack = pending._replace(last_message_id=item.message_id, message_count=pending.message_count + 1)
            self._auto_ack_arrival = item.arrival
            return
        self._flush_auto_ack()
        self._auto_ack = MessageAck(item.sub_id, AckType.STANDARD, item.message_id, item.message_id, 1)
        self._auto_ack_arrival = item.arrival
        asyncio.get_running_loop().call_soon(self._flush_auto_ack)

    def _flush_auto_ack(self) -> None:
        pending, self._auto_ack = self._auto_ack, None
        if pending is not None:
            self._send_ack(pending)

    def _send_ack(self, ack: MessageAck) -> None:
        """Acks are asynchronous, as ActiveMQ sends them by default: a refusal goes to the exception listener."""
        if self._auto_ack is not None and ack is not self._auto_ack:
            self._flush_auto_ack()  # acks of one consumer keep their order
        if self._closed and ack.transaction_id is None and ack.ack_type not in (AckType.POISON, AckType.REDELIVERED):
            return  # (a closing session's rollback still sends these, and its transaction's acks: the broker has the
            # consumer until then, as in ActiveMQ's dispose order)
        conn = self.session.connection
        try:
            conn._link.ack(ack)
        except MinibrokerError as exc:
            conn._report_async_error(exc)

    def _acknowledge_delivered(self) -> None:
        """Ack everything delivered so far with one STANDARD range ack (CLIENT acknowledge, transaction end)."""
        delivered = self._delivered
        if not delivered:
            return
        txn = self.session._transaction_for(self) if self._transacted else None
        self._pending_ack = None
        for ack in self._range_acks(AckType.STANDARD, delivered, txn, by_dispatch_run=self._transacted):
            self._send_ack(ack)
        self._delivered_counter = max(0, self._delivered_counter - len(delivered))
        self._additional_window = max(0, self._additional_window - len(delivered))
        if not self._transacted:
            delivered.clear()

    async def _acknowledge_message(self, msg: ReceivedMessage) -> None:
        """ActiveMQ gives only CLIENT and INDIVIDUAL messages an acknowledge callback: in the other modes
        ``acknowledge()`` does nothing, even after a close."""
        if not (self._client_ack or self._individual_ack):
            return
        if self._closed:
            raise ConsumerClosed("The Consumer is closed", consumer_id=self.consumer_id)
        self.session._check_open()
        if self._client_ack:
            self.session._acknowledge_all()
        else:
            # sent even when a redelivery of the message is already waiting in the buffer, as ActiveMQ does
            self._send_ack(MessageAck(msg.sub_id, AckType.INDIVIDUAL, msg.message_id, msg.message_id, 1))
            if msg in self._delivered:
                self._delivered.remove(msg)

    # -- redelivery -------------------------------------------------------------------------------------------------

    def _policy_text(self) -> str:
        policy = self.redelivery_policy
        if isinstance(policy, RedeliveryPolicy):
            return policy.activemq_string()
        return repr(policy)

    def _redelivery_exceeded(self, msg: ReceivedMessage) -> bool:
        """The transacted pre-dispatch check: a message the broker dispatched with a counter already past the limit
        never reaches the application (the broker's counter: local rollbacks do not count here, as in ActiveMQ)."""
        policy = self.redelivery_policy
        return (
            self._transacted
            and getattr(policy, "pre_dispatch_check", True)
            and policy.exceeded(msg.dispatch_counter)
            and "redeliveryDelay" not in msg.message.properties
        )

    def _poison_ack(self, msg: ReceivedMessage, cause: str) -> None:
        self._send_ack(
            MessageAck(
                msg.sub_id,
                AckType.POISON,
                msg.message_id,
                msg.message_id,
                1,
                poison_cause=f"java.lang.Throwable: {cause}",
            )
        )

    def _after_commit(self) -> None:
        self._delivered.clear()

    def _rollback(self) -> None:
        """Give back what was delivered: local redelivery after the policy's delay, or the DLQ when exhausted."""
        delivered = self._delivered
        if not delivered:
            return
        if self._closed:
            # closed with its session or connection, whose rollback comes after the consumers stop (ActiveMQ's
            # dispose order): the broker still has the consumer, so what exhausted the redelivery policy goes to
            # the DLQ now; the rest the broker takes back when the consumer is removed
            self._poison_exhausted_on_close()
            return
        audit = self.session.connection.audit
        for msg in delivered:
            msg.redelivery_counter += 1
            audit.rollback(msg.message, self)
        policy = self.redelivery_policy
        if isinstance(policy, DelayLevelPolicy):
            size = len(delivered)
            self._retry_through_broker(list(delivered), policy)
            self._delivered_counter -= size
            delivered.clear()
            return
        last = delivered[-1]
        counter = last.redelivery_counter
        size = len(delivered)
        if policy.exceeded(counter):
            cause = last.rollback_cause
            cause_text = "null" if cause is None else f"{type(cause).__name__}: {cause}"
            cause_line = (
                f"java.lang.Throwable: Delivery[{counter}] exceeds redelivery policy limit:"
                f"{self._policy_text()}, cause:{cause_text}"
            )
            for ack in self._range_acks(AckType.POISON, delivered, poison_cause=cause_line):
                self._send_ack(ack)
            self._additional_window = max(0, self._additional_window - size)
            self._delivered_counter -= size
            delivered.clear()
            return
        delay = policy.delay_for(counter, self.session.connection.random)
        if counter > 0:
            for ack in self._range_acks(AckType.REDELIVERED, delivered):
                self._send_ack(ack._replace(redelivery_delay=delay))
        pending = list(delivered)
        self._delivered_counter -= size
        delivered.clear()
        if self._non_blocking:

            def redispatch_later() -> None:
                if not self._closed:
                    self._buffer.extend(pending)
                    self._wake()

            self._after(delay, redispatch_later)
            return
        self._running = False

        def redispatch() -> None:
            if not self._closed:
                self._buffer.extendleft(reversed(pending))
                self._running = True
                self._wake()

        if delay > 0:
            self._after(delay, redispatch)
        else:
            redispatch()

    def _poison_exhausted_on_close(self) -> None:
        delivered = self._delivered
        policy = self.redelivery_policy
        if not isinstance(policy, DelayLevelPolicy) and policy.exceeded(delivered[-1].redelivery_counter + 1):
            for msg in delivered:
                msg.redelivery_counter += 1
            last = delivered[-1]
            cause = last.rollback_cause
            cause_text = "null" if cause is None else f"{type(cause).__name__}: {cause}"
            cause_line = (
                f"java.lang.Throwable: Delivery[{last.redelivery_counter}] exceeds redelivery policy limit:"
                f"{self._policy_text()}, cause:{cause_text}"
            )
            for ack in self._range_acks(AckType.POISON, delivered, poison_cause=cause_line):
                self._send_ack(ack)
        elif delivered[-1].redelivery_counter > 0:
            # ActiveMQ's rollback tells the broker of a redelivered message even while its session closes (a durable
            # subscription then forgets the redeliveries it counted: recorded, durable_redelivery_rounds_*)
            for ack in self._range_acks(AckType.REDELIVERED, delivered):
                self._send_ack(ack)
        delivered.clear()

    def _after(self, delay: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` after ``delay`` seconds on the connection's clock; pending ones show in settled()."""
        clock = self.session.connection.clock
        timer: TimerHandle | None = None

        def fire() -> None:
            if timer in self._redelivery_timers:
                self._redelivery_timers.remove(timer)
            callback()

        timer = clock.call_at(clock.now() + delay, fire)
        self._redelivery_timers.append(timer)

    def _pending_work(self) -> list[str]:
        """What this consumer will still do by itself: redeliver after a delay, feed its listener, resend."""
        pending = []
        if self._redelivery_timers:
            pending.append(
                f"consumer {self.name}: {len(self._redelivery_timers)} redelivery(ies) waiting for their delay"
            )
        if self._listener is not None and self._has_deliverable():
            pending.append(f"consumer {self.name}: {len(self._buffer)} message(s) for its listener")
        if self._retry_tasks:
            pending.append(f"consumer {self.name}: {len(self._retry_tasks)} retry copy(ies) being sent")
        return pending

    def _retry_through_broker(self, messages: list[ReceivedMessage], policy: DelayLevelPolicy) -> None:
        """RocketMQ-style retry: a copy goes to ``%RETRY%<group>`` after the level's delay (or to ``%DLQ%<group>``
        once ``max_reconsume_times`` retries are spent), and the original is acked."""
        group = self.group or self.destination.name
        conn = self.session.connection
        copies: list[Message] = []
        now = conn.clock.now()
        for msg in messages:
            original = msg.message
            reconsumed = original.properties.get("reconsumeTimes", 0)
            times = reconsumed if isinstance(reconsumed, int) and not isinstance(reconsumed, bool) else 0
            origin_id = original.properties.get("ORIGIN_MESSAGE_ID", original.message_id)
            first_topic = original.properties.get("RETRY_TOPIC", original.destination.name)
            if policy.exceeded(times + 1):
                properties = dict(original.properties)
                target = Destination.queue(policy.dead_letter_destination(group))
                delay = 0.0
            else:
                level = policy.level_for(times)
                delay = policy.delay_of_level(level)
                properties = dict(original.properties)
                properties.update(policy.retry_properties(str(first_topic), str(origin_id), times, level, group=group))
                properties["AMQ_SCHEDULED_DELAY"] = int(round(delay * 1000))
                target = Destination.queue(policy.retry_destination(group))
            self._retry_seq += 1
            copies.append(
                attrs.evolve(
                    original,
                    message_id=f"{original.message_id}:retry:{self._retry_seq}",
                    destination=target,
                    properties=properties,
                    timestamp=now,
                    producer_id=f"{self.name}:retry",
                    producer_seq=self._retry_seq,
                )
            )
        acks = self._range_acks(AckType.STANDARD, messages)

        async def resend_then_ack() -> None:
            for copy in copies:
                waiting = conn._link.send(copy, None, True)
                if waiting is not None:
                    await waiting
            for ack in acks:
                self._send_ack(ack)

        task = asyncio.get_running_loop().create_task(resend_then_ack())
        self._retry_tasks.add(task)
        task.add_done_callback(self._retry_tasks.discard)

    # -- listeners --------------------------------------------------------------------------------------------------

    def set_listener(self, listener: MessageListener | None) -> None:
        """Deliver messages to ``listener`` (a function or coroutine function) instead of ``receive()``."""
        self._check_open()
        if listener is not None and self.prefetch == 0:
            raise InvalidConfiguration(ZERO_PREFETCH_LISTENER, prefetch=0)
        self._listener = listener
        self.session._listeners_changed()

    async def _deliver_to_listener(self, msg: ReceivedMessage) -> None:
        listener = self._listener
        assert listener is not None
        if self._redelivery_exceeded(msg):
            self._poison_ack(
                msg,
                f"Dispatch[{msg.dispatch_counter}] to {self.name} exceeds redelivery "
                f"policy limit:{self._policy_text()}",
            )
            return
        self._before_consumed(msg)
        expired = msg.message.is_expired(self.session.connection.clock.now())
        try:
            if not expired:
                result = listener(msg)
                if inspect.isawaitable(result):
                    await result
        except Exception as exc:  # the listener's failure is the message's rollback cause, as in ActiveMQ
            self._listener_failed(msg, exc)
            return
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the session's delivery is being stopped: not the listener's doing
            # a listener that raised CancelledError itself (a timeout it let escape, a cancelled helper task) failed
            # like any other: before, it silently ended delivery for the whole session (issue 15)
            self._listener_failed(msg, exc)
            return
        except (KeyboardInterrupt, SystemExit):
            raise  # the process is stopping: not a message's failure
        except BaseException as exc:  # GeneratorExit and the like (issue 31): a failed listener, not a dead session
            self._listener_failed(msg, exc)
            return
        self._after_consumed(msg, expired=expired)

    def _listener_failed(self, msg: ReceivedMessage, exc: BaseException) -> None:
        msg.rollback_cause = exc
        self.session.connection._report_listener_error(self, msg, exc)
        if self._ack_each or self._ack_batch or self._individual_ack:
            self._rollback()
        else:
            self._after_consumed(msg)

    # -- closing ----------------------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed or self._close_deferred:
            raise ConsumerClosed("The Consumer is closed", consumer_id=self.consumer_id)

    async def close(self) -> None:
        """Close; inside a transaction with delivered messages the close waits for commit or rollback."""
        if self._closed or self._close_deferred:
            return
        if self._transacted and self._delivered and self.session._in_transaction():
            self._close_deferred = True
            self.session._defer_close(self)
            return
        self._dispose()
        link = self.session.connection._link
        await link.request(RemoveConsumer(self.consumer_id, self.last_delivered_seq))
        if self.retry_consumer_id is not None:
            await link.request(RemoveConsumer(self.retry_consumer_id, self.last_delivered_seq))

    def _dispose(self) -> None:
        """Stop locally: forget buffered messages (the broker redelivers them), wake waiters, stop timers."""
        if self._closed:
            return
        self._flush_auto_ack()  # what the application received is acked before the consumer goes
        pending, self._pending_ack = self._pending_ack, None
        if not self._transacted and pending is not None and pending.ack_type is not AckType.DELIVERED:
            # ActiveMQ's deliverAcks(): what is still batched (DUPS_OK on a topic) is acked before the consumer goes,
            # closed alone or with its session or connection (recorded: mixed_dups_ok_durable_close_*); a pending
            # DELIVERED ack would only widen a window that is about to disappear
            with contextlib.suppress(MinibrokerError):  # a lost transport: the broker redelivers, as ActiveMQ's
                self._send_ack(pending)
        self._closed = True
        audit = self.session.connection.audit
        if audit.enabled:
            for item in self._buffer:
                if item is not None:
                    audit.rollback(item.message, self)
            if self._client_ack or self._individual_ack:
                for msg in self._delivered:
                    audit.rollback(msg.message, self)
        for timer in self._redelivery_timers:
            timer.cancel()
        self._redelivery_timers.clear()
        if not self._transacted:
            self._delivered.clear()
        self._buffer.clear()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        self.session._forget(self)


def _resolver(waiter: asyncio.Future[None]) -> Callable[[], None]:
    """A timer callback that wakes ``waiter`` unless something else already did."""

    def resolve() -> None:
        if not waiter.done():
            waiter.set_result(None)

    return resolve
