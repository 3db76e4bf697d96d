"""The asyncio side of the broker: owns the core, the clock's timer, and the routing of dispatches to consumers.

The core is synchronous and pure; this driver is the only thing that turns its deadlines into timers and its output
into calls on consumers (in-process) or writes on sockets (the TCP server registers routes the same way).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

import attrs

from ._core.broker import BrokerCore
from ._core.commands import ConsumerInfo, MessageAck
from ._core.effects import Dispatch
from ._core.history import HistoryRecord
from ._core.journal import Journal
from ._core.policy import DestinationPolicy
from ._core.queue import QueueStatistics
from ._core.replay import BrokerInfo, CursorAck, EpochSource, PublishResult, RangeRead
from ._flow import SpaceWaiters
from .clock import Clock, ManualClock, RealClock, TimerHandle, settle
from .destination_map import DestinationMap
from .errors import (
    BrokerClosed,
    ConnectionClosed,
    InvalidConfiguration,
    LimitExceeded,
    SettleTimeout,
    TransactionRolledBack,
)
from .message import Destination, DestinationKind, Message

if TYPE_CHECKING:  # the store module (sqlite3, the codec) is imported only by brokers that have a data_dir
    from .store import MessageStore

__all__ = ["Broker", "BrokerPlugin", "BrokerStatistics", "ListenerFailure", "QueueView"]

DispatchRoute = Callable[[Dispatch], None]


class BrokerPlugin(Protocol):
    """An extension installed when the broker is created (as ActiveMQ's ``BrokerPlugin.installPlugin``)."""

    def install(self, broker: Broker) -> None: ...


class SecurityPolicy(Protocol):
    """What a security plugin (``minibroker.plugins.auth``) gives the broker as ``broker.security``.

    ``authenticate`` returns the connection's principal or raises :class:`~minibroker.errors.AccessDenied`;
    ``authorize`` raises it when ``principal`` may not do ``action`` ("read", "write" or "admin") on
    ``destination``; ``exists`` False means the action would create the destination (ActiveMQ asks "admin" for that).
    """

    def authenticate(self, user: str | None, password: str | None) -> object: ...

    def authorize(self, principal: object, action: str, destination: Destination, exists: bool) -> None: ...


@attrs.frozen(slots=True)
class ListenerFailure:
    """An exception a message listener raised: which consumer, which message, what."""

    consumer: str
    message_id: str
    body: str | bytes
    error: BaseException


def _pending_report(pending: list[str], timeout: float) -> str:
    lines = "\n".join(f"  - {item}" for item in pending)
    return f"the broker did not settle within {timeout} s; still pending:\n{lines}"


@attrs.frozen(slots=True)
class BrokerStatistics:
    connections: int
    consumers: int
    queues: int
    topics: int
    transactions: int


class QueueView:
    """A live, read-only look at one queue: ``size`` counts unacked messages, in flight included."""

    __slots__ = ("_broker", "name")

    def __init__(self, broker: Broker, name: str) -> None:
        self._broker = broker
        self.name = name

    def _stats(self) -> QueueStatistics:
        q = self._broker.core.queues.get(self.name)
        if q is None:
            return QueueStatistics(self.name, 0, 0, 0, 0, 0, 0, 0)
        return q.statistics()

    @property
    def exists(self) -> bool:
        return self.name in self._broker.core.queues

    @property
    def size(self) -> int:
        return self._stats().size

    @property
    def inflight(self) -> int:
        return self._stats().inflight

    @property
    def enqueued(self) -> int:
        return self._stats().enqueued

    @property
    def dequeued(self) -> int:
        return self._stats().dequeued

    @property
    def expired(self) -> int:
        return self._stats().expired

    @property
    def consumers(self) -> int:
        return self._stats().consumers

    def statistics(self) -> QueueStatistics:
        return self._stats()

    def browse(self) -> list[Message]:
        """The messages not yet acked, oldest first, without consuming them."""
        return self._broker.core.browse(self.name)

    def purge(self) -> int:
        count = self._broker.core.purge(self.name)
        self._broker._flush()
        return count

    @property
    def memory_usage(self) -> int:
        """Bytes held by the queue's unacked messages (``Message.size_estimate()``), as its memory limit counts."""
        q = self._broker.core.queues.get(self.name)
        return 0 if q is None else q.memory

    def __repr__(self) -> str:
        s = self._stats()
        return f"<QueueView {self.name} size={s.size} inflight={s.inflight}>"


class Broker:
    """An in-process broker. ``async with Broker() as broker:`` starts it; connect clients with ``connect(broker)``.

    ``clock`` decides how time passes (a :class:`~minibroker.ManualClock` for virtual time); ``policies`` maps a
    destination to its :class:`DestinationPolicy` (prioritised messages, dead-letter strategy): a mapping keyed by
    ActiveMQ destination wildcards (``">"`` for every queue, ``"orders.>"``), or a function of the destination.
    ``scheduler_support`` enables delayed delivery (``AMQ_SCHEDULED_DELAY``) and is required by the broker
    redelivery plugin, as in ActiveMQ; ``plugins`` are installed in order.

    Persistence: with ``data_dir`` (or a ``store``, see :mod:`minibroker.store`), persistent messages sent to queues
    are stored (SQLite in ``data_dir``) before the send is answered, removed when acked, and loaded again when a
    broker starts on the same directory or :meth:`restart` s; without, everything stays in memory.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        policies: Mapping[str, DestinationPolicy] | Callable[[Destination], DestinationPolicy] | None = None,
        history_limit: int = 10_000,
        name: str = "minibroker",
        scheduler_support: bool = False,
        plugins: Sequence[BrokerPlugin] = (),
        data_dir: str | os.PathLike[str] | None = None,
        store: MessageStore | None = None,
    ) -> None:
        if data_dir is not None and store is not None:
            raise InvalidConfiguration("give a data_dir or a store, not both", data_dir=str(data_dir))
        self.clock: Clock = clock if clock is not None else RealClock()
        self.name = name
        policy_for: Callable[[Destination], DestinationPolicy] | None
        if policies is None:
            policy_for = None
        elif callable(policies):
            policy_for = policies
        else:
            table = DestinationMap(DestinationPolicy(), policies)

            def policy_for(dest: Destination) -> DestinationPolicy:
                return table.get(str(dest))

        self.scheduler_support = scheduler_support
        #: where persistent messages are kept (None: memory only); the core journals into ``_journal``
        if data_dir is not None:
            from .store import SqliteStore

            store = SqliteStore(data_dir)
        self.store: MessageStore | None = store
        if store is not None:
            # what the store keeps survives a restart, and so does the epoch that says so
            self.epoch_source = store.epoch
        self._journal: Journal | None = [] if self.store is not None else None
        self._store_open = self.store is not None
        self.core = BrokerCore(self.clock, policy_for=policy_for, history_limit=history_limit,
                               scheduler_support=scheduler_support, journal=self._journal)
        self._load_store()
        #: set by a security plugin (``minibroker.plugins.auth``); connections opened with credentials (every
        #: remote one) get a principal, and their consumers, sends and admin requests are checked
        self.security: SecurityPolicy | None = None
        self._principals: dict[int, object] = {}
        self._space_waiters = SpaceWaiters(self.clock)
        self._routes: dict[int, DispatchRoute] = {}
        self._timer: TimerHandle | None = None
        self._timer_at: float | None = None
        self._started = False
        self._closed = False
        self._close_hooks: list[Callable[[], None]] = []
        #: how to break each client connection's transport, registered by the transports (fault injection)
        self._droppers: dict[int, Callable[[], None]] = {}
        #: in-process clients say what work they still have (listeners to run, redeliveries waiting), for settled()
        self._probes: dict[int, Callable[[], list[str]]] = {}
        #: exceptions raised by message listeners of in-process clients, for tests to inspect
        self.listener_errors: list[ListenerFailure] = []
        self.instance_id = id(self)
        self.plugins = tuple(plugins)
        for plugin in self.plugins:
            plugin.install(self)

    # -- lifecycle --------------------------------------------------------------------------------------------------

    async def start(self) -> Broker:
        self._started = True
        if self.store is not None:
            self._flush()  # timers for what came back from the store (scheduled messages, expiry)
        return self

    async def stop(self) -> None:
        if self._closed:
            return
        self._closed = True
        for hook in list(self._close_hooks):
            hook()
        self._close_hooks.clear()
        self._space_waiters.fail_all(BrokerClosed("the broker stopped"))
        if self.store is not None and self._store_open:
            self._persist()
            self._store_open = False
            self.store.close()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if isinstance(self.clock, ManualClock):
            self.clock.stop()

    async def __aenter__(self) -> Broker:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    @property
    def closed(self) -> bool:
        return self._closed

    def on_close(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` when the broker stops (transports use it to drop their clients)."""
        self._close_hooks.append(hook)

    def register_probe(self, connection_id: int, probe: Callable[[], list[str]]) -> None:
        """An in-process client reports its pending work through ``probe`` (see :meth:`settled`)."""
        self._probes[connection_id] = probe

    def report_listener_error(self, consumer: str, message_id: str, body: str | bytes, error: BaseException) -> None:
        self.listener_errors.append(ListenerFailure(consumer, message_id, body, error))

    def pending_work(self) -> list[str]:
        """What the broker and its in-process clients still have to do now or on a timer: a list of descriptions."""
        core = self.core
        pending: list[str] = []
        for when, _, message, counter in sorted(core._scheduled):
            pending.append(f"broker: {message.message_id} scheduled for {message.destination} at "
                           f"+{when - self.clock.now():.3f}s (redelivery counter {counter})")
        for name, q in sorted(core.queues.items()):
            if q.consumers and q.dispatchable():
                pending.append(f"broker: queue {name} has {q.pending_count} message(s) ready to dispatch")
        if core._throttle_due:
            pending.extend(f"broker: queue {name} throttled" for name in sorted(core._throttle_due))
        for probe in list(self._probes.values()):
            pending.extend(probe())
        return pending

    async def settled(self, timeout: float = 10.0) -> None:
        """Return once nothing is left to do: no listener running or with messages to process, no redelivery
        waiting (client or broker side), nothing dispatchable.

        Messages prefetched by a consumer that only ``receive()`` s are not work: only the test can take them.
        With a :class:`ManualClock`, waiting timers are run by moving virtual time forward (at most ``timeout``
        virtual seconds); with real time this waits up to ``timeout`` seconds. On expiry, raises
        :class:`~minibroker.errors.SettleTimeout` listing what is still pending.
        """
        clock = self.clock
        start = clock.now()
        real_deadline = time.monotonic() + timeout
        while True:
            await settle()
            pending = self.pending_work()
            if not pending:
                return
            if isinstance(clock, ManualClock):
                deadline = clock.next_deadline()
                if deadline is None or deadline - start > timeout:
                    raise SettleTimeout(_pending_report(pending, timeout), pending=pending)
                await clock.advance_to(deadline)
            else:
                if time.monotonic() >= real_deadline:
                    raise SettleTimeout(_pending_report(pending, timeout), pending=pending)
                await asyncio.sleep(0.002)

    # -- fault injection --------------------------------------------------------------------------------------------

    def fail_next_commit(self, error: Exception | None = None) -> None:
        """The next commit on this broker fails: its transaction is rolled back and ``error`` (by default a
        :class:`~minibroker.errors.TransactionRolledBack`) reaches the committing client."""
        self.core.fail_next_commit = error or TransactionRolledBack("commit failed (injected fault)")

    def pause(self, queue: str) -> None:
        """Stop dispatching from ``queue``: messages pile up until :meth:`resume`."""
        self.core.pause(queue)
        self._flush()

    def resume(self, queue: str) -> None:
        self.core.resume(queue)
        self._flush()

    def throttle(self, queue: str, interval: float | None) -> None:
        """Slow ``queue`` down to one dispatch every ``interval`` seconds on the broker's clock (None: full speed)."""
        self.core.throttle(queue, interval)
        self._flush()

    async def restart(self) -> None:
        """Stop and start again, as a process restart would: every connection is dropped (fault-tolerant clients
        reconnect). Without a store every message is lost, as with a non-persistent ActiveMQ; with one
        (``data_dir``), the persistent messages of queues come back from it, in order, with their redelivery
        counters (raised for those the dropped connections held)."""
        self.drop_connections()
        if self.store is not None:
            for connection_id in list(self.core.connections):
                self.core.remove_connection(connection_id, None)
            self._persist()
        self._principals.clear()
        policy_for = self.core._policy_for
        self.core = BrokerCore(self.clock, policy_for=policy_for, history_limit=self.core.history.limit,
                               scheduler_support=self.scheduler_support, journal=self._journal)
        self._load_store()
        for plugin in self.plugins:
            plugin.install(self)
        self._arm(self.core.next_deadline())
        await settle()

    def register_dropper(self, connection_id: int, drop: Callable[[], None]) -> None:
        """A transport says how to break its connection, for :meth:`drop_connections`."""
        self._droppers[connection_id] = drop

    def drop_connections(self, connection_id: int | None = None) -> int:
        """Break client transports now, as a network failure would (fault injection); returns how many.

        The broker releases what those connections held (redelivered, counter +1); fault-tolerant clients reconnect.
        """
        ids = list(self._droppers) if connection_id is None else [connection_id]
        dropped = 0
        for cid in ids:
            drop = self._droppers.pop(cid, None)
            if drop is not None:
                drop()
                dropped += 1
        return dropped

    def _check_open(self) -> None:
        if self._closed:
            raise BrokerClosed("the broker is stopped")

    # -- views ------------------------------------------------------------------------------------------------------

    def queue(self, name: str) -> QueueView:
        return QueueView(self, name)

    def queue_names(self) -> list[str]:
        return sorted(self.core.queues)

    def history(self, message_id: str) -> tuple[HistoryRecord, ...]:
        """Everything the broker did with one message: dispatches, acks (with their type), releases, dead letters."""
        return self.core.history.of(message_id)

    def statistics(self) -> BrokerStatistics:
        core = self.core
        return BrokerStatistics(len(core.connections), len(core.subscriptions), len(core.queues), len(core.topics),
                                len(core.transactions))

    async def settle(self) -> None:
        """Let every task that can run now, run (clients, listeners), without moving the clock."""
        await settle()

    # -- the driver: operations used by transports -------------------------------------------------------------------

    def _load_store(self) -> None:
        if self.store is not None:
            state = self.store.load()
            self.core.restore(state.messages, state.scheduled)

    def _persist(self) -> None:
        """Apply the journal to the store: one batch (one transaction) per driver call."""
        journal = self._journal
        if journal:
            batch = journal[:]
            journal.clear()
            if self.store is not None and self._store_open:
                self.store.apply(batch)

    def _flush(self) -> None:
        if self._journal:
            self._persist()
        if self._space_waiters.waiting:
            self._space_waiters.wake(self.core.has_space)
        core = self.core
        out = core.output
        if out:
            core.output = []
            routes = self._routes
            for dispatch in out:
                route = routes.get(dispatch.consumer_id)
                if route is not None:
                    route(dispatch)
        deadline = core.next_deadline()
        if deadline != self._timer_at:
            self._arm(deadline)

    def _arm(self, deadline: float | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None and not self._closed:
            self._timer = self.clock.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        if self._closed:
            return
        self.core.tick()
        self._flush()

    def open_connection(self, client_id: str | None = None, *, user: str | None = None,
                        password: str | None = None, remote: bool = False) -> int:
        """A new broker connection. With a security plugin, a ``remote`` connection (TCP, STOMP) or one that gives
        credentials is authenticated (:class:`~minibroker.errors.AccessDenied` when refused) and checked from then
        on; an in-process connection without credentials is trusted."""
        self._check_open()
        principal = None
        if self.security is not None and (remote or user is not None or password is not None):
            principal = self.security.authenticate(user, password)
        connection_id = self.core.add_connection(client_id)
        if principal is not None:
            self._principals[connection_id] = principal
        return connection_id

    def authorize(self, connection_id: int, action: str, destination: Destination) -> None:
        """Raise :class:`~minibroker.errors.AccessDenied` unless the connection may do ``action`` ("read", "write",
        "admin") on ``destination``; connections without a principal may do anything."""
        if self._principals:
            principal = self._principals.get(connection_id)
            if principal is not None and self.security is not None:
                core = self.core
                exists = (destination.name in core.queues if destination.kind is DestinationKind.QUEUE
                          else destination.name in core.topics)
                self.security.authorize(principal, action, destination, exists)

    def principal(self, connection_id: int) -> object | None:
        """The principal a security plugin gave the connection (None: unchecked)."""
        return self._principals.get(connection_id)

    def close_connection(self, connection_id: int, last_delivered_seq: int | None = -1) -> None:
        self._droppers.pop(connection_id, None)
        self._probes.pop(connection_id, None)
        self._principals.pop(connection_id, None)
        consumers = list(self.core.connections.get(connection_id, _NO_CONN).consumers)
        self.core.remove_connection(connection_id, last_delivered_seq)
        for consumer_id in consumers:
            self._routes.pop(consumer_id, None)
        self._flush()

    def add_consumer(self, connection_id: int, info: ConsumerInfo, route: DispatchRoute) -> int:
        self._check_open()
        if self._principals:
            self.authorize(connection_id, "read", info.destination)
        consumer_id = self.core.add_consumer(connection_id, info)
        # The backlog dispatched to the new consumer waits in the core's output until this flush.
        self._routes[consumer_id] = route
        self._flush()
        return consumer_id

    def remove_consumer(self, connection_id: int, consumer_id: int, last_delivered_seq: int = -1) -> None:
        self.core.remove_consumer(connection_id, consumer_id, last_delivered_seq)
        self._routes.pop(consumer_id, None)
        self._flush()

    def send(self, connection_id: int, message: Message, transaction_id: int | None = None) -> None:
        if self._closed:
            self._check_open()
        if self._principals:
            self.authorize(connection_id, "write", message.destination)
        self.core.send(connection_id, message, transaction_id)
        self._flush()

    def must_wait(self, destination: Destination) -> bool:
        """True when a send to ``destination`` has to wait for room first (its queue is over its memory limit and
        its policy makes producers wait); transports then ``await wait_for_space()`` before :meth:`send`. A policy
        with ``send_fail_if_no_space`` never waits: the send itself fails."""
        core = self.core
        if not core.memory_limited or destination.kind is not DestinationKind.QUEUE or core.has_space(destination.name):
            return False
        return not core.queues[destination.name].policy.send_fail_if_no_space

    async def wait_for_space(self, destination: Destination) -> None:
        """Wait until ``destination``'s queue is under its memory limit; after the policy's
        ``send_fail_if_no_space_after_timeout`` (broker clock), :class:`~minibroker.errors.LimitExceeded`."""
        start = self.clock.now()
        while not self._closed and not self.core.has_space(destination.name):
            q = self.core.queues[destination.name]
            timeout = q.policy.send_fail_if_no_space_after_timeout
            if q.policy.send_fail_if_no_space:
                return  # the send fails by itself
            deadline = None if timeout is None else start + timeout
            if not await self._space_waiters.wait(destination.name, deadline):
                raise LimitExceeded(
                    f"Usage Manager Memory Limit reached on {destination}: no space freed within {timeout} s "
                    f"(memory limit {q.policy.memory_limit} bytes, {q.memory} held)",
                    destination=str(destination), limit=q.policy.memory_limit, timeout=timeout)
        self._check_open()

    @property
    def waiting_producers(self) -> int:
        """Sends waiting for room in a queue over its memory limit."""
        return len(self._space_waiters)

    def purge(self, queue: str, connection_id: int | None = None) -> int:
        """Remove every message of ``queue`` (in flight ones included); with a connection, it needs "admin"."""
        if connection_id is not None and self._principals:
            self.authorize(connection_id, "admin", Destination.queue(queue))
        count = self.core.purge(queue)
        self._flush()
        return count

    def ack(self, connection_id: int, ack: MessageAck) -> None:
        self.core.ack(connection_id, ack)
        self._flush()

    def ack_one(self, connection_id: int, consumer_id: int, message_id: str) -> bool:
        """The AUTO ack of one message (see :meth:`BrokerCore.ack_one`); False: send a full ack instead."""
        if self.core.ack_one(connection_id, consumer_id, message_id):
            self._flush()
            return True
        return False

    def pull(self, connection_id: int, consumer_id: int, timeout: float) -> None:
        self.core.pull(connection_id, consumer_id, timeout)
        self._flush()

    def begin(self, connection_id: int) -> int:
        return self.core.begin(connection_id)

    def commit(self, connection_id: int, transaction_id: int) -> None:
        self.core.commit(connection_id, transaction_id)
        self._flush()

    def rollback(self, connection_id: int, transaction_id: int) -> None:
        self.core.rollback(connection_id, transaction_id)
        self._flush()


    # -- replayable reads: sequence ranges, cursor acks, the epoch (minibroker._core.replay) --------------------------

    #: makes the epoch of each broker state: drawn at the first cursor call, and again after :meth:`restart` (which
    #: starts a new state). Must return a new value on every call; None: random (16 hex digits). Set it before use.
    epoch_source: EpochSource | None = None

    @property
    def epoch(self) -> str:
        """This broker state's epoch: it changes on :meth:`restart` when every message and sequence number is lost
        (no store); with a store, which keeps them, it stays the same."""
        return self.core.cursors(self.epoch_source).epoch

    def broker_info(self, queues: Iterable[str] | None = None, cursor: str | None = None) -> BrokerInfo:
        """The epoch, the name, and the positions of ``queues`` (None: every queue), with ``cursor``'s floors."""
        self.core.cursors(self.epoch_source)
        return BrokerInfo(self.epoch, self.name, self.core.queue_positions(queues, cursor))

    def read_range(self, queue: str, from_seq: int = 0, to_seq: int | None = None, limit: int | None = None,
                   epoch: str | None = None) -> RangeRead:
        """The messages of ``queue`` not yet acked with ``from_seq <= seq < to_seq`` (None: all), oldest first, at
        most ``limit``, without consuming them; ``epoch`` (optional) must be the broker's."""
        core = self.core
        book = core.cursors(self.epoch_source)
        entries = core.read_range(queue, from_seq, to_seq, limit, epoch)
        q = core.queues.get(queue)
        return RangeRead(book.epoch, queue, 0 if q is None else q.next_seq, tuple(entries))

    def ack_below(self, queue: str, cursor: str, seq: int, epoch: str | None = None) -> CursorAck:
        """Consume every message of ``queue`` with a sequence number below ``seq`` on behalf of cursor ``cursor``
        (cumulative, idempotent, tied to no connection; messages held by consumers are left to them)."""
        self.core.cursors(self.epoch_source)
        result = self.core.ack_below(queue, cursor, seq, epoch)
        self._flush()
        return result

    def publish(self, connection_id: int, messages: Iterable[Message], dedupe: bool = False) -> PublishResult:
        """Send a batch of messages (outside transactions); ``dedupe`` drops ids the destination saw on this path
        before (its duplicate check, switched on by the first such publish). ``connection_id`` 0: no connection."""
        self._check_open()
        self.core.cursors(self.epoch_source)
        if self._principals:
            messages = list(messages)
            for destination in dict.fromkeys(m.destination for m in messages):
                self.authorize(connection_id, "write", destination)
        try:
            return self.core.publish(connection_id, messages, dedupe)
        finally:
            self._flush()

    def enable_duplicate_check(self, queue: str | Destination, window: int | None = None) -> None:
        """Drop batch-published messages whose id ``queue`` has seen (its last ``window`` ids, default 500,000)."""
        self.core.cursors(self.epoch_source)
        self.core.enable_duplicate_check(Destination.parse(queue), window)

    def fail_next_publish(self, after: int = 0, error: Exception | None = None) -> None:
        """Fault injection: the next batch publish takes ``after`` messages, then fails with ``error`` (by default
        :class:`~minibroker.errors.ConnectionClosed`), as a connection lost in the middle of a batch."""
        self.core.cursors(self.epoch_source).fail_publish = (
            after, error or ConnectionClosed("the batch publish failed (injected fault)"))

class _NoConnection:
    consumers: frozenset[int] = frozenset()


_NO_CONN = _NoConnection()
