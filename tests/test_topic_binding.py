"""A wildcard topic subscription over many topics joins them a step at a time (issue 31, item 3; binding.py): the
call that subscribes does one step of work, the rest runs between other clients' calls, and the subscriber sees
what it would have seen bound at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from minibroker import Broker, BrokerConnection, ConsumerInfo, Destination, ManualClock, Message
from minibroker._core.binding import BIND_STEP

TOPICS = 2 * BIND_STEP + 500


def retain(i: int) -> Message:
    return Message(f"ID:r{i}", Destination.topic(f"r.{i}"), f"v{i}", {"ActiveMQ.Retain": True})


def joined(broker: Broker, consumer_id: int) -> int:
    return sum(1 for t in broker.core.topics.values() if consumer_id in t.pending)


async def until_bound(broker: Broker) -> None:
    for _ in range(100):
        if not broker.core.binding:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"still binding: {broker.core.pending_work()}")


@pytest.fixture
async def retained() -> AsyncIterator[tuple[Broker, BrokerConnection]]:
    """A broker with TOPICS retained topics (r.0, r.1, ...), and a connection to it."""
    async with Broker(clock=ManualClock(), history_limit=0) as broker:
        conn = broker.connect()
        for i in range(TOPICS):
            conn.send(retain(i))
        yield broker, conn


async def test_the_subscribing_call_joins_one_step_and_the_loop_the_rest(
    retained: tuple[Broker, BrokerConnection],
) -> None:
    broker, conn = retained
    got: list[Any] = []
    sub = conn.add_consumer(ConsumerInfo(Destination.topic("r.>"), prefetch=TOPICS, retroactive=True), got.append)
    assert joined(broker, sub) == BIND_STEP  # one step's work in the call, not a pass over every topic
    assert any("still joining" in line for line in broker.core.pending_work())
    await until_bound(broker)
    assert joined(broker, sub) == TOPICS
    assert sorted(d.message.body for d in got) == sorted(f"v{i}" for i in range(TOPICS))


async def test_a_publish_to_a_topic_not_joined_yet_reaches_the_subscriber_after_its_retained_message(
    retained: tuple[Broker, BrokerConnection],
) -> None:
    broker, conn = retained
    got: list[Any] = []
    sub = conn.add_consumer(ConsumerInfo(Destination.topic("r.>"), prefetch=TOPICS, retroactive=True), got.append)
    last = f"r.{TOPICS - 1}"
    assert sub not in broker.core.topics[last].pending
    conn.send(Message("ID:new", Destination.topic(last), "new"))
    mine = [d.message.body for d in got if d.message.destination.name == last]
    assert mine == [f"v{TOPICS - 1}", "new"]  # as if it had been joined at once
    await until_bound(broker)
    assert [d.message.body for d in got if d.message.destination.name == last] == [f"v{TOPICS - 1}", "new"]


async def test_a_subscriber_that_leaves_while_joining_stops_joining(retained: tuple[Broker, BrokerConnection]) -> None:
    broker, conn = retained
    sub = conn.add_consumer(ConsumerInfo(Destination.topic("r.>"), prefetch=10, retroactive=True), lambda d: None)
    conn.remove_consumer(sub)
    assert not broker.core.binding
    await asyncio.sleep(0)
    assert joined(broker, sub) == 0


async def test_a_retroactive_subscriber_is_joined_at_its_own_pace(retained: tuple[Broker, BrokerConnection]) -> None:
    """The next step waits while BIND_STEP topics hold retained messages the subscriber has not taken: the loop is
    not kept busy, the broker counts as settled, and the topics not joined yet still count it as their subscriber."""
    broker, conn = retained
    got: list[Any] = []
    sub = conn.add_consumer(ConsumerInfo(Destination.topic("r.>"), prefetch=10, retroactive=True), got.append)
    for _ in range(10):
        await asyncio.sleep(0)
    # a second step joined while fewer than BIND_STEP topics held what it had not taken; then the rest waits
    assert joined(broker, sub) == 2 * BIND_STEP < TOPICS
    assert broker.core.binding and not broker.core.binding_ready()
    assert not any("still joining" in line for line in broker.core.pending_work())
    last = broker.topic_statistics(f"r.{TOPICS - 1}")
    assert last is not None and last.consumers == 1  # not joined yet, counted as if it were
    acked = 0
    for _ in range(100 * TOPICS):
        while acked < len(got):
            conn.ack_one(sub, got[acked].message.message_id)
            acked += 1
        if acked == TOPICS:
            break
        await asyncio.sleep(0)
    assert sorted(d.message.body for d in got) == sorted(f"v{i}" for i in range(TOPICS))
    assert not broker.core.binding and joined(broker, sub) == TOPICS
