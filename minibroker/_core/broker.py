"""The broker core: every state change of the broker, as plain synchronous methods.

Rules of this module (as h11's ``_state.py`` has its own):

1. No I/O, no asyncio, no wall clock. Time comes from ``clock.now()``; anything that must happen later is exposed as
   ``next_deadline()`` and performed by ``tick()``, which the driver calls when that time comes.
2. Output is data: dispatches are appended to ``self.output``; the driver drains it with ``drain()`` after each call
   and routes each :class:`Dispatch` to its consumer. The core never calls back into a client.
3. A method either completes or raises a typed error before changing anything, so bad input from a peer can never
   leave the broker half-updated.

The semantics are ActiveMQ Classic 5.x's; section numbers below refer to the project's ActiveMQ semantics notes.
This module routes; the rules live with their idea: a message's states and moves in lifecycle.py, the ways out of a
queue in queue.py, the ack types in acks.py, commit and rollback in transaction.py, the dead-letter strategy in
dead_letter.py, replayable reads in replay.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..errors import (
    IllegalStateError,
    InvalidAcknowledge,
    TransactionError,
)
from ..message import Destination, DestinationKind, Message
from ..refusals import (
    ACCEPTED_SEND_NAMES,
    check_message_properties,
    check_send_destination,
)
from .acks import (
    ack_delivered,
    ack_expired,
    ack_individual,
    ack_poison,
    ack_range,
    ack_redelivered,
    ack_standard,
)
from .administration import Administration
from .advising import Advising
from .advisory import (
    ADVISORY_PREFIX,
    BROKER_NAME,
    CONNECTION,
    DLQD,
    EXPIRED,
    connection_info,
    remove_info,
)
from .binding import TopicBinding
from .commands import AckType, MessageAck
from .connection import ConnectionState
from .consumers import NOW_UNKNOWN_DELIVERED, Consumers
from .dead_letter import DeadLetters, expiry_cause
from .durable import DurableSubscription
from .durable_consumers import DurableConsumers
from .effects import Dispatch
from .history import DeadLetterRecord, History
from .journal import Journal
from .memory import MemoryLimits
from .multi import QueueSet, queue_of, reads, reads_many
from .numbering import Numbering
from .policy import DestinationPolicy
from .queue import Queue
from .restoring import Restoring
from .retained import is_retained, retain
from .scheduling import Scheduling
from .subscription import QueueEntry, Subscription
from .temporary import TemporaryDestinations
from .timers import EXPIRE_PERIOD, Timers
from .topic import Topic, count_before
from .transaction import Transaction
from .usage import DEFAULT_SYSTEM_MEMORY_LIMIT, MemoryUsage
from .virtual import DEFAULT_VIRTUAL_TOPICS, VirtualTopics, is_wildcard, topic_matches

if TYPE_CHECKING:
    from datetime import tzinfo  # a type only: datetime loads with the scheduler's first cron job (issue 45)

    from .replay_reads import ReplayableReads  # loads with the first replayable read (issue 45)

__all__ = ["EXPIRE_PERIOD", "NOW_UNKNOWN_DELIVERED", "BrokerCore", "PolicyLookup"]

QUEUE = DestinationKind.QUEUE

#: the scheduler's management topic (ActiveMQ's ``ScheduledMessage.AMQ_SCHEDULER_MANAGEMENT_DESTINATION``)
MANAGEMENT = "ActiveMQ.Scheduler.Management"


class _Clock(Protocol):
    def now(self) -> float: ...


PolicyLookup = Callable[[Destination], DestinationPolicy]


class BrokerCore(
    Administration, Advising, Consumers, DurableConsumers, MemoryLimits, Restoring, Scheduling, Timers, TopicBinding
):
    """All destinations, subscriptions and transactions of one broker."""

    # Rarely set attributes live here as class defaults, not in __init__: CPython (3.11+) keeps an instance's
    # attributes in a key-sharing table of at most 30 keys, and an instance with more loses the fast attribute
    # loads on every access (measured: about 4,000 more instructions per in-process message at 31 attributes).
    #: the time zone cron entries are read in (the broker's ``scheduler_time_zone``; None: UTC)
    scheduler_time_zone: tzinfo | None = None
    #: called with (message, cause, source destination, expired) before dead-lettering; returning True means the
    #: message was taken care of (the broker redelivery plugin re-schedules it instead)
    dead_letter_hook: Callable[[Message, str | None, Destination, bool, int], bool] | None = None
    #: asked, when a wildcard or composite subscription would read one more destination, whether the subscription's
    #: connection may read it: (connection id, destination) -> bool (the driver's security filters; None: anyone).
    #: ActiveMQ checks each destination as such a subscription joins it, and leaves out the ones refused.
    read_check: Callable[[int, Destination], bool] | None = None
    #: when the expiry sweep runs next (None: no message waits with an expiration)
    _next_sweep: float | None = None
    #: the last scheduled job's number
    _scheduled_seq: int = 0
    #: fault injection: the next commit raises this error after rolling the transaction back
    fail_next_commit: Exception | None = None
    #: ActiveMQ's ``schedulerSupport``: AMQ_SCHEDULED_* properties schedule a message (set when True)
    scheduler_support: bool = False
    #: ActiveMQ's ``advisorySupport``: publish advisory messages (advisory.py; set when False)
    advisory_support: bool = True
    #: the name advisories give as their origin (``Broker(name=...)``; ActiveMQ's default ``localhost``)
    broker_name: str = BROKER_NAME
    #: the replayable reads, made on first use (``replay``): only the Spark source's requests need them
    _replay: ReplayableReads | None = None

    def __init__(
        self,
        clock: _Clock,
        *,
        policy_for: PolicyLookup | None = None,
        history_limit: int = 10_000,
        scheduler_support: bool = False,
        journal: Journal | None = None,
        virtual_topics: VirtualTopics | None = DEFAULT_VIRTUAL_TOPICS,
        system_memory_limit: int = DEFAULT_SYSTEM_MEMORY_LIMIT,
    ) -> None:
        self.clock = clock
        #: every queue's bytes against the system memory limit; past it, flow control holds sends to every queue
        self.usage = MemoryUsage(system_memory_limit, self._usage_changed)
        #: virtual topics (None: off): a topic publish is copied to the matching consumer queues (virtual.py)
        self.virtual_topics = virtual_topics
        #: virtual topic -> its consumer queues now (cleared whenever a queue comes or goes)
        self._virtual_queues: dict[str, list[str]] = {}
        #: store operations for the driver to apply (journal.py); None: the broker has no store
        self.journal = journal
        #: how many queues have a memory limit (none: sends skip the check)
        self.memory_limited = 0
        if scheduler_support:
            self.scheduler_support = True
        self._policy_for: PolicyLookup = policy_for or (lambda _dest: DestinationPolicy())
        self.queues: dict[str, Queue] = {}
        #: durable topic subscriptions by (client id, name) (durable.py); their queues are in ``queues`` too
        self.durables: dict[tuple[str, str], DurableSubscription] = {}
        #: wildcard topic subscriptions still joining the topics they read, by consumer id (binding.py)
        self.binding: dict[int, Any] = {}
        #: consumers on wildcards (``A.*``, ``A.>``) and composites (``QA,QB``): each is in every destination it
        #: reads, present and future (multi.py)
        self.subs_on_many: list[Subscription] = []
        self.topics: dict[str, Topic] = {}
        self.subscriptions: dict[int, Subscription] = {}
        self.connections: dict[int, ConnectionState] = {}
        self.transactions: dict[int, Transaction] = {}
        self.output: list[Dispatch] = []
        self.history = History(history_limit)
        #: connection, consumer and transaction ids, and the broker sequence
        self.numbering = Numbering()
        self._pull_timers: list[tuple[float, int, int]] = []
        self._scheduled: list[tuple[float, int, Message, int]] = []
        #: grows each time a timer is set (a pull timeout, a scheduled job, the expiry sweep, a throttle): while it
        #: stays the same and no timer is armed, next_deadline() is still None and the driver need not ask (an
        #: instance attribute: the driver reads it after every call)
        self.timers_set = 0
        self._dead_letters = DeadLetters(self.history)
        #: queues whose dispatch is throttled (fault injection): name -> seconds between two dispatches
        self.throttles: dict[str, float] = {}
        self._throttle_due: dict[str, float] = {}
        #: temporary destinations of every edge, owned by connections (temporary.py)
        self.temporaries = TemporaryDestinations()

    @property
    def replay(self) -> ReplayableReads:
        """Range reads, cursor acks, batch publishes and the epoch (replay_reads.py): a part over this core's queues."""
        part = self._replay
        if part is None:
            from .replay_reads import ReplayableReads

            part = self._replay = ReplayableReads(self.queues, self.clock, self.history, self.send)
        return part

    # -- output -----------------------------------------------------------------------------------------------------

    def drain(self) -> list[Dispatch]:
        """Take the dispatches produced since the last drain."""
        out = self.output
        if out:
            self.output = []
        return out

    # -- destinations -----------------------------------------------------------------------------------------------

    def queue(self, name: str) -> Queue:
        """Queue ``name``, created on first use with its destination's policy."""
        q = self.queues.get(name)
        if q is None:
            dest = Destination.queue(name)
            q = Queue(dest, self._policy_for(dest), self.usage, self.numbering.broker_sequence)
            q.journal = self.journal
            if q.policy.memory_limit:
                self.memory_limited += 1
            self.queues[name] = q
            self._virtual_queues.clear()
            if self.subs_on_many:
                self._join_subs_on_many(q)
            if self.advisory_support:
                self._advise_destination(dest, added=True)
        return q

    def _may_read(self, sub: Subscription, destination: Destination) -> bool:
        """Whether a wildcard or composite subscription may read ``destination`` (see :attr:`read_check`)."""
        check = self.read_check
        return check is None or check(sub.connection_id, destination)

    def _join_subs_on_many(self, q: Queue) -> None:
        """A new queue joins the wildcard and composite consumers that read it (ActiveMQ ``addDestination``);
        temporary queues are not in the region such consumers read."""
        if self.temporaries.is_temporary(q.destination):
            return
        for sub in self.subs_on_many:
            source = sub.source
            if (
                isinstance(source, QueueSet)
                and reads(sub.destination, q.destination.name)
                and self._may_read(sub, q.destination)
            ):
                source.queues.append(q)
                q.add_consumer(sub)

    def topic(self, name: str, destination: Destination | None = None) -> Topic:
        """Topic ``name``, made if it is new (``destination``: the publishing message's, shared rather than a copy)."""
        t = self.topics.get(name)
        if t is None:
            dest = Destination.topic(name) if destination is None else destination
            t = Topic(
                dest, self._policy_for(dest).pending_message_limit, self.numbering.broker_sequence, self.subscriptions
            )
            self.topics[name] = t
            for sub in self.subs_on_many:  # a wildcard subscriber also reads topics made after it (ActiveMQ)
                if sub.destination.kind is not QUEUE and reads(sub.destination, name) and self._may_read(sub, dest):
                    t.add_subscription(sub)
            for durable in self.durables.values():  # and so does a durable subscription to a wildcard
                if is_wildcard(durable.topic) and topic_matches(durable.topic, name):
                    t.add_durable(durable)
            if self.advisory_support:
                self._advise_destination(dest, added=True)
        return t

    def _dispatch_destination(self, destination: Destination) -> None:
        if destination.kind is QUEUE:
            q = self.queues.get(destination.name)
            if q is not None:
                if q.browse_feeds is not None:
                    self._feed_browse(q)
                if q.consumers and q.dispatchable():
                    self._dispatch_queue(q)
            if self.subs_on_many and reads_many(destination):  # a window over several queues opened: each of them
                for sub in self.subs_on_many:
                    if sub.destination == destination and isinstance(sub.source, QueueSet):
                        for q in sub.source.queues:
                            if q.consumers and q.dispatchable():
                                self._dispatch_queue(q)
                        return
        else:
            t = self.topics.get(destination.name)
            if t is not None:
                self._dispatch_topic(t)
            elif reads_many(destination):  # a wildcard or composite subscriber's window opened: the topics where
                for sub in self.subs_on_many:  # something waits for it, not every topic it reads (issue 31)
                    if sub.waiting_in and sub.destination == destination:
                        self._dispatch_waiting(sub)

    def _dispatch_waiting(self, sub: Subscription) -> None:
        """Dispatch the topics where messages wait for the wildcard or composite topic subscription ``sub``, oldest
        first, until its window is full; a topic with nothing left for it leaves the list."""
        waiting = sub.waiting_in
        assert waiting is not None
        while waiting and sub.room() > 0:  # from the front, O(1) a step (an OrderedDict: a deque with membership)
            t = next(iter(waiting))
            self._dispatch_topic(t, sub)
            if t.waiting(sub):
                return  # the window is full again, t still has more
            del waiting[t]

    def _dispatch_topic(self, t: Topic, only: Subscription | None = None) -> None:
        """Dispatch what waits on ``t`` (for ``only``, or for every subscriber); expired copies are counted."""
        expired: list[QueueEntry] = []
        if only is None:
            t.dispatch(self.clock.now(), self.output, expired)
        else:
            t.dispatch_to(only, self.clock.now(), self.output, expired)
        if expired:
            t.expired += len(expired)
            t.dequeued += len(expired)
            if self.advisory_support and not t.destination.name.startswith(ADVISORY_PREFIX):
                for entry in expired:
                    self._advise_message(EXPIRED, t.destination, entry.message)

    def _dispatch_queue(self, q: Queue) -> None:
        """Dispatch what ``q`` can; call it only when ``q.dispatchable()`` (callers on hot paths check inline)."""
        expired: list[QueueEntry] = []
        now = self.clock.now()
        start = len(self.output)
        if self.throttles and q.destination.name in self.throttles:
            self._dispatch_throttled(q, now, expired)
        else:
            q.dispatch(now, self.output, expired)
        if self.history.enabled:
            self._record_dispatches(start, now)
        for entry in expired:
            self._expire_entry(q, entry, now, pending=False)

    def _dispatch_throttled(self, q: Queue, now: float, expired: list[QueueEntry]) -> None:
        name = q.destination.name
        if name in self._throttle_due:
            return
        before = len(self.output)
        q.dispatch(now, self.output, expired, limit=1)
        if len(self.output) > before:
            self._throttle_due[name] = now + self.throttles[name]
            self.timers_set += 1

    def _record_dispatches(self, start: int, now: float) -> None:
        history = self.history
        output = self.output
        extend = history.log.extend
        for i in range(start, len(output)):
            d = output[i]
            message = d.message
            if message is not None:
                extend(
                    (
                        message.message_id,
                        now,
                        "dispatched",
                        d.consumer_id,
                        None,
                        None,
                        d.redelivery_counter,
                        None,
                        None,
                        None,
                    )
                )
        if len(history.log) > history.cap:
            history.seal()

    # -- connections ------------------------------------------------------------------------------------------------

    def add_connection(self, client_id: str | None = None) -> int:
        numbering = self.numbering
        cid = numbering.connection
        numbering.connection = cid + 1
        conn = self.connections[cid] = ConnectionState(cid, client_id)
        if self.advisory_support:
            self._advise(Destination.topic(CONNECTION), connection_info(conn.name, client_id))
        return cid

    def remove_connection(self, connection_id: int, last_delivered_seq: int | None = -1) -> None:
        """Close a connection: remove its consumers, then roll back its open transactions.

        ``last_delivered_seq`` is the highest broker sequence the connection handed to its application (ActiveMQ
        sends one such number for the whole connection); None means the transport failed, so every held message
        counts as delivered (``NOW_UNKNOWN_DELIVERED``).
        """
        conn = self.connections.get(connection_id)
        if conn is None:
            return
        seq = NOW_UNKNOWN_DELIVERED if last_delivered_seq is None else last_delivered_seq
        for consumer_id in sorted(conn.consumers):
            self.remove_consumer(connection_id, consumer_id, seq)
        for txn_id in sorted(conn.transactions):
            if txn_id in self.transactions:
                self.rollback(connection_id, txn_id)
        for producer_id in list(conn.producers):
            self.remove_producer(connection_id, producer_id)
        for destination in self.temporaries.owned_by(connection_id):
            self.delete_temporary(connection_id, destination)
        self.temporaries.connection_closed(connection_id)
        del self.connections[connection_id]
        if self.advisory_support:
            self._advise(Destination.topic(CONNECTION), remove_info(conn.name))

    def _connection(self, connection_id: int) -> ConnectionState:
        conn = self.connections.get(connection_id)
        if conn is None:
            raise IllegalStateError(f"unknown connection {connection_id}", connection_id=connection_id)
        return conn

    # -- sending ----------------------------------------------------------------------------------------------------

    def send_minted(self, connection_id: int, message: Message) -> None:
        """:meth:`send` outside a transaction of a message whose id was minted for this send, by a producer that never
        sends one twice (the in-process client's, without failover): the queue's duplicate check is not turned on
        for it (queue.py, ``held_ids``). The in-process hot path: a plain message to a queue that exists takes the
        moves of :meth:`send` and :meth:`_enqueue` in one call; anything else takes them
        (tests/core/test_send_minted.py holds the two side by side)."""
        dest = message.destination
        q = self.queues.get(dest.name) if dest.kind is QUEUE else None
        if (
            q is None
            or message.properties
            or self.memory_limited
            or self.scheduler_support
            or self.temporaries.known
            or dest.name not in ACCEPTED_SEND_NAMES
        ):
            self.send(connection_id, message, None, True)
            return
        history = self.history
        if history.enabled:
            log = history.log  # one record is RECORD_WIDTH fields at the log's end (history.py)
            log.extend((message.message_id, self.clock.now(), "sent", None, None, None, 0, None, None, None))
            if len(log) > history.cap:
                history.seal()
        entry = q.add(message, 0, 0, True)
        if message.expiration:
            self._arm_sweep()
        # most sends to a queue with consumers find every window full: no dispatch then
        consumers = q.consumers
        if consumers:
            if entry is None or q.paused or len(consumers) > 1:
                if q.dispatchable():
                    self._dispatch_queue(q)
            else:  # Queue.dispatchable, inline: a message waits (this one), one consumer; has it room?
                sub = consumers[0]
                if (sub.extension if sub.prefetch == 0 else sub.prefetch + sub.extension - len(sub.dispatched)) > 0:
                    self._dispatch_queue(q)

    def send(
        self, connection_id: int, message: Message, transaction_id: int | None = None, minted: bool = False
    ) -> None:
        """Accept a message; inside a transaction it stays invisible until commit (semantics §4). ``minted``: see
        :meth:`send_minted`.

        A queue over its memory limit refuses it with :class:`LimitExceeded` (the driver waits for space first
        when the queue's policy says so)."""
        dest = message.destination
        if dest.name not in ACCEPTED_SEND_NAMES:
            check_send_destination(dest)  # composites, wildcards, virtual topics, ...: UnsupportedFeature (issue 17)
        if self.temporaries.known:
            self.temporaries.check_send(dest)
        if message.properties:
            check_message_properties(message.properties, self.scheduler_support)  # JMSX*, AMQ_SCHEDULED_*
        if self.memory_limited and dest.kind is QUEUE:  # a queue with a limit, or the system's reached
            self._check_space(dest, message)
        if transaction_id is not None:
            txn = self._transaction(connection_id, transaction_id)
            # the destination exists from the send on, committed or not (ActiveMQ looks it up, creating it, when the
            # send arrives; recorded in the mixed corpus)
            if dest.kind is QUEUE:
                if dest.name not in self.queues:
                    self.queue(dest.name)
            elif dest.name not in self.topics and dest.name != MANAGEMENT:
                self.topic(dest.name)
            txn.sends.append(message)
            txn.reserved.append(self._reserve_sequence(dest))
            if dest.kind is QUEUE:
                self._hold_for_transaction(message, 1)
            self.history.add(message.message_id, self.clock.now(), "sent", transaction_id=transaction_id)
            return
        history = self.history
        if history.enabled:
            log = history.log  # one record is RECORD_WIDTH fields at the log's end (history.py)
            log.extend((message.message_id, self.clock.now(), "sent", None, None, None, 0, None, None, None))
            if len(log) > history.cap:
                history.seal()
        if self.scheduler_support:
            if dest.name == MANAGEMENT and dest.kind is not QUEUE:
                self._manage_scheduler(message)
                return
            if self._schedule_delayed(message):
                return
        self._enqueue(message, connection_id, minted=minted)

    def _reserve_sequence(self, dest: Destination) -> list[int]:
        """The broker sequence ids a transacted send takes on arrival: one for its destination, and one more for each
        consumer queue a virtual topic copies it to (ActiveMQ numbers each copy as it sends it, in the transaction)."""
        sequence = self.numbering.broker_sequence
        count = 1
        virtual = self.virtual_topics
        if dest.kind is not QUEUE and virtual is not None and virtual.is_virtual(dest.name):
            count += len(self._consumer_queue_names(virtual, dest.name))
        return [sequence.take() for _ in range(count)]

    def _enqueue(
        self,
        message: Message,
        connection_id: int = 0,
        redelivery_counter: int = 0,
        reserved: list[int] | None = None,
        *,
        minted: bool = False,
    ) -> None:
        """Put an accepted message in its destination. ``reserved``: the broker sequence ids a transacted send took
        when it arrived, used in order by the destinations it reaches now (ActiveMQ numbers a message when it
        arrives, committed or not). ``minted``: see :meth:`send_minted`."""
        dest = message.destination
        if dest.kind is QUEUE:
            q = self.queues.get(dest.name)
            if q is None:
                q = self.queue(dest.name)
            elif not minted and message.message_id in q.duplicate_check():
                # ActiveMQ keeps one copy per message id in a destination: the store refuses a second add
                # (KahaDB's MessageDatabase: "Duplicate message add attempt rejected") and the cursor's audit
                # (AbstractPendingMessageCursor.isDuplicate) drops it, so the duplicate is never enqueued. A JMS
                # client cannot send two messages with one JMSMessageID, so no recording shows it: this follows
                # the source. Dropping it keeps every other message's accounting whole.
                return
            q.add(message, redelivery_counter, reserved.pop(0) if reserved else 0, minted)
            if message.expiration:
                self._arm_sweep()
            # most sends to a queue with consumers find every window full: no dispatch then
            if q.consumers and q.dispatchable():
                self._dispatch_queue(q)
        else:
            if message.properties and is_retained(message):
                message, kept = retain(message)
                self.topic(dest.name, dest).retained = kept
            virtual = self.virtual_topics
            if virtual is not None and virtual.is_virtual(dest.name):
                self._copy_to_consumer_queues(virtual, message, connection_id, reserved)
            t = self.topics.get(dest.name)
            if t is None:  # a topic exists once something was published to it (ActiveMQ; recorded)
                t = self.topic(dest.name, dest)  # with the wildcard subscribers that read it
            elif self.binding:
                self._bind_before_publish(t)
            broker_seq = t.publish(message, connection_id, reserved.pop(0) if reserved else 0)
            if t.discarded:
                self._discarded(t)
            if t.durables:
                self._feed_durables(t, message, connection_id, broker_seq)
            self._dispatch_destination(dest)

    def _feed_durables(self, topic: Topic, message: Message, connection_id: int, broker_seq: int) -> None:
        """Each durable subscription that wants it gets the message, numbered as the topic numbered it (ActiveMQ's
        durable subscriptions share the topic's one message); those that are away read the topic's log, where it is
        appended once (topic_log.py)."""
        log = topic.log
        if log is not None and log.waiting:
            self._log_message(log, message, broker_seq)
        if not topic.fed:
            return
        publisher = self.connections.get(connection_id)
        client_id = None if publisher is None else publisher.client_id
        for durable in topic.fed:
            if durable.wants(message, client_id):
                q = durable.queue
                q.add(message, 0, broker_seq)
                if q.consumers and q.dispatchable():
                    self._dispatch_queue(q)

    def _consumer_queue_names(self, virtual: VirtualTopics, topic: str) -> list[str]:
        """The consumer queues of virtual topic ``topic`` that exist now (cached until a queue is made or goes)."""
        names = self._virtual_queues.get(topic)
        if names is None:
            names = self._virtual_queues[topic] = virtual.consumer_queues(topic, self.queues)
        return names

    def _copy_to_consumer_queues(
        self, virtual: VirtualTopics, message: Message, connection_id: int, reserved: list[int] | None = None
    ) -> None:
        """A virtual topic's message, copied to each consumer queue that exists now (virtual.py), before the topic
        gets it (ActiveMQ's VirtualTopicInterceptor)."""
        for name in self._consumer_queue_names(virtual, message.destination.name):
            # VirtualTopicInterceptor.copy: each copy knows the topic it was published to (``original-destination``)
            copy = attrs.evolve(message, destination=Destination(QUEUE, name), original_destination=message.destination)
            self._enqueue(copy, connection_id, 0, reserved)

    # -- acknowledgements (semantics §2) ----------------------------------------------------------------------------

    def ack(self, connection_id: int, ack: MessageAck) -> None:
        """Apply one acknowledgement (the rules per type are in acks.py), then dispatch again."""
        sub = self._subscription(connection_id, ack.consumer_id)
        txn = None
        if ack.transaction_id is not None:
            txn = self._transaction(connection_id, ack.transaction_id)
        kind = ack.ack_type
        history = self.history
        now = self.clock.now()
        if txn is not None and kind in (AckType.STANDARD, AckType.INDIVIDUAL):
            self._count_durable_transacted_ack(sub, ack)
        if kind == AckType.STANDARD:
            ack_standard(sub, ack, txn, history, now)
        elif kind == AckType.INDIVIDUAL:
            ack_individual(sub, ack, txn, history, now)
        elif kind == AckType.DELIVERED:
            ack_delivered(sub, ack, history, now)
        elif kind == AckType.POISON:
            if txn is not None:
                raise TransactionError("Poison ack cannot be transacted", ack=ack)
            poisoned = [(entry, queue_of(sub, entry)) for entry in ack_range(sub, ack)]
            ack_poison(sub, ack, history, now)
            for entry, q in poisoned:
                # a non-durable topic subscriber's poison only counts (semantics §2, POISON); no cause (a STOMP
                # NACK): ActiveMQ stamps no dlqDeliveryFailureCause on the copy
                if q is not None:
                    self._dead_letter(
                        q.policy, entry.message, ack.poison_cause, expired=False, counter=entry.redelivery_counter
                    )
        elif kind == AckType.REDELIVERED:
            ack_redelivered(sub, ack, history, now)
            self._durable_redelivered(sub, ack)
        elif kind == AckType.EXPIRED:
            owners = [(entry, queue_of(sub, entry)) for entry in ack_range(sub, ack)]
            ack_expired(sub, ack, history, now)
            for entry, q in owners:
                if q is None:
                    if isinstance(sub.source, Topic):
                        sub.source.expire_dispatched(entry)
                    continue
                if entry.message.is_expired(now):
                    self._expire_entry(q, entry, now, pending=False)
                else:
                    q.consume(entry)
        else:
            raise InvalidAcknowledge(f"ack type {kind.name} is not accepted by this broker", ack=ack)
        self._dispatch_for(sub)

    def ack_one(
        self,
        connection_id: int,
        consumer_id: int,
        message_id: str,
        *,
        refill_at_half: bool = False,
        individual: bool = False,
    ) -> bool:
        """A STANDARD ack of exactly one dispatched message, outside a transaction: what AUTO sends on every
        ``receive()``, without building a :class:`MessageAck`. False when the message is not one this connection's
        consumer holds: the caller then sends the full ack, which :meth:`ack` refuses with the right error.
        ``individual``: an INDIVIDUAL ack of that message (a STOMP client-individual ACK), the same change outside a
        transaction; the history says which.

        ``refill_at_half``: the consumer acks every message it holds without waiting for more (AUTO), so its window
        is refilled once half of it is free, in one batch, instead of one message per ack. ActiveMQ refills on the
        queue's own thread after acks, so how many acks one refill follows is its scheduler's choice too; a consumer
        that may wait for more before acking (client acks) must not use it."""
        sub = self.subscriptions.get(consumer_id)
        if sub is None or sub.connection_id != connection_id:
            return False
        entry = sub.dispatched.get(message_id)
        if entry is None:
            return False
        if self.history.enabled:  # the message's sent record came first: that append checked the log's length
            self.history.log.extend(
                (
                    message_id,
                    self.clock.now(),
                    "ack",
                    consumer_id,
                    "INDIVIDUAL" if individual else "STANDARD",
                    None,
                    entry.redelivery_counter,
                    None,
                    None,
                    None,
                )
            )
        if individual and sub.inflight_record is not None:
            # an INDIVIDUAL ack names no first message: the topic counts what was dispatched before it too, as
            # ack_individual does (a STOMP client-individual ACK may name any message it holds)
            count_before(sub.inflight_record, message_id)
        if sub.__class__ is Subscription:  # Subscription.consume, inline: once per AUTO ack
            del sub.dispatched[message_id]
            if sub.extension and sub.prefetch:
                sub.extension -= 1
            sub.source.consume(entry)
            entry.holder = None
        else:  # a wildcard or composite consumer's window (multi.py)
            sub.consume(entry)
        # at least half the window free (always, for a pull consumer): worth a refill in one batch
        if not refill_at_half or 2 * (sub.prefetch + sub.extension - len(sub.dispatched)) >= sub.prefetch:
            self._dispatch_for(sub)
        return True

    def _dispatch_for(self, sub: Subscription) -> None:
        """Dispatch what ``sub``'s window has room for, after it subscribed or acked. A topic subscriber: only its
        own copies, on its topic or on the topics where they wait for a wildcard one (no other subscriber's window
        changed; the whole topic visited every subscriber per ack, and a wildcard one's ack every wildcard
        subscriber, so a message to 2,000 of them cost 2,000 x 2,000 steps: issue 31). A queue consumer: its
        destination, as any dispatch."""
        waiting = sub.waiting_in
        if waiting is not None:  # a wildcard or composite topic subscription: the topics where copies wait for it
            if waiting:
                self._dispatch_waiting(sub)
            return
        t = sub.source
        if t.__class__ is Topic:
            if t.waiting(sub):
                self._dispatch_topic(t, sub)
            return
        self._dispatch_destination(sub.destination)

    # -- expiry and dead letters (semantics §5) ---------------------------------------------------------------------

    def _discarded(self, t: Topic) -> None:
        """Messages a slow subscriber's pending limit discarded: dead-lettered as ActiveMQ's TopicSubscription does
        (``TopicSubDiscard``; a persistent one reaches the DLQ, a non-persistent one is dropped by default)."""
        discarded, t.discarded = t.discarded, ()
        policy = self._policy_for(t.destination)
        now = self.clock.now()
        for sub, entry in discarded:
            connection = self.connections.get(sub.connection_id)
            name = connection.name if connection is not None else str(sub.connection_id)
            self.history.add(entry.message.message_id, now, "discarded", consumer_id=sub.consumer_id)
            cause = f"java.lang.Throwable: TopicSubDiscard. {name}:1:{sub.consumer_id}"
            self._dead_letter(policy, entry.message, cause, expired=False, counter=entry.redelivery_counter)

    def _expire_entry(self, q: Queue, entry: QueueEntry, now: float, *, pending: bool) -> None:
        q.expire(entry, pending=pending)
        message = entry.message
        self.history.add(message.message_id, now, "expired")
        if self.advisory_support:
            self._advise_message(EXPIRED, q.destination, message)
        self._dead_letter(q.policy, message, expiry_cause(message), expired=True, counter=entry.redelivery_counter)

    def _dead_letter(
        self, policy: DestinationPolicy, message: Message, cause: str | None, *, expired: bool, counter: int
    ) -> None:
        hook = self.dead_letter_hook
        if hook is not None and hook(message, cause, message.destination, expired, counter):
            return
        copy = self._dead_letters.route(policy, message, cause, expired=expired, now=self.clock.now())
        if copy is not None:
            self._enqueue(copy)
            if self.advisory_support:
                self._advise_message(DLQD, message.destination, message)

    @property
    def dead_letter_router(self) -> DeadLetters:
        """Where dead letters are routed, and what each dead-letter queue already holds (its audit)."""
        return self._dead_letters

    @property
    def dead_letters(self) -> list[DeadLetterRecord]:
        """Every message the broker gave up on (dead-lettered or dropped), oldest first (at most 10,000)."""
        return self._dead_letters.records

    # -- transactions (semantics §4) --------------------------------------------------------------------------------

    def begin(self, connection_id: int) -> int:
        conn = self._connection(connection_id)
        numbering = self.numbering
        txn_id = numbering.transaction
        numbering.transaction = txn_id + 1
        self.transactions[txn_id] = Transaction(txn_id, connection_id)
        conn.transactions.add(txn_id)
        return txn_id

    def _transaction(self, connection_id: int, transaction_id: int) -> Transaction:
        txn = self.transactions.get(transaction_id)
        if txn is None or txn.connection_id != connection_id:
            raise TransactionError(f"unknown transaction {transaction_id}", transaction_id=transaction_id)
        return txn

    def commit(self, connection_id: int, transaction_id: int) -> None:
        txn = self._transaction(connection_id, transaction_id)
        if self.fail_next_commit is not None:
            # fault injection: this commit fails and the transaction is rolled back, as after a store failure
            error, self.fail_next_commit = self.fail_next_commit, None
            self.rollback(connection_id, transaction_id)
            raise error
        self._end(txn)
        if self.durables:  # counted on their topic when the acks came (_count_durable_transacted_ack)
            for sub, entry in txn.acks:
                if entry.acked_in_txn == transaction_id and (topic := self._durable_ack_topic(sub, entry)) is not None:
                    topic.dequeued -= 1
        touched = txn.commit_acks(self.clock.now(), self.history)
        for message, reserved in zip(txn.sends, txn.reserved, strict=True):
            if message.destination.kind is QUEUE:
                self._hold_for_transaction(message, -1)
            if not (self.scheduler_support and self._schedule_delayed(message)):
                self._enqueue(message, connection_id, 0, reserved)
        for dest in touched:
            self._dispatch_destination(dest)

    def rollback(self, connection_id: int, transaction_id: int) -> None:
        txn = self._transaction(connection_id, transaction_id)
        self._end(txn)
        for message in txn.sends:
            if message.destination.kind is QUEUE:
                self._hold_for_transaction(message, -1)
        for dest in txn.roll_back(self.clock.now(), self.history):
            self._dispatch_destination(dest)

    def _end(self, txn: Transaction) -> None:
        del self.transactions[txn.transaction_id]
        self.connections[txn.connection_id].transactions.discard(txn.transaction_id)
