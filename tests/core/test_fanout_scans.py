"""Work that must not grow with the broker's size (issue 31): count the topics a dispatch visits, not the time.

A wildcard topic subscriber's acks used to dispatch every topic it reads (and test every topic of the broker
against its pattern); they dispatch only the topics where something waits for it, until its window is full. A
subscriber of one topic's acks used to visit every subscriber of the topic; they dispatch only its own copies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from minibroker import AckType, Broker, ConsumerInfo, Destination, Dispatch, ManualClock, Message, MessageAck
from minibroker._core.broker import BrokerCore


@pytest.fixture
def visits(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    seen: list[str] = []
    original = BrokerCore._dispatch_topic

    def counting(self: BrokerCore, t: object, *only: object) -> None:
        seen.append(t.destination.name)  # type: ignore[attr-defined]
        original(self, t, *only)  # type: ignore[arg-type]

    monkeypatch.setattr(BrokerCore, "_dispatch_topic", counting)
    yield seen


@pytest.mark.parametrize("other_topics", [0, 900])
async def test_a_wildcard_subscriber_s_acks_visit_only_its_waiting_topics(visits: list[str], other_topics: int) -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        conn = broker.connect()
        for i in range(other_topics):  # topics that have subscribers and nothing to do with data.>
            conn.add_consumer(ConsumerInfo(Destination.topic(f"other.{i}"), prefetch=10), lambda d: None)
        got = []
        wild = conn.add_consumer(ConsumerInfo(Destination.topic("data.>"), prefetch=1), got.append)
        for i in range(50):
            conn.send(Message(f"ID:m{i}", Destination.topic(f"data.{i % 5}"), f"m{i}"))
        visits.clear()
        while len(got) < 50:
            dispatch = got[-1]
            assert dispatch.message is not None
            assert conn.ack_one(wild, dispatch.message.message_id)
        # each topic in order; across topics, the order they joined the subscription (multi.py)
        assert sorted(str(d.message.body) for d in got if d.message) == sorted(f"m{i}" for i in range(50))
        assert len(visits) <= 2 * 50  # before: every data topic per ack, and every topic tested per ack
        conn.close()


async def test_retained_messages_are_replayed_without_a_scan_per_message(visits: list[str]) -> None:
    """An MQTT ``#`` subscriber over many retained topics (before: 1,000 retained took 4 s of CPU, every ack
    visiting every topic)."""
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        conn = broker.connect()
        for i in range(1000):
            message = Message(f"ID:r{i}", Destination.topic(f"r.{i}"), b"v", {"ActiveMQ.Retain": True})
            conn.send(message)
        got = []
        sub = conn.add_consumer(ConsumerInfo(Destination.topic("r.>"), prefetch=10, retroactive=True), got.append)
        visits.clear()
        acked = 0
        for _ in range(10_000):  # past BIND_STEP topics, the rest join between other work (binding.py)
            while acked < len(got):
                message = got[acked].message
                assert message is not None
                assert conn.ack_one(sub, message.message_id)
                acked += 1
            if acked == 1000:
                break
            await asyncio.sleep(0)
        assert len(got) == 1000
        assert len(visits) <= 3 * 1000
        conn.close()


async def test_a_composite_consumer_looks_its_parts_up_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A composite of 2,000 queues: each part is looked up by name, the composite parsed once (before: every queue
    tested against the unparsed 2,000-part name, 6.5 s of CPU; now about 50 ms)."""
    from minibroker._core import broker as core_module

    tests: list[str] = []
    original = core_module.reads

    def counting(destination: Destination, name: str) -> bool:
        tests.append(name)
        return original(destination, name)

    monkeypatch.setattr(core_module, "reads", counting)
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        conn = broker.connect()
        for i in range(2000):
            conn.send(Message(f"ID:{i}", Destination.queue(f"q{i}"), f"m{i}"))
        got = []
        name = ",".join(f"q{i}" for i in range(0, 2000, 2))  # every other queue
        conn.add_consumer(ConsumerInfo(Destination.queue(name), prefetch=5000), got.append)
        assert len(got) == 1000
        assert [d.message.body for d in got[:3] if d.message] == ["m0", "m2", "m4"]
        assert tests == []  # not one pattern test: the parts were looked up
        conn.close()


@pytest.mark.parametrize("topic", ["prices", "prices.>"])
async def test_individual_acks_in_order_never_scan_the_in_flight_record(
    monkeypatch: pytest.MonkeyPatch, topic: str
) -> None:
    """A topic subscriber's INDIVIDUAL acks (an MQTT subscriber's, one per message) count each message on its topic
    from the front of the subscription's in-flight record. Counting it once in the ack and again in the consume made
    the consume search the whole record for a message no longer there, per ack: MQTT's broker CPU per message had
    doubled (27 -> 59 us at QoS 0, mqtt_bench.py)."""
    from minibroker._core import topic as topic_module

    scans = []
    original = topic_module.count_acked

    def counting(record, message_id, *, from_oldest=False):  # type: ignore[no-untyped-def]
        if record and record[0][0] != message_id and not from_oldest:
            scans.append(message_id)
        return original(record, message_id, from_oldest=from_oldest)

    monkeypatch.setattr(topic_module, "count_acked", counting)
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        conn = broker.connect()
        got: list[Dispatch] = []
        sub = conn.add_consumer(ConsumerInfo(Destination.topic(topic), prefetch=500), got.append)
        for i in range(300):
            conn.send(Message(f"ID:m{i}", Destination.topic("prices"), f"m{i}"))
        for dispatch in list(got):
            assert dispatch.message is not None
            conn.ack(MessageAck(sub, AckType.INDIVIDUAL, dispatch.message.message_id, dispatch.message.message_id, 1))
        assert scans == []
        stats = broker.topic_statistics("prices")
        assert stats is not None and (stats.dequeued, stats.inflight) == (300, 0)
        conn.close()


def _fan_out(subscribers: int, messages: int, order: int, reads: str = "fan.a") -> list[tuple[int, str]]:
    """``subscribers`` of topic ``reads`` (prefetch 1 to 3, one with a selector, one INDIVIDUAL acker) get
    ``messages``, published to fan.a and fan.b in turn; they ack in an order that depends on ``order``; the
    dispatches, in the order the core made them."""
    core = BrokerCore(ManualClock())
    conn = core.add_connection()
    subs = [
        core.add_consumer(
            conn, ConsumerInfo(Destination.topic(reads), prefetch=1 + i % 3, selector="n > 2" if i == 4 else None)
        )
        for i in range(subscribers)
    ]
    made: list[tuple[int, str]] = []
    held: dict[int, list[str]] = {sub: [] for sub in subs}
    for m in range(messages):
        core.send(conn, Message(f"ID:{m}", Destination.topic("fan." + "ab"[m % 2]), "x", {"n": m}))
        for _ in range(2):  # acks interleaved with publishes: windows open and fill
            for d in core.output:
                made.append((d.consumer_id, d.message.message_id))
                held[d.consumer_id].append(d.message.message_id)
            core.output = []
            for k, sub in enumerate(subs):
                if held[sub] and (k + m + order) % 3:
                    message_id = held[sub].pop(0)
                    if k == 1:
                        core.ack(conn, MessageAck(sub, AckType.INDIVIDUAL, message_id, message_id))
                    else:
                        assert core.ack_one(conn, sub, message_id)
    return made


@pytest.mark.parametrize("reads", ["fan.a", "fan.>", "fan.a,fan.b"])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_an_ack_dispatching_only_its_subscriber_gives_what_the_whole_topic_s_dispatch_gave(
    order: int, reads: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For a subscriber of one topic, of a wildcard and of a composite."""
    fast = _fan_out(12, 20, order, reads)
    # the reference: every ack dispatches its whole destination, every topic for all its subscribers
    whole_topic = BrokerCore._dispatch_topic
    monkeypatch.setattr(BrokerCore, "_dispatch_for", lambda self, sub: self._dispatch_destination(sub.destination))
    monkeypatch.setattr(BrokerCore, "_dispatch_topic", lambda self, t, only=None: whole_topic(self, t))
    reference = _fan_out(12, 20, order, reads)
    assert fast == reference and len(fast) > 60


def test_a_subscriber_s_ack_visits_its_own_copies_not_every_subscriber(monkeypatch: pytest.MonkeyPatch) -> None:
    """A topic with 300 subscribers: before, each of their acks visited all 300 (a message cost 300 x 300 steps)."""
    from minibroker._core.topic import Topic

    visited = [0]
    whole = Topic.dispatch

    def counting(self: Topic, *args: object) -> None:
        visited[0] += len(self.pending)
        whole(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Topic, "dispatch", counting)
    _fan_out(300, 3, 0)
    assert visited[0] <= 3 * 300  # the three publishes' dispatches, none per subscribe or ack (before: 300 more each)
