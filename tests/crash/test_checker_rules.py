"""The checker's one exception to "repeats", held to ActiveMQ's rule (checker.py; recorded in
``tests/differential/features/durable_close_after_transacted_send_*``): a consumer that closes gives back its
unacked messages, and only those numbered up to the last one it handed out come back marked redelivered."""

from __future__ import annotations

from crash.checker import last_broker_seq_handed, returned_after_last_delivered
from crash.model import Delivery


def delivery(consumer: str, body: str, seq: int | None, at: int, redelivered: bool = False) -> Delivery:
    return Delivery("durable:c:s", body, 0, consumer, at, redelivered, 0.0, seq)


# the recording's shape: m1 (a transacted send, numbered 7) is dispatched after m2 (10) and m3 (13)
FIRST = [delivery("d1#1", "m2", 10, 1), delivery("d1#1", "m3", 13, 2), delivery("d1#1", "m1", 7, 3)]


def test_a_message_numbered_after_the_last_delivered_one_may_return_unmarked() -> None:
    last = last_broker_seq_handed([*FIRST, delivery("d1#2", "m2", 10, 4)])
    assert last["d1#1"] == 7  # the last one handed out, not the highest
    assert returned_after_last_delivered(FIRST[0], delivery("d1#2", "m2", 10, 4), last)
    assert returned_after_last_delivered(FIRST[1], delivery("d1#2", "m3", 13, 5), last)


def test_a_message_numbered_up_to_the_last_delivered_one_must_return_marked() -> None:
    last = last_broker_seq_handed(FIRST)
    assert not returned_after_last_delivered(FIRST[2], delivery("d1#2", "m1", 7, 4), last)


def test_the_exception_needs_another_consumer_and_a_known_number() -> None:
    last = last_broker_seq_handed(FIRST)
    assert not returned_after_last_delivered(FIRST[0], delivery("d1#1", "m2", 10, 4), last)  # the same consumer
    unnumbered = delivery("d3#1", "m2", None, 1)  # STOMP and MQTT do not tell the broker sequence id
    assert not returned_after_last_delivered(unnumbered, delivery("d3#2", "m2", None, 2), {"d3#1": None})
