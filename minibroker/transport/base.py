"""The link between a client connection and a broker: the one interface every transport implements.

The client speaks only to a :class:`BrokerLink`. Fire-and-forget operations (acks, pulls) are plain methods so the
hot path needs no task switch; operations that need the broker's answer are coroutines. Dispatches flow the other
way through the handler the client installs.

This protocol is the public transport interface; the data it carries (``Message``, ``ConsumerInfo``,
``MessageAck``, ``Dispatch``, the range-read results) are the types :mod:`minibroker` exports. The in-process link
(:class:`minibroker.MemoryLink`, from ``Broker.link()``) lives beside the driver, since it calls it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from .._core.commands import ConsumerInfo, MessageAck
from .._core.effects import Dispatch
from .._core.queue import QueueStatistics
from .._core.replay import BrokerInfo, CursorAck, PublishResult, RangeRead
from ..clock import Clock
from ..message import Destination, DestinationKind, Message

__all__ = ["BrokerLink", "DispatchHandler"]

DispatchHandler = Callable[[Dispatch], None]


class BrokerLink(Protocol):
    #: the clock the client should use for its own timeouts and redelivery delays
    clock: Clock
    #: True when the transport reconnects on failure (ActiveMQ ``failover:``): duplicate suppression applies
    fault_tolerant: bool
    #: True when an ack reaches the broker only after the call returns anyway (a network link): the client may then
    #: fold consecutive AUTO acks into one range ack per loop iteration, which no one can tell apart
    coalesce_acks: bool

    async def open(self, client_id: str | None, user: str | None = None, password: str | None = None) -> None: ...

    async def close(self, last_delivered_seq: int) -> None: ...

    def set_closed_handler(self, handler: Callable[[BaseException | None], None]) -> None: ...

    def set_async_error_handler(self, handler: Callable[[BaseException], None]) -> None:
        """Where refusals of fire-and-forget commands (acks, pulls) go when they arrive after the call returned."""
        ...

    async def add_consumer(self, info: ConsumerInfo, handler: DispatchHandler) -> int: ...

    async def remove_consumer(self, consumer_id: int, last_delivered_seq: int) -> None: ...

    def send(self, message: Message, transaction_id: int | None, sync: bool) -> Awaitable[object] | None:
        """Send ``message``: None when that is done (the usual case, a producer's hot path: no coroutine to build
        and await), else an awaitable to await: the broker's receipt of a ``sync`` send, a full write buffer, a
        producer held back by flow control. Errors found at once are raised from the call."""
        ...

    def ack(self, ack: MessageAck) -> None: ...

    def ack_one(self, consumer_id: int, message_id: str) -> bool:
        """A STANDARD ack of exactly one message, applied before the call returns, if the link can (in-process);
        False: nothing was sent, send a full :meth:`ack` instead."""
        ...

    def pull(self, consumer_id: int, timeout: float) -> None: ...

    def begin(self) -> int: ...

    async def commit(self, transaction_id: int) -> None: ...

    async def rollback(self, transaction_id: int) -> None: ...

    async def browse(self, queue: str, selector: str | None = None) -> list[Message]: ...

    async def create_temporary(self, kind: DestinationKind, connection_name: str) -> Destination:
        """A temporary queue or topic owned by this connection, named ``<connection_name>:<n>`` (ActiveMQ's names)."""
        ...

    async def delete_temporary(self, destination: Destination) -> None: ...

    def add_producer(self, producer_id: int, destination: Destination | None) -> None:
        """A producer of this connection comes (None: anonymous): counted on its destination and advised."""
        ...

    def remove_producer(self, producer_id: int) -> None:
        """The producer goes (nothing, when the connection is closed already)."""
        ...

    async def unsubscribe(self, name: str) -> None:
        """Remove this connection's (client id's) durable subscription ``name``."""
        ...

    async def queue_statistics(self, queue: str) -> QueueStatistics | None: ...

    async def purge(self, queue: str, selector: str | None = None) -> int:
        """Remove every message of ``queue``, in flight ones included (needs the right to administer it); with a
        ``selector``, the waiting messages it matches."""
        ...

    # replayable reads (minibroker._core.replay): sequence ranges, cursor acks, the epoch, batch publish

    async def read_range(
        self,
        queue: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> RangeRead: ...

    async def ack_below(self, queue: str, cursor: str, seq: int, epoch: str | None = None) -> CursorAck: ...

    async def broker_info(self, queues: Sequence[str] | None = None, cursor: str | None = None) -> BrokerInfo: ...

    async def publish(self, messages: Sequence[Message], dedupe: bool = False) -> PublishResult: ...
