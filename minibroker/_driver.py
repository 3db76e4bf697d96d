"""The asyncio side of the broker: owns the core, the clock's timer, and the routing of dispatches to consumers.

The core is synchronous and pure; this driver is the only thing that turns its deadlines into timers and its output
into calls on consumers (in-process) or writes on sockets (the TCP server registers routes the same way).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Protocol

import attrs

from ._core.broker import BrokerCore
from ._core.commands import ConsumerInfo, MessageAck
from ._core.effects import Dispatch
from ._core.history import HistoryRecord
from ._core.queue import DestinationPolicy, QueueStatistics
from .clock import Clock, ManualClock, RealClock, TimerHandle, settle
from .destination_map import DestinationMap
from .errors import BrokerClosed, SettleTimeout, TransactionRolledBack
from .message import Destination, Message

__all__ = ["Broker", "BrokerPlugin", "BrokerStatistics", "ListenerFailure", "QueueView"]

DispatchRoute = Callable[[Dispatch], None]


class BrokerPlugin(Protocol):
    """An extension installed when the broker is created (as ActiveMQ's ``BrokerPlugin.installPlugin``)."""

    def install(self, broker: Broker) -> None: ...


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
        return self._broker.core.purge(self.name)

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
    ) -> None:
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
        self.core = BrokerCore(self.clock, policy_for=policy_for, history_limit=history_limit,
                               scheduler_support=scheduler_support)
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
        return self

    async def stop(self) -> None:
        if self._closed:
            return
        self._closed = True
        for hook in list(self._close_hooks):
            hook()
        self._close_hooks.clear()
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
            if q.has_pending() and q.consumers and not q.paused and any(s.room() > 0 for s in q.consumers):
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
        reconnect) and, this broker keeping everything in memory, every message is lost, as with a non-persistent
        ActiveMQ."""
        self.drop_connections()
        policy_for = self.core._policy_for
        self.core = BrokerCore(self.clock, policy_for=policy_for, history_limit=self.core.history.limit,
                               scheduler_support=self.scheduler_support)
        for plugin in self.plugins:
            plugin.install(self)
        self._arm(None)
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

    def _flush(self) -> None:
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

    def open_connection(self, client_id: str | None = None) -> int:
        self._check_open()
        return self.core.add_connection(client_id)

    def close_connection(self, connection_id: int, last_delivered_seq: int | None = -1) -> None:
        self._droppers.pop(connection_id, None)
        self._probes.pop(connection_id, None)
        consumers = list(self.core.connections.get(connection_id, _NO_CONN).consumers)
        self.core.remove_connection(connection_id, last_delivered_seq)
        for consumer_id in consumers:
            self._routes.pop(consumer_id, None)
        self._flush()

    def add_consumer(self, connection_id: int, info: ConsumerInfo, route: DispatchRoute) -> int:
        self._check_open()
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
        self._check_open()
        self.core.send(connection_id, message, transaction_id)
        self._flush()

    def ack(self, connection_id: int, ack: MessageAck) -> None:
        self.core.ack(connection_id, ack)
        self._flush()

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


class _NoConnection:
    consumers: frozenset[int] = frozenset()


_NO_CONN = _NoConnection()
