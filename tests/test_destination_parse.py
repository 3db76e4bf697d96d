"""``Destination.parse`` keeps what it parsed (message.py): the kept answer is the one a fresh parse gives, a bad
name is refused every time, and the cache stays bounded."""

from __future__ import annotations

import pytest

from minibroker import Destination
from minibroker import message as message_module
from minibroker.errors import InvalidDestination

NAMES = [
    "orders",
    "queue://orders",
    "topic://prices.eu",
    "temp-queue://ID:x-1:1:1",
    "temp-topic://ID:x-1:1:2",
    "qa,qb",
    "queue://qa,topic://tb",
    "VirtualTopic.Orders",
]


@pytest.mark.parametrize("text", NAMES)
def test_a_kept_destination_is_the_one_a_fresh_parse_gives(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(message_module, "_PARSED", {})
    first = Destination.parse(text)
    assert Destination.parse(text) is first  # kept
    monkeypatch.setattr(message_module, "_PARSED", {})
    fresh = Destination.parse(text)  # the reference: parsed again from nothing
    assert fresh == first and hash(fresh) == hash(first) and fresh is not first


@pytest.mark.parametrize("text", ["", " orders", "queue://", "a://b", "qa,,qb", "qa,queue://"])
def test_a_bad_name_is_refused_every_time(text: str) -> None:
    for _ in range(2):
        with pytest.raises(InvalidDestination):
            Destination.parse(text)
    assert text not in message_module._PARSED


def test_the_kept_destinations_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(message_module, "_PARSED", {})
    monkeypatch.setattr(message_module, "_PARSED_KEPT", 10)
    for i in range(25):
        Destination.parse(f"q{i}")
        assert len(message_module._PARSED) <= 10
    assert Destination.parse("q24") == Destination.queue("q24")
