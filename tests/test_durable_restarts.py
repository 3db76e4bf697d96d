"""A durable subscription keeps its messages across any number of restarts, whatever state each stop caught it in
(issue 41, rows 1 and 2).

A broker process that dies never tells its store that its subscribers went away: after the restart the subscription
has no stored position (its messages were all in its own queue) and reads its topic's log from what is new. That new
position must reach the store before anything is logged for it, or the next restart puts it at the log's end again,
past every message written meanwhile, which the trim then deletes. Here a stop is :meth:`Broker.stop` with the
clients still connected: the store keeps what the last call wrote, as after a SIGKILL or a SIGTERM (neither lets the
subscribers leave first), and a new broker on the same store is the restart.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, connect
from minibroker.store import MemoryStore

TOPIC = "topic://orders"


async def subscribe(broker: Broker, name: str) -> tuple[Connection, object]:
    """A connected durable subscriber ``name`` (client id ``c-<name>``), left open."""
    conn = await connect(broker, client_id=f"c-{name}")
    session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
    return conn, await session.create_durable_subscriber(TOPIC, name)


async def publish(broker: Broker, bodies: list[str]) -> None:
    async with await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer(TOPIC)
        for body in bodies:
            await producer.send(body, persistent=True)


async def drain(broker: Broker, name: str) -> list[str]:
    """Everything subscription ``name`` holds, acked as it comes."""
    async with await connect(broker, client_id=f"c-{name}") as conn:
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        subscriber = await session.create_durable_subscriber(TOPIC, name)
        got: list[str] = []
        while (msg := await subscriber.receive(timeout=1)) is not None:
            assert isinstance(msg.body, str)
            got.append(msg.body)
            await msg.acknowledge()
        return got


def broker_on(kind: str, memory: MemoryStore | None, tmp_path: Path) -> Broker:
    clock = ManualClock(autojump=True)
    if kind == "memory":
        assert memory is not None
        return Broker(store=memory, clock=clock)
    return Broker(data_dir=tmp_path, clock=clock)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_subscriber_online_at_a_crash_gets_what_was_sent_while_it_was_away_after_a_second_restart(
    kind: str, tmp_path: Path
) -> None:
    memory = MemoryStore() if kind == "memory" else None
    first = broker_on(kind, memory, tmp_path)
    await first.start()
    conn, _ = await subscribe(first, "s")
    await first.stop()  # dies with its subscriber connected: the store never hears it left
    await conn.close()

    second = broker_on(kind, memory, tmp_path)
    await second.start()
    await publish(second, [f"m{i}" for i in range(20)])  # confirmed, while the subscription is away
    await second.stop()

    third = broker_on(kind, memory, tmp_path)
    async with third:
        assert await drain(third, "s") == [f"m{i}" for i in range(20)]


@pytest.mark.parametrize("seed", range(8))
async def test_a_random_run_of_restarts_with_subscribers_online_or_away_loses_nothing(seed: int) -> None:
    """Row 2 in small: thirty lifetimes, each stop catching each of three subscriptions online, away, or online with
    unacked messages; every confirmed send reaches each subscription once the run drains it, in order, and nothing
    acked comes back."""
    rng = random.Random(seed)
    store = MemoryStore()
    names = ["a", "b", "c"]
    expected: dict[str, list[str]] = {name: [] for name in names}
    acked: dict[str, set[str]] = {name: set() for name in names}
    sent = 0
    broker = Broker(store=store, clock=ManualClock(autojump=True))
    await broker.start()
    for name in names:
        conn, _ = await subscribe(broker, name)
        await conn.close()
    for _lifetime in range(30):
        open_conns: list[Connection] = []
        for name in names:
            if rng.random() < 0.5:  # online at the next stop, having taken (and maybe acked) some of its backlog
                conn = await connect(broker, client_id=f"c-{name}")
                session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
                subscriber = await session.create_durable_subscriber(TOPIC, name, prefetch=rng.randint(1, 5))
                for _ in range(rng.randint(0, 4)):
                    msg = await subscriber.receive(timeout=0.5)
                    if msg is None:
                        break
                    assert isinstance(msg.body, str)
                    assert msg.body not in acked[name], f"{name} got {msg.body} again after its ack"
                    if rng.random() < 0.7:
                        await msg.acknowledge()  # CLIENT: acks this one and every one before it
                        index = expected[name].index(msg.body)
                        acked[name].update(expected[name][: index + 1])
                        del expected[name][: index + 1]
                open_conns.append(conn)
        batch = [f"m{sent + i}" for i in range(rng.randint(0, 8))]
        sent += len(batch)
        await publish(broker, batch)
        for name in names:
            expected[name].extend(batch)
        await broker.stop()  # a crash or a SIGTERM: the connections never leave first
        for conn in open_conns:
            await conn.close()
        broker = Broker(store=store, clock=ManualClock(autojump=True))
        await broker.start()
    async with broker:
        for name in names:
            got = await drain(broker, name)
            assert got == expected[name], f"seed {seed}: {name} lost or reordered"
