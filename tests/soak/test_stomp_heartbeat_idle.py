"""Real time, real clients: stomp.py connections with heart-beats (1000, 1000) stay connected through 10 s of
idleness, 20 of 20 (issue 16). ActiveMQ counts the CONNECT as input for the first read check and its peers send
heart-beats every second; a broker that dropped an idle client after one interval fails here.

The 10 s are the behaviour under test (an idle connection over real time), so the test waits them on an event, in
one run for all 20 clients together."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
import stomp

from minibroker import Broker, RealClock
from minibroker.plugins.stomp import StompServer, start_stomp_server

pytestmark = pytest.mark.soak

CLIENTS = 20
IDLE_SECONDS = 10.0


@pytest_asyncio.fixture
async def server() -> AsyncIterator[StompServer]:
    async with Broker(clock=RealClock()) as broker:
        listener = await start_stomp_server(broker, "127.0.0.1", 0)
        try:
            yield listener
        finally:
            await listener.close()


class Watch(stomp.ConnectionListener):  # type: ignore[misc]
    def __init__(self) -> None:
        self.disconnected = threading.Event()

    def on_disconnected(self) -> None:
        self.disconnected.set()


def idle_clients(port: int) -> tuple[int, float]:
    """Connect the clients, stay idle, and say how many are still connected (and how long they were idle)."""
    clients = []
    for _ in range(CLIENTS):
        conn = stomp.Connection12([("127.0.0.1", port)], heartbeats=(1000, 1000))
        watch = Watch()
        conn.set_listener("watch", watch)
        conn.connect(wait=True)
        clients.append((conn, watch))
    started = time.monotonic()
    dropped = threading.Event()
    dropped.wait(IDLE_SECONDS)  # the idleness under test
    idle = time.monotonic() - started
    alive = sum(1 for conn, watch in clients if conn.is_connected() and not watch.disconnected.is_set())
    for conn, _ in clients:
        if conn.is_connected():
            conn.disconnect()
    return alive, idle


async def test_twenty_idle_heart_beating_clients_stay_connected(server: StompServer) -> None:
    alive, idle = await asyncio.to_thread(idle_clients, server.port)
    assert idle >= IDLE_SECONDS
    assert alive == CLIENTS, f"{CLIENTS - alive} of {CLIENTS} idle heart-beating clients were dropped"
