"""The in-process link: method calls on the broker driver, no sockets, no copies (ActiveMQ's ``vm://``).

It lives beside the driver, not in :mod:`minibroker.transport`, because it calls the driver: the transport package
(the links a client speaks) never imports a layer above it. Clients get one from :meth:`Broker.link`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from ._core.commands import ConsumerInfo, MessageAck
from ._core.queue import QueueStatistics
from ._core.replay import BrokerInfo, CursorAck, PublishResult, RangeRead
from .clock import Clock
from .errors import ConnectionClosed
from .message import Body, Destination, DestinationKind, Message
from .transport.base import DispatchHandler

if TYPE_CHECKING:
    from ._driver import Broker

__all__ = ["MemoryLink"]


class MemoryLink:
    """Connects one client connection to an in-process :class:`~minibroker.Broker`."""

    def __init__(self, broker: Broker) -> None:
        self.fault_tolerant = False
        #: in-process the broker applies an ack before the call returns: AUTO's "acked inside receive()" is visible
        self.coalesce_acks = False
        self.broker = broker
        self.clock: Clock = broker.clock
        self.connection_id = 0
        self._closed_handler: Callable[[BaseException | None], None] | None = None
        self._open = False

    async def open(self, client_id: str | None, user: str | None = None, password: str | None = None) -> None:
        # with credentials, the broker's security plugin checks this connection as it checks remote ones
        self.connection_id = self.broker.open_connection(client_id, user=user, password=password)
        self._open = True
        self.broker.register_dropper(self.connection_id, self.drop)
        self.broker.on_close(self._broker_stopped)

    def _broker_stopped(self) -> None:
        if self._open:
            self._open = False
            if self._closed_handler is not None:
                self._closed_handler(ConnectionClosed("the broker stopped"))

    def watch(self, probe: Callable[[], list[str]]) -> None:
        """The client reports its pending work (listeners, redeliveries) to the broker's ``settled()``."""
        self.broker.register_probe(self.connection_id, probe)

    def report_listener_error(self, consumer: str, message_id: str, body: Body, error: BaseException) -> None:
        """A message listener raised: the broker keeps it for the test (``broker.listener_errors``)."""
        self.broker.report_listener_error(consumer, message_id, body, error)

    def drop(self) -> None:
        """Break the link as a failed transport would: the broker sees an unknown last-delivered sequence."""
        if self._open:
            self._open = False
            self.broker.close_connection(self.connection_id, None)
            if self._closed_handler is not None:
                self._closed_handler(ConnectionClosed("the transport failed"))

    def _check(self) -> None:
        if not self._open:
            raise ConnectionClosed("the connection to the broker is closed")

    async def close(self, last_delivered_seq: int) -> None:
        if self._open:
            self._open = False
            self.broker.close_connection(self.connection_id, last_delivered_seq)

    def set_closed_handler(self, handler: Callable[[BaseException | None], None]) -> None:
        self._closed_handler = handler

    def set_async_error_handler(self, handler: Callable[[BaseException], None]) -> None:
        """In-process, every command is answered at once: errors are raised to the caller, never later."""

    async def add_consumer(self, info: ConsumerInfo, handler: DispatchHandler) -> int:
        self._check()
        return self.broker.add_consumer(self.connection_id, info, handler)

    async def remove_consumer(self, consumer_id: int, last_delivered_seq: int) -> None:
        if self._open:
            self.broker.remove_consumer(self.connection_id, consumer_id, last_delivered_seq)

    def send(self, message: Message, transaction_id: int | None, sync: bool) -> Awaitable[object] | None:
        if not self._open:
            self._check()
        broker = self.broker
        # the hot path: no flow control in the way, no coroutine; else the queue is over its memory limit
        if broker.send_if_admitted(self.connection_id, message, transaction_id):
            return None
        return broker.send_when_admitted(self.connection_id, message, transaction_id)

    def ack(self, ack: MessageAck) -> None:
        self._check()
        self.broker.ack(self.connection_id, ack)

    def ack_one(self, consumer_id: int, message_id: str) -> bool:
        # only AUTO acks come here: every message the consumer holds is acked as it is received
        return self._open and self.broker.ack_one(self.connection_id, consumer_id, message_id, refill_at_half=True)

    def pull(self, consumer_id: int, timeout: float) -> None:
        self._check()
        self.broker.pull(self.connection_id, consumer_id, timeout)

    def begin(self) -> int:
        self._check()
        return self.broker.begin(self.connection_id)

    async def commit(self, transaction_id: int) -> None:
        self._check()
        self.broker.commit(self.connection_id, transaction_id)

    async def rollback(self, transaction_id: int) -> None:
        self._check()
        self.broker.rollback(self.connection_id, transaction_id)

    async def browse(self, queue: str, selector: str | None = None) -> list[Message]:
        self._check()
        return self.broker.browse_page(queue, selector)

    async def create_temporary(self, kind: DestinationKind, connection_name: str) -> Destination:
        self._check()
        return self.broker.create_temporary(self.connection_id, kind, connection_name)

    async def delete_temporary(self, destination: Destination) -> None:
        self._check()
        self.broker.delete_temporary(self.connection_id, destination)

    def add_producer(self, producer_id: int, destination: Destination | None) -> None:
        self._check()
        self.broker.add_producer(self.connection_id, producer_id, destination)

    def remove_producer(self, producer_id: int) -> None:
        if self._open:
            self.broker.remove_producer(self.connection_id, producer_id)

    async def unsubscribe(self, name: str) -> None:
        self._check()
        self.broker.unsubscribe(self.connection_id, name)

    async def read_range(
        self,
        queue: str,
        from_seq: int = 0,
        to_seq: int | None = None,
        limit: int | None = None,
        epoch: str | None = None,
    ) -> RangeRead:
        self._check()
        return self.broker.read_range(queue, from_seq, to_seq, limit, epoch)

    async def ack_below(self, queue: str, cursor: str, seq: int, epoch: str | None = None) -> CursorAck:
        self._check()
        return self.broker.ack_below(queue, cursor, seq, epoch)

    async def broker_info(self, queues: Sequence[str] | None = None, cursor: str | None = None) -> BrokerInfo:
        self._check()
        return self.broker.broker_info(queues, cursor)

    async def publish(self, messages: Sequence[Message], dedupe: bool = False) -> PublishResult:
        self._check()
        return self.broker.publish(self.connection_id, messages, dedupe)

    async def queue_statistics(self, queue: str) -> QueueStatistics | None:
        return self.broker.queue_statistics(queue)
