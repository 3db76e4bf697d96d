"""An operator's removeQueue/removeTopic (``BrokerCore.remove_destination``): refused before anything changes while
something holds the destination, and whole when it goes (the Jolokia tests drive it over HTTP)."""

from __future__ import annotations

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, connect
from minibroker.errors import DestinationInUse
from minibroker.message import Destination


async def test_a_queue_an_open_transaction_sends_to_is_refused_and_keeps_its_messages() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer("queue://orders")
        await producer.send("kept")
        txn = await conn.create_session(AckMode.SESSION_TRANSACTED)
        await (await txn.create_producer("queue://orders")).send("pending")
        with pytest.raises(DestinationInUse, match="an open transaction"):
            broker.core.remove_destination(Destination.queue("orders"))
        assert [m.body for m in broker.queue("orders").browse()] == ["kept"]
        await txn.commit()
        assert [m.body for m in broker.queue("orders").browse()] == ["kept", "pending"]
        assert broker.core.remove_destination(Destination.queue("orders")) is True
        assert broker.queue_statistics("orders") is None
        assert broker.core.remove_destination(Destination.queue("orders")) is False


async def test_a_topic_with_a_subscriber_is_refused() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        await (await conn.create_session()).create_consumer("topic://news")
        with pytest.raises(DestinationInUse, match="subscriber"):
            broker.core.remove_destination(Destination.topic("news"))
        assert "news" in broker.core.topics
