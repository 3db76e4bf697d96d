"""The link between a client connection and a broker: the one interface every transport implements.

The client speaks only to a :class:`BrokerLink`. Fire-and-forget operations (sends, acks, pulls, producers) are plain
methods so the hot path needs no task switch; every operation that needs the broker's answer is a request value
(:mod:`~minibroker.transport.commands`) given to :meth:`BrokerLink.request`. Dispatches flow the other way through
the handler the client installs.

This protocol is the public transport interface; the data it carries (``Message``, ``ConsumerInfo``,
``MessageAck``, ``Dispatch``, the range-read results) are the types :mod:`minibroker` exports. The in-process link
(:class:`minibroker.MemoryLink`, from ``Broker.link()``) lives beside the driver, since it calls it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from .._core.commands import ConsumerInfo, MessageAck
from .._core.effects import Dispatch
from ..clock import Clock
from ..message import Destination, Message
from .commands import Command

__all__ = ["BrokerLink", "DispatchHandler"]

DispatchHandler = Callable[[Dispatch], None]
R = TypeVar("R")


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

    def add_producer(self, producer_id: int, destination: Destination | None) -> None:
        """A producer of this connection comes (None: anonymous): counted on its destination and advised."""
        ...

    def remove_producer(self, producer_id: int) -> None:
        """The producer goes (nothing, when the connection is closed already)."""
        ...

    async def request(self, command: Command[R]) -> R:
        """Every other operation: a request value (:mod:`minibroker.transport.commands`) and the broker's answer.
        A :class:`~minibroker.transport.commands.RemoveConsumer` on a closed link does nothing (the consumer went
        with the connection)."""
        ...
