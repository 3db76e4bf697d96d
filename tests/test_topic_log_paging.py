"""A restart loads a topic's log a page at a time (issue 31, item 1; topic_log.py): the oldest page in memory and of
the rest only the sequence numbers; a subscription that catches up has the rows on disk copied to its queue, which
pages them in as its consumer takes them. Nothing is lost, nothing acked comes back, the order holds, the counts
count what is on disk, and a failed store write takes it all back."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.stores import FullDisk

from minibroker import Broker, ManualClock
from minibroker._core import paging
from minibroker.client import AckMode, Connection, connect
from minibroker.errors import StoreError
from minibroker.store import SqliteStore

PAGE, LOW = 50, 10
LOG = "topic-log://audit"


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    from minibroker._driver import broker as _driver

    monkeypatch.setattr(paging, "LOW_WATER", LOW)
    monkeypatch.setattr(_driver, "PAGE", PAGE)


async def leave(conn: Connection, *names: str) -> None:
    session = await conn.create_session()
    for name in names:
        await (await session.create_durable_subscriber("topic://audit", name)).close()
    await session.close()


async def publish(broker: Broker, bodies: list[str]) -> None:
    async with await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer("topic://audit")
        for body in bodies:
            await producer.send(body, persistent=True)


async def take(conn: Connection, name: str, count: int, prefetch: int = 5) -> list[str]:
    session = await conn.create_session()
    consumer = await session.create_durable_subscriber("topic://audit", name, prefetch=prefetch)
    got = []
    for _ in range(count):
        msg = await consumer.receive(timeout=1)
        assert msg is not None
        got.append(msg.body)
    assert await consumer.receive(timeout=0.05) is None
    await consumer.close()
    await session.close()
    return got


async def restarted_with_one_away(broker: Broker, count: int) -> None:
    """Subscription ``c/s`` goes away, ``count`` messages are published to it, and the broker restarts: past a
    page, the log is paged."""
    async with await connect(broker, client_id="c") as conn:
        await leave(conn, "s")
    await publish(broker, bodies(0, count))
    await broker.restart()


def bodies(start: int, stop: int) -> list[str]:
    return [f"m{i}" for i in range(start, stop)]


async def test_a_restart_keeps_one_page_of_the_log_in_memory_and_a_subscriber_gets_all_of_it(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        await restarted_with_one_away(broker, 180)
        log = broker.core.topics["audit"].log
        assert log is not None and len(log.entries) - log.head == PAGE and len(log.disk) == 130
        assert [v.pending for v in broker.durable_subscriptions()] == [180]  # what is on disk counts
        await publish(broker, bodies(180, 190))  # written behind the rest on disk, not kept in memory
        assert len(log.entries) - log.head == PAGE and len(log.disk) == 140
        q = broker.core.queues["durable://c/s"]
        statistics = broker.queue_statistics("durable://c/s")  # a read of its queue: it catches up
        assert statistics is not None and statistics.size == 190
        assert len(q.entries) == PAGE and q.on_disk == 140  # the rows on disk were copied there, not read
        async with await connect(broker, client_id="c") as conn:
            assert await take(conn, "s", 190) == bodies(0, 190)
        assert len(q.entries) == 0 and q.on_disk == 0
        assert len(log) == 0
        store = broker.store
        assert isinstance(store, SqliteStore) and store.count(LOG) == 0 and store.count("durable://c/s") == 0
        await broker.restart()
        assert [v.pending for v in broker.durable_subscriptions()] == [0]


async def test_subscriptions_away_from_different_points_each_get_their_own_part(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        async with await connect(broker, client_id="c") as conn:
            await leave(conn, "early")
            await publish(broker, bodies(0, 120))
            await leave(conn, "late")  # from m120 on
            await publish(broker, bodies(120, 200))
        await broker.restart()
        assert {v.name: v.pending for v in broker.durable_subscriptions()} == {"early": 200, "late": 80}
        store = broker.store
        assert isinstance(store, SqliteStore)
        async with await connect(broker, client_id="c") as conn:
            assert await take(conn, "early", 200) == bodies(0, 200)
            assert store.count(LOG) == 80  # what only "late" still reads
            await publish(broker, bodies(200, 210))  # "early" is away again, from m200 on
            assert await take(conn, "late", 90) == bodies(120, 210)
            assert await take(conn, "early", 10) == bodies(200, 210)
        assert store.count(LOG) == 0


async def test_a_browse_and_a_range_read_of_an_offline_subscription_see_what_is_on_disk(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        await restarted_with_one_away(broker, 120)
        read = broker.read_range("durable://c/s", 0, None)
        assert [e.message.body for e in read.entries] == bodies(0, 120)
        await broker.restart()  # the copies are the subscription's rows now; the log's are gone
        assert [v.pending for v in broker.durable_subscriptions()] == [120]
        assert broker.queue("durable://c/s").size == 120


async def test_a_restart_mid_way_through_a_catch_up_loses_nothing_and_brings_back_nothing_acked(
    tmp_path: Path,
) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        await restarted_with_one_away(broker, 150)
        async with await connect(broker, client_id="c") as conn:
            session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            consumer = await session.create_durable_subscriber("topic://audit", "s", prefetch=5)
            for _ in range(70):
                msg = await consumer.receive(timeout=1)
                assert msg is not None
            await msg.acknowledge()
        await broker.restart()
        assert [v.pending for v in broker.durable_subscriptions()] == [80]
        async with await connect(broker, client_id="c") as conn:
            assert await take(conn, "s", 80) == bodies(70, 150)


async def test_a_failed_store_write_takes_a_catch_up_from_disk_back(tmp_path: Path) -> None:
    store = FullDisk(tmp_path)
    async with Broker(clock=ManualClock(autojump=True), store=store) as broker:
        await restarted_with_one_away(broker, 120)
        q = broker.core.queues["durable://c/s"]
        log = broker.core.topics["audit"].log
        assert log is not None
        before = (q.on_disk, q.enqueued, len(log.disk))
        store.full = True
        with pytest.raises(StoreError):
            broker.read_range("durable://c/s", 0, None)
        assert (q.on_disk, q.enqueued, len(log.disk)) == before
        assert [v.pending for v in broker.durable_subscriptions()] == [120]
        with pytest.raises(StoreError):
            await publish(broker, ["lost"])  # behind the part on disk: taken back as well
        assert len(log.disk) == before[2]
        store.full = False
        async with await connect(broker, client_id="c") as conn:
            assert await take(conn, "s", 120) == bodies(0, 120)
