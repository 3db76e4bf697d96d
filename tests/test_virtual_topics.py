"""Virtual topics: which queues get a copy of a virtual topic's message, the configurable names, and turning them
off (the default behaviour itself is replayed from the ``virtual_topic_*`` recordings of ActiveMQ 5.17.2)."""

from __future__ import annotations

import pytest

from minibroker import Broker, ManualClock, VirtualTopics
from minibroker.client import connect
from minibroker.config import ConfigError, parse_config
from minibroker.errors import InvalidConfiguration


class TestNaming:
    def test_the_default_names(self) -> None:
        virtual = VirtualTopics()
        assert virtual.is_virtual("VirtualTopic.Orders") and not virtual.is_virtual("Orders")
        queues = ["Consumer.A.VirtualTopic.Orders", "Consumer.B.VirtualTopic.Orders", "Consumer.A.VirtualTopic.Other"]
        queues += ["VirtualTopic.Orders", "Consumer.VirtualTopic.Orders", "X.A.VirtualTopic.Orders"]
        assert virtual.consumer_queues("VirtualTopic.Orders", queues) == queues[:2]
        assert virtual.is_consumer_queue("Consumer.A.VirtualTopic.Orders")
        assert not virtual.is_consumer_queue("Consumer.A.Orders")

    def test_other_names(self) -> None:
        virtual = VirtualTopics(name="events.>", prefix="svc.*.in.")
        assert virtual.is_virtual("events.orders") and not virtual.is_virtual("VirtualTopic.Orders")
        assert virtual.consumer_queues("events.orders", ["svc.billing.in.events.orders", "svc.x.events.orders"]) == [
            "svc.billing.in.events.orders"
        ]

    @pytest.mark.parametrize("prefix", ["Consumer.*", "Consumer..", ""])
    def test_a_prefix_must_be_names_ending_with_a_dot(self, prefix: str) -> None:
        with pytest.raises(InvalidConfiguration, match="prefix"):
            VirtualTopics(prefix=prefix)


async def fan_out(broker: Broker) -> tuple[int, int]:
    """Publish to VirtualTopic.Orders with a consumer queue open: (copies in the consumer queue, topic deliveries)."""
    async with await connect(broker) as conn:
        session = await conn.create_session()
        queue = await session.create_consumer("Consumer.A.VirtualTopic.Orders")
        topic = await session.create_consumer("topic://VirtualTopic.Orders")
        await (await session.create_producer("topic://VirtualTopic.Orders")).send("m1")
        on_topic = await topic.receive(timeout=1)
        on_queue = await queue.receive(timeout=1)
        return int(on_queue is not None), int(on_topic is not None)


async def test_on_by_default_and_off_when_asked() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker:
        assert await fan_out(broker) == (1, 1)
    async with Broker(clock=ManualClock(autojump=True), virtual_topics=None) as broker:
        assert await fan_out(broker) == (0, 1)  # a plain topic, and Consumer.A... a plain queue


class TestConfig:
    def test_default_is_activemqs(self) -> None:
        assert parse_config({}).virtual_topics == VirtualTopics()

    def test_names_and_off(self) -> None:
        config = parse_config({"virtual_topics": {"name": "events.>", "prefix": "svc.*."}})
        assert config.virtual_topics == VirtualTopics("events.>", "svc.*.")
        assert config.broker_kwargs()["virtual_topics"] == VirtualTopics("events.>", "svc.*.")
        assert parse_config({"virtual_topics": {"enabled": False}}).virtual_topics is None

    @pytest.mark.parametrize(
        ("table", "key"),
        [({"prefix": "svc"}, "virtual_topics.prefix"), ({"enabeld": False}, "virtual_topics.enabeld")],
    )
    def test_mistakes_name_the_key(self, table: dict[str, object], key: str) -> None:
        with pytest.raises(ConfigError) as info:
            parse_config({"virtual_topics": table})
        assert info.value.key == key


@pytest.mark.parametrize(
    ("stored", "lookup", "found"),
    [
        ("Consumer.B.VirtualTopic.>", "Consumer.*.VirtualTopic.orders", True),
        ("Consumer.*.VirtualTopic.orders", "Consumer.*.VirtualTopic.orders", True),
        ("Consumer.C.*.orders", "Consumer.*.VirtualTopic.orders", True),
        ("Consumer.C.*.orders", "Consumer.*.VirtualTopic.prices", False),
        ("Consumer.B.VirtualTopic.orders.eu", "Consumer.*.VirtualTopic.orders", False),
        ("Consumer.B", "Consumer.*.VirtualTopic.orders", False),
    ],
)
def test_a_queue_named_by_a_wildcard_is_found_as_activemqs_destination_map_finds_it(
    stored: str, lookup: str, found: bool
) -> None:
    """issue 30, item 4: which literal wildcard-named queues a virtual topic's lookup of its consumer queues finds."""
    from minibroker._core.virtual import patterns_overlap

    assert patterns_overlap(stored, lookup) is found
