"""What a topic keeps, in objects CPython's collector walks on every full collection (issue 31: with 50,000 MQTT
retained topics, those pauses stalled every client). Each structure here has a test that fails when the extra
objects come back, and the compact form is checked against what it stands for."""

from __future__ import annotations

import gc
from collections import OrderedDict

import attrs

from minibroker import Destination, Message
from minibroker._core.effects import Dispatch
from minibroker._core.subscription import Subscription
from minibroker._core.topic import NOTHING_WAITING, Topic


def full() -> Message:
    """A message with every field set to something other than its default."""
    return Message(
        "ID:r1",
        Destination.topic("r.1"),
        b"v",
        {"ActiveMQ.Retained": True, "n": 3, "s": "x"},
        priority=7,
        persistent=False,
        timestamp=1.5,
        expiration=9.5,
        correlation_id="c",
        reply_to=Destination.queue("replies"),
        type="t",
        group_id="g",
        group_seq=2,
        producer_id="ID:p",
        producer_seq=4,
        original_destination=Destination.topic("elsewhere"),
    )


def test_the_retained_message_comes_back_field_for_field() -> None:
    t = Topic(Destination.topic("r.1"))
    message = full()
    t.retained = message
    again = t.retained
    assert again is not None and again is not message
    assert attrs.asdict(again, recurse=False) == attrs.asdict(message, recurse=False)
    t.retained = None
    assert t.retained is None


def test_a_plain_retained_message_is_kept_in_nothing_the_collector_walks() -> None:
    t = Topic(Destination.topic("r.1"))
    t.retained = Message("ID:r1", Destination.topic("r.1"), b"v", {"ActiveMQ.Retained": True})
    gc.collect(0)  # the properties' tuple first,
    gc.collect(1)  # then the record: let go of before it reaches the old generation that full collections walk
    assert not gc.is_tracked(t._retained)


def test_a_retained_message_of_another_topic_is_refused() -> None:
    t = Topic(Destination.topic("r.1"))
    try:
        t.retained = Message("ID:r2", Destination.topic("r.2"), b"v")
    except ValueError as exc:
        assert "ID:r2" in str(exc)
    else:
        raise AssertionError("kept a message of another topic")


def wildcard_subscriber(t: Topic) -> Subscription:
    sub = Subscription(1, 1, Destination.topic("r.>"), t, prefetch=10)
    sub.waiting_in = OrderedDict()
    return sub


def test_a_wildcard_subscriber_with_nothing_waiting_leaves_the_topic_nothing_to_track() -> None:
    """Its place on the topic is its consumer id and the shared empty marker: the dict holds only ints and an
    empty tuple, which CPython's collector stops tracking (a deque there, or the subscription as the key, was one
    more object per topic for every full collection to walk)."""
    registry: dict[int, Subscription] = {}
    t = Topic(Destination.topic("r.1"), subscriptions=registry)
    wild = registry[1] = wildcard_subscriber(t)
    t.add_subscription(wild)
    assert t.waiting(wild) is NOTHING_WAITING and t.subscriptions == [wild] and t.has_subscriber(wild)
    gc.collect()
    assert not gc.is_tracked(t.pending)
    t.publish(Message("ID:1", Destination.topic("r.1"), b"v"), publisher_connection=2)
    assert len(t.waiting(wild)) == 1  # a deque while something waits
    out: list[Dispatch] = []
    t.dispatch(0.0, out, [])
    assert len(out) == 1 and t.waiting(wild) is NOTHING_WAITING  # and none once it has gone out
    t.remove_subscription(wild)
    assert not t.pending and not t.subscriptions and not t.has_subscriber(wild)
