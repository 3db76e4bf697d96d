"""A restart pages a big queue in, as ActiveMQ's store cursor does (issue 15, medium; issue 21, target 5): at most a
page of its messages in memory, the rest read from the store as consumers drain it, in the original order, with new
sends behind them; its size counts them all; a range read or a cursor ack pages the rest in first."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker import Broker, ManualClock
from minibroker._core import paging
from minibroker.client import AckMode, connect

PAGE, LOW = 50, 10


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    from minibroker._driver import broker as _driver

    monkeypatch.setattr(paging, "LOW_WATER", LOW)
    monkeypatch.setattr(_driver, "PAGE", PAGE)


async def fill(broker: Broker, queue: str, count: int) -> None:
    async with await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer(queue)
        for i in range(count):
            await producer.send(f"m{i}", properties={"i": i})


async def test_a_restart_keeps_a_page_in_memory_and_pages_the_rest_in_order(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        await fill(broker, "big", 180)
        await broker.restart()
        q = broker.core.queues["big"]
        assert len(q.entries) == PAGE and q.on_disk == 130 and broker.queue("big").size == 180
        async with await connect(broker) as conn:
            session = await conn.create_session()
            await (await session.create_producer("big")).send("after")  # waits on disk behind the others
            assert broker.queue("big").size == 181 and len(q.entries) == PAGE
            consumer = await session.create_consumer("big?consumer.prefetchSize=5")
            bodies = []
            for _ in range(181):
                msg = await consumer.receive(timeout=1)
                assert msg is not None
                bodies.append(msg.body)
                assert len(q.entries) <= PAGE + 5 + LOW  # never the whole queue in memory
        assert bodies == [f"m{i}" for i in range(180)] + ["after"]
        assert broker.queue("big").size == 0 and not broker.core.journal.paged  # type: ignore[union-attr]
        await broker.restart()
        assert broker.queue("big").size == 0


async def test_a_range_read_and_a_restart_midway_see_every_message(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        await fill(broker, "big", 120)
        await broker.restart()
        async with await connect(broker) as conn:
            consumer = await (await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)).create_consumer("big")
            for _ in range(70):
                msg = await consumer.receive(timeout=1)
                assert msg is not None
            await msg.acknowledge()
        await broker.restart()  # 50 left: the page and the rest in the same order
        assert broker.queue("big").size == 50
        read = broker.read_range("big", 0, None)
        assert [e.message.body for e in read.entries] == [f"m{i}" for i in range(70, 120)]
        assert read.next_seq == 120 and broker.queue("big").size == 50


async def test_a_purge_of_a_paged_queue_takes_what_is_on_disk_too(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        await fill(broker, "big", 120)
        await broker.restart()
        assert broker.queue("big").purge() == 120
        assert broker.queue("big").size == 0
        await broker.restart()
        assert broker.queue("big").size == 0
