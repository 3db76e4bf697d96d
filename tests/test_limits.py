"""Per-connection limits (issue 15, item 4): one connection cannot hold more consumers or open transactions than the
broker allows, in-process and over TCP, and the refusal changes nothing else."""

from __future__ import annotations

import asyncio

import pytest
from support.transports import TRANSPORTS, connect_to

from minibroker import Broker, ManualClock
from minibroker.client import AckMode
from minibroker.config import ConfigError, parse_config
from minibroker.errors import InvalidConfiguration, LimitExceeded
from minibroker.limits import ConnectionLimits


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_consumers_past_the_limit_are_refused(transport: str) -> None:
    limits = ConnectionLimits(max_consumers=3)
    async with Broker(clock=ManualClock(autojump=True), connection_limits=limits) as broker:
        conn = await connect_to(broker, transport)
        session = await conn.create_session()
        consumers = [await session.create_consumer(f"q{i}") for i in range(3)]
        with pytest.raises(LimitExceeded, match=r"Can't add consumer on connection .*: at maximum limit: 3"):
            await session.create_consumer("one-too-many")
        await consumers[0].close()
        await session.create_consumer("now-fine")  # a closed consumer frees its place
        other = await connect_to(broker, transport)  # the limit is per connection
        await (await other.create_session()).create_consumer("q0")
        assert broker.queue("q0").consumers == 1 and not broker.queue("one-too-many").exists
        await other.close()
        await conn.close()


async def test_open_transactions_past_the_limit_are_refused(transport: str = "memory") -> None:
    """In-process the refusal is the send's error. (Over TCP a BEGIN is not waited for, as ActiveMQ's is not: the
    refusal comes back asynchronously and the broker holds no more than the limit either way.)"""
    limits = ConnectionLimits(max_transactions=2)
    async with Broker(clock=ManualClock(autojump=True), connection_limits=limits) as broker:
        conn = await connect_to(broker, transport)
        sessions = [await conn.create_session(AckMode.SESSION_TRANSACTED) for _ in range(3)]
        producers = [await s.create_producer("tx") for s in sessions]
        await producers[0].send("a")
        await producers[1].send("b")
        with pytest.raises(LimitExceeded, match="at maximum limit: 2 open transactions"):
            await producers[2].send("c")
        await sessions[0].commit()  # an ended transaction frees its place
        await producers[2].send("c")
        await sessions[2].commit()
        assert sorted(m.body for m in broker.queue("tx").browse()) == ["a", "c"]
        await conn.close()


async def test_producers_past_the_limit_are_refused() -> None:
    """In-process the refusal is create_producer's error. (Over TCP a producer's coming is not waited for: the refusal
    comes back asynchronously, and the broker tracks no more than the limit either way.)"""
    limits = ConnectionLimits(max_producers=2)
    async with Broker(clock=ManualClock(autojump=True), connection_limits=limits) as broker:
        conn = await connect_to(broker, "memory")
        session = await conn.create_session()
        producers = [await session.create_producer(f"q{i}") for i in range(2)]
        with pytest.raises(LimitExceeded, match=r"Can't add producer on connection .*: at maximum limit: 2"):
            await session.create_producer("one-too-many")
        await producers[0].close()
        await (await session.create_producer("now-fine")).send("m")  # a closed producer frees its place
        assert broker.queue("now-fine").size == 1
        await conn.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_composite_past_the_part_limit_is_refused_and_one_at_it_works(transport: str) -> None:
    """issue 31: ActiveMQ takes composites of any size (20,000 parts recorded with the oracle); minibroker bounds
    the parts one command may name, loudly, naming the limit."""
    limits = ConnectionLimits(max_composite_parts=3)
    async with Broker(clock=ManualClock(autojump=True), connection_limits=limits) as broker:
        conn = await connect_to(broker, transport)
        session = await conn.create_session()
        with pytest.raises(LimitExceeded, match=r"at most 3 parts, not 4: qa,qb,qc,qd") as refused:
            await session.create_consumer("qa,qb,qc,qd")
        if transport == "memory":  # (an error frame carries the code and the text)
            assert refused.value.limit == "max_composite_parts" and refused.value.maximum == 3
        producer = await session.create_producer()
        with pytest.raises(LimitExceeded, match="at most 3 parts, not 4"):
            await producer.send("m", destination="qa,qb,qc,qd")
        assert not any(broker.queue(name).exists for name in ("qa", "qb", "qc", "qd"))  # nothing half-done
        consumer = await session.create_consumer("qa,qb,qc")
        await producer.send("m", destination="qa,qb,qc")
        got = [await consumer.receive(timeout=1) for _ in range(3)]
        assert [m.body for m in got if m is not None] == ["m", "m", "m"]
        await conn.close()


def test_limits_are_configured_and_checked() -> None:
    config = parse_config(
        {
            "limits": {
                "max_consumers_per_connection": 5,
                "max_transactions_per_connection": 7,
                "max_producers_per_connection": 9,
                "max_composite_parts": 11,
            }
        }
    )
    assert config.broker_kwargs()["connection_limits"] == ConnectionLimits(5, 7, 9, 11)
    with pytest.raises(ConfigError) as info:
        parse_config({"limits": {"max_composite_parts": 0}})
    assert info.value.key == "limits.max_composite_parts"
    with pytest.raises(ConfigError) as info:
        parse_config({"limits": {"max_consumers_per_connection": 0}})
    assert info.value.key == "limits.max_consumers_per_connection"
    with pytest.raises(InvalidConfiguration):
        ConnectionLimits(max_transactions=0)


async def test_a_slow_topic_subscriber_keeps_the_1000_newest_by_default() -> None:
    """issue 15, item 11: ActiveMQ's stock pending-message limit (1000) on topics: a subscriber that does not read
    cannot make the broker keep every message; the oldest waiting ones are discarded, the newest kept."""
    from minibroker import Broker, ManualClock
    from minibroker.client import connect

    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        slow = await session.create_consumer("topic://prices?consumer.prefetchSize=1")
        producer = await session.create_producer("topic://prices")
        for i in range(1005):
            await producer.send(f"p{i}", persistent=False)
        bodies = [(await slow.receive(timeout=1)).body for _ in range(1001)]  # type: ignore[union-attr]
        assert bodies == ["p0", *(f"p{i}" for i in range(5, 1005))]
        assert await slow.receive(timeout=0.1) is None
        assert [record.body for record in broker.dead_letters()] == ["p1", "p2", "p3", "p4"]  # dropped: non-persistent


async def test_the_pending_limit_is_a_topic_policy() -> None:
    import tomllib

    from minibroker.config import parse_config

    config = parse_config(tomllib.loads('[destinations."topic://>"]\npending_message_limit = -1\n'))
    assert config.policies["topic://>"].pending_message_limit == -1


async def test_the_system_memory_limit_holds_every_queue_s_producers() -> None:
    """issue 15, item 11: a broker-wide memory limit (ActiveMQ's systemUsage, 1 GiB by default): past it, sends to
    any queue wait (or fail under send_fail_if_no_space) until a consumer frees memory."""
    from minibroker import Broker, DestinationPolicy, ManualClock
    from minibroker.client import connect

    policies = {"fast-fail": DestinationPolicy(send_fail_if_no_space=True)}
    async with (
        Broker(clock=ManualClock(autojump=True), system_memory_limit=2000, policies=policies) as broker,
        await connect(broker) as conn,
    ):
        session = await conn.create_session()
        await (await session.create_producer("a")).send("x" * 1000)
        await (await session.create_producer("b")).send("y" * 1000)
        assert broker.core.usage.full
        with pytest.raises(LimitExceeded, match="Usage Manager Memory Limit reached"):
            await (await session.create_producer("fast-fail")).send("z")
        waiting = asyncio.ensure_future((await session.create_producer("b")).send("later"))
        await broker.settled()
        assert not waiting.done() and broker.waiting_producers == 1
        assert (await (await session.create_consumer("a")).receive(timeout=1)) is not None  # frees 1 KB
        await asyncio.wait_for(waiting, 5)
        assert broker.queue("b").size == 2 and not broker.core.usage.full


def test_the_system_memory_limit_is_a_broker_key() -> None:
    import tomllib

    config = parse_config(tomllib.loads('[broker]\nsystem_memory_limit = "64 MiB"\n'))
    assert config.broker_kwargs()["system_memory_limit"] == 64 * 1024 * 1024


async def test_transacted_sends_count_against_the_memory_limit_from_the_send() -> None:
    """issue 15 (medium): a transaction could put ten times a queue's memory limit into it, its sends counting only
    at the commit; as in ActiveMQ they count from the send, and a rollback gives the room back."""
    from minibroker import DestinationPolicy

    policies = {"tx": DestinationPolicy(memory_limit=2_000, send_fail_if_no_space=True)}
    async with Broker(clock=ManualClock(autojump=True), policies=policies) as broker:
        conn = await connect_to(broker, "memory")
        session = await conn.create_session(AckMode.SESSION_TRANSACTED)
        producer = await session.create_producer("tx")
        sent = 0
        with pytest.raises(LimitExceeded, match="Usage Manager Memory Limit reached on queue://tx"):
            for _ in range(20):
                await producer.send("x" * 600)
                sent += 1
        assert sent == 4 and broker.queue("tx").size == 0  # the 4th of ~664 bytes passes 2,000; nothing committed yet
        await session.rollback()
        await producer.send("x" * 600)  # the room is back
        await session.commit()
        assert broker.queue("tx").size == 1
        await conn.close()
