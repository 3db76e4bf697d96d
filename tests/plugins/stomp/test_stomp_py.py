"""The connector with stomp.py, the STOMP client library most Python code uses against ActiveMQ.

stomp.py is threaded and blocking: its calls run in worker threads (``asyncio.to_thread``) while the server runs on
the test's event loop, and its listener hands frames back to the loop with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
import stomp  # type: ignore[import-untyped]

from minibroker import Broker
from minibroker.plugins.stomp import StompServer

pytestmark = pytest.mark.usefixtures("loop_errors")


class Collector(stomp.ConnectionListener):  # type: ignore[misc]
    """Puts every MESSAGE and ERROR stomp.py receives on an asyncio queue of the test's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.messages: asyncio.Queue[Any] = asyncio.Queue()
        self.errors: asyncio.Queue[Any] = asyncio.Queue()
        self.receipts: asyncio.Queue[str] = asyncio.Queue()

    def on_message(self, frame: Any) -> None:
        self.loop.call_soon_threadsafe(self.messages.put_nowait, frame)

    def on_receipt(self, frame: Any) -> None:
        self.loop.call_soon_threadsafe(self.receipts.put_nowait, frame.headers["receipt-id"])

    def on_error(self, frame: Any) -> None:
        self.loop.call_soon_threadsafe(self.errors.put_nowait, frame)

    async def take(self, n: int, timeout: float = 10.0) -> list[Any]:
        async with asyncio.timeout(timeout):
            return [await self.messages.get() for _ in range(n)]


class StompPy:
    """A stomp.py connection driven from async tests."""

    def __init__(self, port: int) -> None:
        self.conn = stomp.Connection12([("127.0.0.1", port)], reconnect_attempts_max=1)
        self.collector = Collector(asyncio.get_running_loop())
        self.conn.set_listener("collector", self.collector)

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def connect(self) -> None:
        await self.call(self.conn.connect, wait=True)

    async def sync(self) -> None:
        """Wait until the broker has handled every frame sent so far (a throwaway transaction's receipt)."""
        self._syncs = getattr(self, "_syncs", 0) + 1
        tx = await self.call(self.conn.begin)
        await self.call(self.conn.abort, tx, receipt=f"sync-{self._syncs}")
        async with asyncio.timeout(5):
            while await self.collector.receipts.get() != f"sync-{self._syncs}":
                pass

    async def disconnect(self) -> None:
        if self.conn.is_connected():
            await self.call(self.conn.disconnect)


@pytest_asyncio.fixture
async def stomp_py(server: StompServer) -> AsyncIterator[Callable[[], Any]]:
    made: list[StompPy] = []

    async def make() -> StompPy:
        client = StompPy(server.port)
        await client.connect()
        made.append(client)
        return client

    yield make
    for client in made:
        await client.disconnect()


async def test_auto_ack(stomp_py: Callable[[], Any], broker: Broker) -> None:
    """stomp.py SENDs, an ack:auto subscription drains the queue; every message consumed once, in order."""
    client: StompPy = await stomp_py()
    for i in range(50):
        await client.call(client.conn.send, "/queue/py-auto", f"m{i}", headers={"seq": str(i)})
    await client.call(client.conn.send, "/queue/py-auto", "last")
    await client.call(client.conn.subscribe, "/queue/py-auto", id="s1", ack="auto")
    frames = await client.collector.take(51)
    assert [f.body for f in frames] == [f"m{i}" for i in range(50)] + ["last"]
    assert frames[3].headers["seq"] == "3" and frames[3].headers["subscription"] == "s1"
    assert "ack" not in frames[0].headers
    q = broker.queue("py-auto")
    assert (q.size, q.enqueued, q.dequeued) == (0, 51, 51)


async def test_client_individual_ack(stomp_py: Callable[[], Any], broker: Broker) -> None:
    """client-individual with prefetch 5: acks free the window one message at a time; NACK dead-letters."""
    client: StompPy = await stomp_py()
    for i in range(12):
        await client.call(client.conn.send, "/queue/py-ind", f"m{i}", headers={"persistent": "true"})
    await client.call(
        client.conn.subscribe, "/queue/py-ind", id="s1", ack="client-individual", headers={"activemq.prefetchSize": "5"}
    )
    first = await client.collector.take(5)
    assert [f.body for f in first] == [f"m{i}" for i in range(5)]
    assert broker.queue("py-ind").inflight == 5
    # ack m1..m4 out of order, NACK m0
    for frame in reversed(first[1:]):
        await client.call(client.conn.ack, frame.headers["ack"])
    await client.call(client.conn.nack, first[0].headers["ack"])
    rest = await client.collector.take(5)
    await client.sync()
    assert client.collector.messages.empty()  # the window is full again
    for frame in rest:
        await client.call(client.conn.ack, frame.headers["ack"])
    rest += await client.collector.take(2)
    assert [f.body for f in rest] == [f"m{i}" for i in range(5, 12)]
    for frame in rest[5:]:
        await client.call(client.conn.ack, frame.headers["ack"])
    await client.sync()
    q = broker.queue("py-ind")
    assert (q.size, q.inflight, q.dequeued) == (0, 0, 12)
    assert [m.body for m in broker.queue("ActiveMQ.DLQ").browse()] == [b"m0"]


async def test_unacked_messages_come_back_redelivered(stomp_py: Callable[[], Any], broker: Broker) -> None:
    first: StompPy = await stomp_py()
    await first.call(first.conn.send, "/queue/py-re", "m1", headers={"persistent": "true"})
    await first.call(first.conn.subscribe, "/queue/py-re", id="s1", ack="client-individual")
    (frame,) = await first.collector.take(1)
    assert "redelivered" not in frame.headers and broker.queue("py-re").inflight == 1
    await first.disconnect()
    second: StompPy = await stomp_py()
    await second.call(second.conn.subscribe, "/queue/py-re", id="s2", ack="auto")
    (again,) = await second.collector.take(1)
    assert again.body == "m1" and again.headers["redelivered"] == "true"


async def test_transaction(stomp_py: Callable[[], Any], broker: Broker) -> None:
    client: StompPy = await stomp_py()
    tx = await client.call(client.conn.begin)
    await client.call(client.conn.send, "/queue/py-tx", "in-tx", transaction=tx)
    await client.sync()
    assert broker.queue("py-tx").enqueued == 0
    await client.call(client.conn.commit, tx)
    await client.call(client.conn.subscribe, "/queue/py-tx", id="s1")
    (frame,) = await client.collector.take(1)
    assert frame.body == "in-tx"


async def test_error_is_reported_and_connection_survives(stomp_py: Callable[[], Any]) -> None:
    client: StompPy = await stomp_py()
    await client.call(client.conn.ack, "no-such-ack")
    async with asyncio.timeout(5):
        error = await client.collector.errors.get()
    assert error.headers["message"] == "Unexpected ACK received for message-id [null]"
    assert client.conn.is_connected()
    await client.call(client.conn.send, "/queue/py-err", "still-works")
    await client.call(client.conn.subscribe, "/queue/py-err", id="s")
    (frame,) = await client.collector.take(1)
    assert frame.body == "still-works"


async def test_reconnect_as_applications_do(server: StompServer, broker: Broker) -> None:
    """stomp.py does not re-establish a lost connection by itself: applications reconnect and resubscribe in
    ``on_disconnected``. After the broker drops it, the unacked message comes back redelivered on the new one."""
    client = StompPy(server.port)
    reconnected = asyncio.Event()
    loop = asyncio.get_running_loop()

    class Reconnect(stomp.ConnectionListener):  # type: ignore[misc]
        def on_disconnected(self) -> None:
            client.conn.connect(wait=True)
            client.conn.subscribe("/queue/py-re", id="s1", ack="client-individual")
            loop.call_soon_threadsafe(reconnected.set)

    await client.connect()
    await client.call(client.conn.send, "/queue/py-re", "m1", headers={"persistent": "true"})
    await client.call(client.conn.subscribe, "/queue/py-re", id="s1", ack="client-individual")
    [first] = await client.collector.take(1)
    assert first.headers.get("redelivered") != "true"
    client.conn.set_listener("reconnect", Reconnect())
    broker.drop_connections()
    async with asyncio.timeout(10):
        await reconnected.wait()
    [again] = await client.collector.take(1)
    assert again.body == "m1" and again.headers["redelivered"] == "true"
    await client.call(client.conn.ack, again.headers["ack"])
    await client.sync()
    assert broker.queue("py-re").size == 0
    client.conn.remove_listener("reconnect")  # the application's own disconnect must not reconnect
    await client.disconnect()


async def test_a_native_map_reaches_stomp_py_as_json_and_back(stomp_py: Callable[[], Any], broker: Broker) -> None:
    """issue 19: a MapMessage sent natively arrives at a stomp.py subscriber with ``transformation: jms-map-json``
    as ActiveMQ writes it, and a stomp.py SEND with the same header (and no ``content-length``, which would make it a
    BytesMessage, as on ActiveMQ) makes a MapMessage again."""
    from minibroker.client import connect
    from minibroker.typed import Long

    client: StompPy = await stomp_py()
    await client.call(client.conn.subscribe, "/queue/maps", id="m", headers={"transformation": "jms-map-json"})
    await client.sync()
    async with await connect(broker) as conn:
        session = await conn.create_session()
        await (await session.create_producer("maps")).send({"order": Long(42), "item": "book"})
        (frame,) = await client.collector.take(1)
        assert frame.headers["transformation"] == "jms-map-json"
        assert frame.body == '{"map":{"entry":[{"string":["item","book"]},{"string":"order","long":42}]}}'
        consumer = await session.create_consumer("back")
        await client.call(client.conn.send, "/queue/back", frame.body, headers={"transformation": "jms-map-json"})
        msg = await consumer.receive(timeout=5)  # stomp.py sent content-length: ActiveMQ's default translation
        assert msg is not None and msg.body == frame.body.encode() and msg.jms_type == "BytesMessage"
        client.conn.auto_content_length = False
        await client.call(client.conn.send, "/queue/back", frame.body, headers={"transformation": "jms-map-json"})
        msg = await consumer.receive(timeout=5)
        assert msg is not None and msg.body == {"item": "book", "order": 42}
        assert type(msg.body["order"]) is Long  # type: ignore[index]
