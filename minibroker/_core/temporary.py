"""Temporary destinations: owned by the connection that made them, gone with it (ActiveMQ's temp-queue/temp-topic).

One registry serves every edge (native client, STOMP), so the rules are written once: only the owner may consume,
``delete`` is refused while a consumer reads, and a send to a deleted one fails as ActiveMQ's
``DestinationDoesNotExistException`` (a JMS ``InvalidDestinationException``) naming the destination.
"""

from __future__ import annotations

import attrs

from ..errors import DestinationDoesNotExist, DestinationInUse, InvalidDestination
from ..message import Destination, DestinationKind

__all__ = ["TemporaryDestinations", "default_connection_name"]


def default_connection_name(connection_id: int) -> str:
    """The ``ID:...`` prefix of a connection whose edge gave no name of its own (ActiveMQ: the connection id)."""
    return f"ID:minibroker-{connection_id}:1"


@attrs.define(slots=True, eq=False)
class TemporaryDestinations:
    """Live temporary destinations by destination, and every name ever made (a deleted one stays refused)."""

    #: live temporary destination -> owning connection id
    owners: dict[Destination, int] = attrs.field(factory=dict)
    #: connection id -> how many temporary destinations it has made (the ``:<n>`` of the next name)
    _made: dict[int, int] = attrs.field(factory=dict)
    #: every temporary destination ever made, live or deleted (empty: every send skips check_send)
    known: set[Destination] = attrs.field(factory=set)

    def create(self, connection_id: int, kind: DestinationKind, connection_name: str | None = None) -> Destination:
        """A new temporary destination named ``<connection name>:<n>`` as ActiveMQ names them."""
        n = self._made.get(connection_id, 0) + 1
        self._made[connection_id] = n
        prefix = connection_name or default_connection_name(connection_id)
        destination = Destination(kind, f"{prefix}:{n}")
        if destination in self.known:
            raise InvalidDestination(f"temporary destination {destination} already exists", destination=destination)
        self.owners[destination] = connection_id
        self.known.add(destination)
        return destination

    def is_temporary(self, destination: Destination) -> bool:
        return destination in self.known

    def exists(self, destination: Destination) -> bool:
        return destination in self.owners

    def check_send(self, destination: Destination) -> None:
        """Refuses a send to a temporary destination that no longer exists."""
        # an empty set still hashes the destination (a Python-level hash): most brokers never make one
        if self.known and destination in self.known and destination not in self.owners:
            raise DestinationDoesNotExist(f"temp-{destination}", destination=destination)

    def check_consumer(self, connection_id: int, destination: Destination) -> None:
        """Refuses a consumer on another connection's temporary destination (or a deleted one)."""
        if destination in self.known:
            self._check_owner(connection_id, destination)

    def _check_owner(self, connection_id: int, destination: Destination) -> None:
        """Only the connection that made a temporary destination may use it; a deleted one is gone for everyone."""
        owner = self.owners.get(destination)
        if owner is None:
            raise InvalidDestination(f"temp-{destination}", destination=destination)
        if owner != connection_id:
            raise InvalidDestination(
                "Cannot use a Temporary destination from another Connection", destination=destination
            )

    def check_delete(self, connection_id: int, destination: Destination, consumers: list[int]) -> None:
        """Refuses to delete what is not this connection's, or what a consumer still reads (ActiveMQ's text)."""
        self._check_owner(connection_id, destination)
        if consumers:
            raise DestinationInUse(
                "A consumer is consuming from the temporary destination",
                destination=destination,
                connection_id=connection_id,
                consumer_id=consumers[0],
            )

    def forget(self, destination: Destination) -> None:
        self.owners.pop(destination, None)

    def owned_by(self, connection_id: int) -> list[Destination]:
        return [dest for dest, owner in self.owners.items() if owner == connection_id]

    def connection_closed(self, connection_id: int) -> None:
        self._made.pop(connection_id, None)
