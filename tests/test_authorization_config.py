"""``[[authorization]]`` reads as it behaves: ActiveMQ's ``queue``/``topic`` split (issue 43, item 4)."""

from __future__ import annotations

from typing import Any

import pytest

from minibroker.config import ConfigError, parse_config
from minibroker.message import Destination

USERS: dict[str, Any] = {"users": {"admin": {"password": "pw", "groups": ["admins"]}}}


def plugin(*entries: dict[str, Any]) -> Any:
    return parse_config({**USERS, "authorization": list(entries)}).auth


def test_queue_and_topic_in_one_entry_grant_both() -> None:
    """As ActiveMQ's ``authorizationEntry queue=">" topic=">"``: an admin granted everything may also send to the
    scheduler's management topic (what ``minibroker_clean`` needs)."""
    auth = plugin({"queue": ">", "topic": ">", "read": ["admins"], "write": ["admins"], "admin": ["admins"]})
    admin = auth.authenticate("admin", "pw")
    for destination in (Destination.queue("orders"), Destination.topic("ActiveMQ.Scheduler.Management")):
        for action in ("read", "write", "admin"):
            assert auth.allowed(admin, action, destination), (action, destination)


def test_topic_alone_grants_topics_only() -> None:
    auth = plugin({"topic": "prices.>", "read": ["admins"]})
    admin = auth.authenticate("admin", "pw")
    assert auth.allowed(admin, "read", Destination.topic("prices.eu"))
    assert not auth.allowed(admin, "read", Destination.queue("prices.eu"))


def test_destination_keeps_its_meaning() -> None:
    """Existing files still work: ``destination`` names queues unless written ``topic://``."""
    auth = plugin(
        {"destination": ">", "read": ["admins"]},
        {"destination": "topic://ActiveMQ.Advisory.>", "read": ["admins"]},
    )
    admin = auth.authenticate("admin", "pw")
    assert auth.allowed(admin, "read", Destination.queue("orders"))
    assert not auth.allowed(admin, "read", Destination.topic("orders"))
    assert auth.allowed(admin, "read", Destination.topic("ActiveMQ.Advisory.Queue"))


@pytest.mark.parametrize(
    ("entry", "key", "words"),
    [
        ({"read": ["admins"]}, "authorization.0.destination", "topic = "),
        ({"topic": "topic://prices.>"}, "authorization.0.topic", "without its domain"),
        ({"queue": ">", "temp": True}, "authorization.0.temp", "tempDestinationAuthorizationEntry"),
        ({"queue": "a..b"}, "authorization.0.queue", ""),
    ],
)
def test_mistakes_name_their_key(entry: dict[str, Any], key: str, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        plugin(entry)
    assert caught.value.key == key
    assert words in str(caught.value)
