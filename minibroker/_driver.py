"""The asyncio side of the broker: owns the core, the clock's timer, and the routing of dispatches to consumers.

The core is synchronous and pure; this driver is the only thing that turns its deadlines into timers and its output
into calls on consumers (in-process) or writes on sockets (the TCP server registers routes the same way).
"""

from __future__ import annotations

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
from .errors import BrokerClosed
from .message import Destination, Message

__all__ = ["Broker", "BrokerPlugin", "BrokerStatistics", "QueueView"]

DispatchRoute = Callable[[Dispatch], None]


class BrokerPlugin(Protocol):
    """An extension installed when the broker is created (as ActiveMQ's ``BrokerPlugin.installPlugin``)."""

    def install(self, broker: Broker) -> None: ...


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
