"""Temporary queues and topics (JMS ``TemporaryQueue``/``TemporaryTopic``): made by a session, owned by its
connection, deleted with it. Used as a request's ``reply_to`` so that each requester gets its own answer queue."""

from __future__ import annotations

from typing import TYPE_CHECKING

from minibroker.message import Destination, DestinationKind, temporary_text
from minibroker.transport.commands import DeleteTemporary

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = ["TemporaryDestination", "TemporaryQueue", "TemporaryTopic"]


class TemporaryDestination:
    """A temporary destination; anywhere the client takes a destination (``create_consumer``,
    ``create_producer``, ``send(reply_to=...)``) it stands for its :attr:`destination`. ``str()`` is ActiveMQ's
    ``temp-queue://ID:...`` / ``temp-topic://ID:...``."""

    __slots__ = ("_connection", "destination")

    def __init__(self, connection: Connection, destination: Destination) -> None:
        self._connection = connection
        #: the broker's destination (its name is ``<connection id>:<n>``, as ActiveMQ names them)
        self.destination = destination

    @property
    def name(self) -> str:
        return self.destination.name

    def __str__(self) -> str:
        return temporary_text(self.destination)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TemporaryDestination):
            return self.destination == other.destination
        return self.destination == other if isinstance(other, Destination) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.destination)

    async def delete(self) -> None:
        """Delete it now (JMS ``delete()``): refused with :class:`~minibroker.errors.DestinationInUse` while a
        consumer reads it; sends to it fail afterwards with :class:`~minibroker.errors.DestinationDoesNotExist`."""
        self._connection._check_open()
        await self._connection._link.request(DeleteTemporary(self.destination))


class TemporaryQueue(TemporaryDestination):
    """A temporary queue (``session.create_temporary_queue()``)."""

    __slots__ = ()


class TemporaryTopic(TemporaryDestination):
    """A temporary topic (``session.create_temporary_topic()``)."""

    __slots__ = ()


def make_temporary(connection: Connection, destination: Destination) -> TemporaryDestination:
    cls = TemporaryQueue if destination.kind is DestinationKind.QUEUE else TemporaryTopic
    return cls(connection, destination)
