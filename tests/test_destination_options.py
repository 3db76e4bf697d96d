"""``?consumer.*`` options in a consumer's destination name, read as ActiveMQ's consumer reads them (issue 17;
recorded: feat_exclusive_consumer, feat_consumer_priority, feat_dest_option_prefetch)."""

from __future__ import annotations

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import connect
from minibroker.destination_options import ConsumerOptions, split_consumer_options
from minibroker.errors import InvalidConfiguration, UnsupportedFeature
from minibroker.message import Destination


class TestSplit:
    def test_a_plain_name_has_no_options(self) -> None:
        dest = Destination.queue("orders")
        assert split_consumer_options(dest) == (dest, ConsumerOptions())

    def test_known_options_are_read_and_the_name_is_the_part_before_the_question_mark(self) -> None:
        dest = Destination.queue(
            "orders?consumer.prefetchSize=5&consumer.priority=9&consumer.exclusive=true"
            "&consumer.noLocal=TRUE&consumer.dispatchAsync=false&consumer.selector=a%20%3D%201"
        )
        physical, options = split_consumer_options(dest)
        assert physical == Destination.queue("orders")
        assert options == ConsumerOptions(prefetch=5, priority=9, exclusive=True, selector="a = 1", no_local=True)

    def test_options_without_the_consumer_prefix_are_ignored(self) -> None:
        physical, options = split_consumer_options(Destination.queue("orders?producer.x=1"))
        assert physical == Destination.queue("orders") and options == ConsumerOptions()

    @pytest.mark.parametrize("query", ["consumer.prefechSize=5", "consumer.priority=high"])
    def test_an_option_that_cannot_be_set_fails_the_consumer(self, query: str) -> None:
        with pytest.raises(InvalidConfiguration, match=r"There are 1 consumer options that couldn't be set") as caught:
            split_consumer_options(Destination.queue(f"orders?{query}"))
        assert caught.value.value == f"queue://orders?{query}"

    @pytest.mark.parametrize("option", ["retroactive", "maximumPendingMessageLimit"])
    def test_options_minibroker_cannot_honour_are_refused(self, option: str) -> None:
        with pytest.raises(UnsupportedFeature) as caught:
            split_consumer_options(Destination.topic(f"prices?consumer.{option}=true"))
        assert caught.value.feature == f"destination-option-{option}"


async def test_the_client_applies_the_options() -> None:
    async with Broker(clock=ManualClock()) as broker:
        conn = await connect(broker)
        async with conn:
            session = await conn.create_session()
            consumer = await session.create_consumer(
                "orders?consumer.prefetchSize=0&consumer.exclusive=true&consumer.priority=7&consumer.selector=n%3D2"
            )
            assert consumer.info is not None
            info = consumer.info
            assert (info.destination, info.prefetch, info.exclusive, info.priority, info.selector) == (
                Destination.queue("orders"),
                0,
                True,
                7,
                "n=2",
            )
            assert broker.queue_names() == ["orders"]
            with pytest.raises(InvalidConfiguration):
                await session.create_consumer("orders?consumer.unknown=1")
