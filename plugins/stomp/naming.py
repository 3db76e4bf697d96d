"""STOMP destination names and broker destinations, both ways, for one connection.

``/queue/X`` and ``/topic/X`` are the broker's queue and topic X; ``/temp-queue/N`` and ``/temp-topic/N`` name a
temporary destination private to the connection, made by the broker's one mechanism for temporary destinations
(``BrokerConnection.create_temporary``: named ``<connection name>:<n>``, deleted with the connection, native
clients' too), which other connections see as ``/remote-temp-queue/<physical>``. A comma list is a composite
destination.
Conversions are cached per connection; a temporary destination's name depends on who asks, so it is never cached.
"""

from __future__ import annotations

import itertools
from typing import Final

from minibroker import Broker, BrokerConnection
from minibroker._ids import PROCESS_ID_PREFIX
from minibroker.message import Destination, DestinationKind
from minibroker.transport.commands import CreateTemporary

from .values import JAVA_WS, StompError, escape_value

__all__ = ["DestinationNames", "new_connection_name"]

QUEUE = DestinationKind.QUEUE
TOPIC = DestinationKind.TOPIC

_connection_numbers = itertools.count(1)
#: the start of every connection's name, and so of every STOMP temporary destination's physical name and of every
#: message id a STOMP producer mints: unique per process, so ids never repeat when the broker restarts
_TEMPORARY_PREFIX: Final = f"ID:{PROCESS_ID_PREFIX}-stomp-"
#: entries kept per cache before it starts again
_CACHE_SIZE: Final = 1024


def new_connection_name() -> str:
    """A name no other STOMP connection of this process has (the session id, the temporary destinations' prefix)."""
    return f"{_TEMPORARY_PREFIX}{next(_connection_numbers)}"


class DestinationNames:
    """The naming of one connection: its temporary destinations, and the caches of both conversions."""

    def __init__(self, broker: Broker, connection_name: str) -> None:
        self.broker = broker
        self.connection_name = connection_name
        #: the broker connection (set at CONNECT): the owner of this connection's temporary destinations
        self.connection: BrokerConnection | None = None
        #: temporary destinations created by this connection: stomp name -> physical name, and back
        self._temp_by_stomp: dict[tuple[DestinationKind, str], str] = {}
        self._temp_names: dict[tuple[DestinationKind, str], str] = {}
        #: STOMP destination names already converted (a temporary destination keeps its name per connection)
        self.parsed: dict[str, list[Destination]] = {}
        self._strict: dict[str, list[Destination]] = {}
        #: broker destinations whose STOMP name cannot change (no temporary destination is named like them)
        self.stomp_names: dict[Destination, str] = {}
        #: the same, escaped for the negotiated version (a version is negotiated before any MESSAGE is made)
        self.escaped_names: dict[Destination, str] = {}
        #: the destinations named as another connection's temporary ones (``/remote-temp-queue/...``): a SEND to one
        #: that does not exist is refused, where a plain name would be made
        self.remote_temporaries: set[Destination] = set()

    def _temporary(self, kind: DestinationKind, name: str) -> Destination:
        physical = self._temp_by_stomp.get((kind, name))
        if physical is None:
            if self.connection is None:
                raise StompError(f"Not connected: cannot create temporary destination {name}")
            physical = self.connection.dispatch(CreateTemporary(kind, self.connection_name)).name
            self._temp_by_stomp[(kind, name)] = physical
            self._temp_names[(kind, physical)] = name
        return Destination(kind, physical)

    def parse(self, name: str, *, fallback: bool) -> list[Destination]:
        """STOMP destination names (a comma list is composite) as broker destinations; ``fallback`` reads a name
        without a STOMP prefix as a broker name (``queue://x``, ``x``) instead of refusing it."""
        cache = self.parsed if fallback else self._strict
        found = cache.get(name)
        if found is None:
            found = [self.parse_one(part, fallback=fallback) for part in name.strip(JAVA_WS).split(",")]
            if len(cache) >= _CACHE_SIZE:
                cache.clear()
            cache[name] = found
        return found

    def parse_one(self, name: str, *, fallback: bool) -> Destination:
        if name.startswith("/queue/"):
            return Destination.parse("queue://" + name[7:])
        if name.startswith("/topic/"):
            return Destination.parse("topic://" + name[7:])
        if name.startswith("/temp-queue/"):
            return self._temporary(QUEUE, name[12:])
        if name.startswith("/temp-topic/"):
            return self._temporary(TOPIC, name[12:])
        if name.startswith("/remote-temp-queue/") or name.startswith("/remote-temp-topic/"):
            found = Destination.parse(("queue://" if name[13] == "q" else "topic://") + name[19:])
            self.remote_temporaries.add(found)
            return found
        if fallback:
            return Destination.parse(name)
        raise StompError(
            f"Illegal destination name: [{name}] -- ActiveMQ STOMP destinations must begin with one of: "
            "/queue/ /topic/ /temp-queue/ /temp-topic/"
        )

    def stomp_name(self, destination: Destination) -> str:
        """How this client sees a broker destination: ``/queue/X``, ``/topic/X``, ``/temp-queue/N``, ..."""
        found = self.stomp_names.get(destination)
        if found is not None:
            return found
        kind = destination.kind
        name = destination.name
        if name.startswith("ID:"):  # possibly a temporary destination, now or later: not cached
            if self.broker.temporary_owner(destination) is not None:
                own = self._temp_names.get((kind, name))
                if own is not None:
                    return ("/temp-queue/" if kind is QUEUE else "/temp-topic/") + own
                return ("/remote-temp-queue/" if kind is QUEUE else "/remote-temp-topic/") + name
            return ("/queue/" if kind is QUEUE else "/topic/") + name
        if "," in name:  # a composite: ActiveMQ's physical name is its text less the first part's own prefix
            for prefix in ("queue://", "topic://"):
                if name.startswith(prefix):
                    name = name[len(prefix) :]
                    break
        found = ("/queue/" if kind is QUEUE else "/topic/") + name
        if len(self.stomp_names) >= _CACHE_SIZE:
            self.stomp_names.clear()
            self.escaped_names.clear()
        self.stomp_names[destination] = found
        return found

    def escaped_name(self, destination: Destination, version: str) -> str | None:
        """:meth:`stomp_name` escaped for a 1.1/1.2 header (None: it holds a NUL)."""
        name = self.escaped_names.get(destination)
        if name is None:
            name = escape_value(self.stomp_name(destination), version)
            if name is not None and destination in self.stomp_names:  # not a temporary destination: its name stays
                self.escaped_names[destination] = name
        return name

    def forget_temporaries(self) -> None:
        """The connection ended: the broker deleted its temporary destinations (and their messages) with it."""
        self._temp_names.clear()
        self._temp_by_stomp.clear()
