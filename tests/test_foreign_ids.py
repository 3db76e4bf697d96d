"""Issue 15, item 2: an operation naming a consumer or transaction is resolved within the sending connection, in the
driver, so every edge gets it. A foreign id is an error, and the victim keeps its consumer, route and transaction."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from minibroker import (
    AckType,
    Broker,
    BrokerConnection,
    ConsumerInfo,
    Destination,
    ManualClock,
    Message,
    MessageAck,
    RealClock,
)
from minibroker._core.effects import Dispatch
from minibroker.client import connect
from minibroker.errors import IllegalStateError, MinibrokerError
from minibroker.plugins.server.tcp import start_server
from minibroker.transport.commands import RemoveConsumer
from minibroker.transport.tcp_link import TcpLink

ORDERS = Destination.queue("orders")


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    async with Broker(clock=ManualClock(autojump=True)) as running:
        yield running


def subscribe(broker: Broker, connection: BrokerConnection, got: list[Dispatch]) -> int:
    return connection.add_consumer(ConsumerInfo(ORDERS, prefetch=10), got.append)


class TestForeignConsumer:
    async def test_removing_another_connections_consumer_is_refused_and_the_victim_keeps_receiving(
        self, broker: Broker
    ) -> None:
        victim, attacker = broker.connect(), broker.connect()
        got: list[Dispatch] = []
        consumer = subscribe(broker, victim, got)
        with pytest.raises(MinibrokerError, match=f"consumer {consumer}") as info:
            attacker.remove_consumer(consumer)
        assert vars(info.value)["consumer_id"] == consumer
        victim.send(Message("id-after", ORDERS, "after"))
        assert [d.message.body for d in got if d.message is not None] == ["after"]

    async def test_acking_pulling_for_another_connections_consumer_is_refused(self, broker: Broker) -> None:
        victim, attacker = broker.connect(), broker.connect()
        got: list[Dispatch] = []
        consumer = subscribe(broker, victim, got)
        victim.send(Message("id-m1", ORDERS, "m1"))
        message_id = got[0].message.message_id if got[0].message else ""
        with pytest.raises(MinibrokerError):
            attacker.ack(MessageAck(consumer, AckType.STANDARD, message_id))
        assert attacker.ack_one(consumer, message_id) is False
        with pytest.raises(MinibrokerError):
            attacker.pull(consumer, -1)
        assert broker.queue_statistics("orders").inflight == 1  # type: ignore[union-attr]
        victim.ack(MessageAck(consumer, AckType.STANDARD, message_id))
        assert broker.queue_statistics("orders").inflight == 0  # type: ignore[union-attr]


class TestForeignTransaction:
    @pytest.mark.parametrize("operation", ["commit", "rollback"])
    async def test_ending_another_connections_transaction_is_refused(self, broker: Broker, operation: str) -> None:
        victim, attacker = broker.connect(), broker.connect()
        txn = victim.begin()
        victim.send(Message("id-held", ORDERS, "held"), txn)
        with pytest.raises(MinibrokerError, match=f"transaction {txn}"):
            getattr(attacker, operation)(txn)
        with pytest.raises(MinibrokerError, match=f"transaction {txn}"):
            attacker.send(Message("id-smuggled", ORDERS, "smuggled"), txn)
        assert broker.browse_all("orders") == []
        victim.commit(txn)
        assert [m.body for m in broker.browse_all("orders")] == ["held"]


async def test_over_tcp_a_foreign_remove_consumer_is_an_error_and_the_victim_keeps_receiving() -> None:
    async with Broker(clock=RealClock()) as broker:
        server = await start_server(broker, port=0)
        victim, attacker = await connect(server.url), await connect(server.url)
        try:
            consumer = await (await victim.create_session()).create_consumer("orders")
            link = attacker._link
            assert isinstance(link, TcpLink)
            with pytest.raises(IllegalStateError, match=f"consumer {consumer.consumer_id}"):
                await link.request(RemoveConsumer(consumer.consumer_id, -1))
            producer = await (await attacker.create_session()).create_producer("orders")
            await producer.send("still mine")
            received = await consumer.receive(timeout=5)
            assert received is not None and received.body == "still mine"
        finally:
            await attacker.close()
            await victim.close()
            await asyncio.wait_for(server.close(), 5)
