"""``BrokerCore.send_minted`` (the in-process hot path, issue 45) against ``send``, its reference: the same sends,
acks and consumers in either give the same dispatches, counters and history; and the duplicate check it leaves off
comes on, exactly, for the first message whose id was not minted for its send."""

from __future__ import annotations

import random

import pytest

from minibroker._core.broker import BrokerCore
from minibroker._core.commands import ConsumerInfo
from minibroker._core.effects import Dispatch
from minibroker.message import Destination, Message

QUEUES = [Destination.queue(name) for name in ("a", "b")]


class Clock:
    """The core's clock: moved by the test."""

    def __init__(self) -> None:
        self.time = 1000.0

    def now(self) -> float:
        return self.time


def shown(dispatch: Dispatch) -> tuple[object, ...]:
    """A dispatch as plain values (messages compare by identity, and each run builds its own)."""
    message = dispatch.message
    content = None if message is None else (message.message_id, message.destination, message.body)
    return (*dispatch._replace(message=None), content)


def run(seed: int, minted: bool) -> list[object]:
    """A seeded mix of sends (to queues that exist or not, with properties, a time to live, to a topic), consumers
    and acks: everything the core answered, in order."""
    rng = random.Random(seed)
    clock = Clock()
    core = BrokerCore(clock, history_limit=rng.choice([0, 3, 50]))
    conn = core.add_connection()
    consumers: list[int] = []
    seen: list[object] = []
    for i in range(rng.randint(1, 200)):
        roll = rng.random()
        if roll < 0.05:
            destination = rng.choice(QUEUES)
            consumers.append(core.add_consumer(conn, ConsumerInfo(destination, rng.choice([1, 2, 10]))))
        elif roll < 0.3 and core.output:
            dispatch = core.output.pop(rng.randrange(len(core.output)))
            seen.append(shown(dispatch))
            if dispatch.message is not None and rng.random() < 0.8:
                seen.append(core.ack_one(conn, dispatch.consumer_id, dispatch.message.message_id))
        else:
            destination = rng.choice([*QUEUES, Destination.queue(f"new{i}"), Destination.topic("t")])
            message = Message(
                f"ID:minted:{i}",
                destination,
                "x" * rng.randint(0, 5),
                {"k": i} if rng.random() < 0.2 else {},
                expiration=clock.time + 1 if rng.random() < 0.1 else 0.0,
            )
            if minted:
                core.send_minted(conn, message)
            else:
                core.send(conn, message)
        if rng.random() < 0.05:
            clock.time += 0.5
            core.tick()
    seen.extend(shown(dispatch) for dispatch in core.output)
    for name in sorted(core.queues):
        seen.append(core.queues[name].statistics())
    history = core.history
    seen.extend((mid, history.of(mid)) for mid in history.message_ids())
    return seen


@pytest.mark.parametrize("seed", range(30))
def test_send_minted_gives_what_send_gives(seed: int) -> None:
    assert run(seed, minted=True) == run(seed, minted=False)


def test_a_queue_of_minted_ids_keeps_no_set_until_another_message_comes() -> None:
    core = BrokerCore(Clock(), history_limit=0)
    conn = core.add_connection()
    queue = Destination.queue("q")
    core.send_minted(conn, Message("ID:1", queue, "one"))
    core.send_minted(conn, Message("ID:2", queue, "two"))
    q = core.queues["q"]
    assert q.held_ids is None
    core.send(conn, Message("ID:1", queue, "again"))  # not minted: the check comes on, and finds ID:1 held
    assert q.held_ids == {"ID:1", "ID:2"}
    core.send_minted(conn, Message("ID:3", queue, "three"))  # on from now on: minted ids are kept too
    assert q.held_ids == {"ID:1", "ID:2", "ID:3"}
    consumer = core.add_consumer(conn, ConsumerInfo(queue, 10))
    assert [d.message.body for d in core.output if d.message is not None] == ["one", "two", "three"]
    assert core.ack_one(conn, consumer, "ID:1")
    assert q.held_ids == {"ID:2", "ID:3"} and q.statistics().enqueued == 3
