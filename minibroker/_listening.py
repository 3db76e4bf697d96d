"""What every protocol listener in front of a broker does alike (STOMP, MQTT): keep its open connections, let tests
wait for their count, drop them all, and stop with the broker. One home, so the two listeners cannot drift apart."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Listener"]


class _Connection(Protocol):
    def abort(self) -> None: ...


C = TypeVar("C", bound=_Connection)


class Listener(Generic[C]):
    """A running listener's sockets and connections (a subclass adds its protocol's settings and ``url``)."""

    def __init__(self) -> None:
        #: one per listening socket (a host name can resolve to several addresses); empty once closed
        self._servers: list[asyncio.Server] = []
        self._connections: set[C] = set()
        self._changed = asyncio.Event()
        #: connections accepted since the start
        self.accepted = 0

    @property
    def connection_count(self) -> int:
        """Client connections open now."""
        return len(self._connections)

    def _opened(self, connection: C) -> None:
        self._connections.add(connection)
        self.accepted += 1
        self._notify()

    def _closed(self, connection: C) -> None:
        self._connections.discard(connection)
        self._notify()

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_connection_count(self, count: int, timeout: float = 5.0) -> None:
        """Return once exactly ``count`` clients are connected (``TimeoutError`` after ``timeout`` seconds)."""
        async with asyncio.timeout(timeout):
            while len(self._connections) != count:
                await self._changed.wait()

    def _drop_all(self) -> None:
        for connection in list(self._connections):
            connection.abort()

    def _stop_listening(self) -> list[asyncio.Server]:
        servers, self._servers = self._servers, []
        for listener in servers:
            listener.close()
        return servers

    def broker_stopped(self) -> None:
        """The broker stopped first: stop listening and drop every client."""
        self._stop_listening()
        self._drop_all()

    async def close(self) -> None:
        """Stop accepting, drop every client (a transport failure for the broker), wait for them to be gone."""
        servers = self._stop_listening()
        if not servers:
            return
        self._drop_all()
        await self.wait_connection_count(0)
        for listener in servers:
            await listener.wait_closed()

    async def __aenter__(self: ListenerT) -> ListenerT:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


ListenerT = TypeVar("ListenerT", bound="Listener[Any]")
