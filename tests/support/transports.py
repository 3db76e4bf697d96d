"""Connect a test client to a broker over a chosen transport: ``"memory"`` (in-process) or ``"tcp"`` (a server on
port 0 in this process, started on first use and stopped with the broker).

Over TCP the client gets the broker's clock, so a ManualClock drives both sides as it does in-process; loopback
sockets deliver what one side writes before the event loop polls again, so ``settle()`` still sees the exchange.

>>> conn = await connect_to(broker, "tcp", redelivery_policy=policy)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from minibroker import Broker, RealClock
from minibroker.client import Connection, connect
from minibroker.plugins.server.tcp import Server, start_server
from minibroker.plugins.stomp import StompServer, start_stomp_server

TRANSPORTS = ("memory", "tcp")

_servers: dict[int, tuple[Broker, Server]] = {}


async def server_for(broker: Broker) -> Server:
    """The TCP server of ``broker`` in this process (one per broker; it stops listening when the broker stops)."""
    entry = _servers.get(id(broker))
    if entry is not None and entry[0] is broker and not broker.closed:
        return entry[1]
    server = await start_server(broker, port=0)
    _servers[id(broker)] = (broker, server)
    broker.on_close(lambda: _servers.pop(id(broker), None))
    return server


async def connect_to(broker: Broker, transport: str = "memory", **kw: Any) -> Connection:
    """``connect(broker, **kw)`` in-process, or the same connection over TCP with the broker's clock."""
    if transport == "memory":
        return await connect(broker, **kw)
    if transport == "tcp":
        server = await server_for(broker)
        kw.setdefault("clock", broker.clock)
        return await connect(server.url, **kw)
    raise ValueError(f"unknown transport {transport!r}; expected one of {TRANSPORTS}")


async def close_servers() -> None:
    """Stop every server started here and wait for their connections to finish (for a test's teardown)."""
    entries = list(_servers.values())
    _servers.clear()
    for _, server in entries:
        await server.close()


@contextlib.asynccontextmanager
async def both_listeners(
    max_connections: int, close_timeout: float
) -> AsyncIterator[tuple[Broker, Server, StompServer]]:
    """A real-time broker with a native and a STOMP listener on free ports sharing one ``max_connections``."""
    async with Broker(clock=RealClock()) as broker:
        native = await start_server(broker, port=0, max_connections=max_connections)
        stomp = await start_stomp_server(broker, max_connections=max_connections)
        try:
            yield broker, native, stomp
        finally:
            await stomp.close()
            await asyncio.wait_for(native.close(), close_timeout)
