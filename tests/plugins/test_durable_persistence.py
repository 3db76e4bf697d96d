"""Durable subscriptions survive restarts (issue 18, item 1): the subscription itself, empty or not, and the
persistent messages it kept while its subscriber was offline, through ``Broker.restart()`` with a store and through a
SIGKILL of ``minibroker serve --data-dir``."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest
from support.servekit import serve

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, connect
from minibroker.store import MemoryStore, SqliteStore


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
async def test_the_subscription_and_its_messages_survive_a_restart(tmp_path: Path, store_kind: str) -> None:
    store = MemoryStore() if store_kind == "memory" else SqliteStore(tmp_path / "data")
    async with Broker(clock=ManualClock(autojump=True), store=store) as broker:
        async with await connect(broker, client_id="app") as conn:
            session = await conn.create_session()
            await (await session.create_durable_subscriber("topic://prices", "kept", selector="n > 0")).close()
            await (await session.create_durable_subscriber("topic://prices", "all")).close()
            producer = await session.create_producer("topic://prices")
            for n in range(3):
                await producer.send(f"p{n}", properties={"n": n})
            await producer.send("fleeting", properties={"n": 9}, persistent=False)
        await broker.restart()
        views = {v.name: v for v in broker.durable_subscriptions("prices")}
        assert set(views) == {"kept", "all"} and views["kept"].selector == "n > 0"
        assert views["kept"].pending == 2 and views["all"].pending == 3  # non-persistent ones: not over a restart
        async with await connect(broker, client_id="app") as conn:
            session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            subscriber = await session.create_durable_subscriber("topic://prices", "kept", selector="n > 0")
            got = [await subscriber.receive(timeout=5) for _ in range(2)]
            assert [m.body for m in got if m is not None] == ["p1", "p2"]
            assert got[-1] is not None
            await got[-1].acknowledge()
            await subscriber.close()
            await session.unsubscribe("all")
        await broker.restart()
        assert [(v.name, v.pending) for v in broker.durable_subscriptions()] == [("kept", 0)]


async def test_an_offline_subscriber_gets_all_1000_after_a_sigkill(
    tmp_path: Path, processes: list[asyncio.subprocess.Process]
) -> None:
    """The issue's proof: offline during 1,000 persistent publishes, across a SIGKILL, all 1,000 after the restart,
    in order, none twice."""
    data_dir = tmp_path / "data"
    server = await serve(tmp_path, "--data-dir", str(data_dir))
    processes.append(server.proc)
    async with await connect(server.url, client_id="billing") as conn:
        session = await conn.create_session()
        await (await session.create_durable_subscriber("topic://orders", "invoices")).close()
    async with await connect(server.url) as conn:
        producer = await (await conn.create_session()).create_producer("topic://orders")
        for i in range(1000):
            await producer.send(f"order-{i}")  # persistent, confirmed by the broker before it returns
    server.proc.send_signal(signal.SIGKILL)
    await server.proc.wait()

    again = await serve(tmp_path, "--data-dir", str(data_dir))
    processes.append(again.proc)
    async with await connect(again.url, client_id="billing") as conn:
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        subscriber = await session.create_durable_subscriber("topic://orders", "invoices")
        bodies = []
        while (msg := await subscriber.receive(timeout=2)) is not None:
            bodies.append(msg.body)
            await msg.acknowledge()
    assert bodies == [f"order-{i}" for i in range(1000)]
