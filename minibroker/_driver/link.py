"""The in-process link: method calls on the client's :class:`~minibroker.BrokerConnection`, no sockets, no copies
(ActiveMQ's ``vm://``).

It lives beside the driver, not in :mod:`minibroker.transport`, because it calls the driver: the transport package
(the links a client speaks) never imports a layer above it. Clients get one from :meth:`Broker.link`. It keeps no
logic of its own: every operation is the connection's (which authorizes it), awaited where the client's link
interface is a coroutine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from .._core.commands import ConsumerInfo, MessageAck
from ..clock import Clock
from ..errors import ConnectionClosed
from ..message import Body, Destination, Message
from ..transport.base import DispatchHandler
from ..transport.commands import Command, RemoveConsumer

if TYPE_CHECKING:
    from .broker import Broker
    from .connection import BrokerConnection

__all__ = ["MemoryLink"]

R = TypeVar("R")


class MemoryLink:
    """Connects one client connection to an in-process :class:`~minibroker.Broker`."""

    def __init__(self, broker: Broker) -> None:
        self.fault_tolerant = False
        #: in-process the broker applies an ack before the call returns: AUTO's "acked inside receive()" is visible
        self.coalesce_acks = False
        self.broker = broker
        self.clock: Clock = broker.clock
        self.connection: BrokerConnection | None = None
        #: the connection's hot-path method, bound once (set by open())
        self._send_if_admitted: Callable[[Message, int | None], bool] = _not_open
        self._closed_handler: Callable[[BaseException | None], None] | None = None
        self._open = False
        #: :meth:`send` of a message whose id the producer minted for this send and never sends again (a Producer's
        #: on a connection without failover): while open, the connection's own function
        #: (:meth:`BrokerConnection.minted_sender`), called straight from the producer; else :meth:`send`
        self.send_new: Callable[[Message, int | None, bool], Awaitable[object] | None] = self.send
        #: :meth:`ack_one` while open: the connection's own function (:meth:`BrokerConnection.auto_acker`)
        self.ack_one: Callable[[int, str], bool] = _not_acked

    @property
    def connection_id(self) -> int:
        return 0 if self.connection is None else self.connection.connection_id

    async def open(self, client_id: str | None, user: str | None = None, password: str | None = None) -> None:
        # with credentials, the broker's security plugin checks this connection as it checks remote ones
        self.connection = connection = self.broker.connect(client_id, user=user, password=password)
        self._send_if_admitted = connection.send_if_admitted
        self._open = True
        if not self.fault_tolerant:  # a reconnected link's producers send again what they sent before
            self.send_new = connection.minted_sender()
        self.ack_one = connection.auto_acker()
        self.broker.register_dropper(self.connection_id, self.drop)
        self.broker.on_close(self._broker_stopped)

    def _shut(self) -> None:
        """Closed: the connection's functions are let go of (sends raise, acks go the full way and fail there)."""
        self._open = False
        self.send_new = self.send
        self.ack_one = _not_acked

    def _broker_stopped(self) -> None:
        if self._open:
            self._shut()
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
            self._shut()
            self._conn_unchecked().close(None)
            if self._closed_handler is not None:
                self._closed_handler(ConnectionClosed("the transport failed"))

    def _conn(self) -> BrokerConnection:
        connection = self.connection
        if not self._open or connection is None:
            raise ConnectionClosed("the connection to the broker is closed")
        return connection

    async def close(self, last_delivered_seq: int) -> None:
        if self._open:
            self._shut()
            self._conn_unchecked().close(last_delivered_seq)

    def _conn_unchecked(self) -> BrokerConnection:
        assert self.connection is not None
        return self.connection

    def set_closed_handler(self, handler: Callable[[BaseException | None], None]) -> None:
        self._closed_handler = handler

    def set_async_error_handler(self, handler: Callable[[BaseException], None]) -> None:
        """In-process, every command is answered at once: errors are raised to the caller, never later."""

    async def add_consumer(self, info: ConsumerInfo, handler: DispatchHandler) -> int:
        return self._conn().add_consumer(info, handler)

    def send(self, message: Message, transaction_id: int | None, sync: bool) -> Awaitable[object] | None:
        if not self._open:
            raise ConnectionClosed("the connection to the broker is closed")
        # the hot path: no flow control in the way, no coroutine; else the queue is over its memory limit
        if self._send_if_admitted(message, transaction_id):
            return None
        return self._conn().send_when_admitted(message, transaction_id)

    def ack(self, ack: MessageAck) -> None:
        self._conn().ack(ack)

    def pull(self, consumer_id: int, timeout: float) -> None:
        self._conn().pull(consumer_id, timeout)

    def begin(self) -> int:
        return self._conn().begin()

    def add_producer(self, producer_id: int, destination: Destination | None) -> None:
        self._conn().add_producer(producer_id, destination)

    def remove_producer(self, producer_id: int) -> None:
        if self._open:
            self._conn().remove_producer(producer_id)

    async def request(self, command: Command[R]) -> R:
        if type(command) is RemoveConsumer and not self._open:
            return None  # type: ignore[return-value]  # the consumer went with the connection
        return self._conn().dispatch(command)


def _not_open(*args: object, **kwargs: object) -> bool:
    raise ConnectionClosed("the connection to the broker is not open")


def _not_acked(consumer_id: int, message_id: str) -> bool:
    """``ack_one`` of a closed link: nothing applied (the full ack that follows reports the closed connection).
    Only AUTO acks come to ``ack_one``: every message the consumer holds is acked as it is received."""
    return False
