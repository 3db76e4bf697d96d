"""A client connection as the broker core keeps it: its client id and what it has open."""

from __future__ import annotations

import attrs

from ..message import Destination
from .temporary import default_connection_name

__all__ = ["ConnectionState"]


@attrs.define(slots=True, eq=False)
class ConnectionState:
    """What one connection holds: consumers, open transactions and producers (for statistics and advisories)."""

    connection_id: int
    client_id: str | None
    consumers: set[int] = attrs.field(factory=set)
    transactions: set[int] = attrs.field(factory=set)
    #: producer id -> its destination (None: an anonymous producer)
    producers: dict[int, Destination | None] = attrs.field(factory=dict)

    @property
    def name(self) -> str:
        """The connection's ``ID:...`` name, the prefix of its consumers' and producers' ids in advisories."""
        return default_connection_name(self.connection_id)
