"""Advisories as ActiveMQ sends them over OpenWire: a bare message whose data structure is the object the advisory is
about (found by replaying the recorded corpus through the real client, tests/openwire_replay: the Java client read
minibroker's JSON text where ActiveMQ's ``getDataStructure()`` gives a ConsumerInfo, a RemoveInfo, ...)."""

from __future__ import annotations

from typing import Any

import pytest

from minibroker import Broker, ManualClock
from minibroker.advisory import (
    connection_advisory_topic,
    consumer_advisory_topic,
    expired_advisory_topic,
    producer_advisory_topic,
)
from minibroker.client import AckMode, ReceivedMessage, connect
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire.codec import decode_command, encode_command
from minibroker.plugins.openwire.messages import openwire_message


def on_the_wire(received: ReceivedMessage) -> ow.Message:
    """The command the converter dispatches for ``received``, through the codec and back."""
    command = openwire_message(received.message)
    decoded = decode_command(encode_command(command)[4:])  # after the size
    assert isinstance(decoded, ow.Message)
    return decoded


async def advisories(topic: str, act: Any, count: int, broker: Broker) -> list[ow.Message]:
    watcher = await connect(broker)
    session = await watcher.create_session(AckMode.AUTO_ACKNOWLEDGE)
    consumer = await session.create_consumer(topic)
    await act()
    out = []
    for _ in range(count):
        received = await consumer.receive(timeout=5)
        assert received is not None
        out.append(on_the_wire(received))
    await watcher.close()
    return out


async def test_consumer_advisories_carry_a_consumer_info_then_a_remove_info() -> None:
    async with Broker() as broker:
        other = await connect(broker)
        session = await other.create_session(AckMode.AUTO_ACKNOWLEDGE)

        async def come_and_go() -> None:
            consumer = await session.create_consumer("orders", selector="n > 1")
            await consumer.close()

        added, removed = await advisories(consumer_advisory_topic("orders"), come_and_go, 2, broker)
        await other.close()
    assert type(added) is ow.Message and added.content is None and added.type == "Advisory"
    info = added.data_structure
    assert isinstance(info, ow.ConsumerInfo)
    assert info.destination == ow.ActiveMQQueue("orders") and info.selector == "n > 1" and info.prefetch_size == 1000
    assert isinstance(info.consumer_id, ow.ConsumerId)
    assert isinstance(removed.data_structure, ow.RemoveInfo) and removed.data_structure.object_id == info.consumer_id


async def test_producer_and_connection_advisories_carry_their_infos() -> None:
    async with Broker() as broker:

        async def produce() -> None:
            conn = await connect(broker, client_id="app")
            session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
            producer = await session.create_producer("orders")
            await producer.close()
            await conn.close()

        produced, gone = await advisories(producer_advisory_topic("orders"), produce, 2, broker)
        connected, *_ = await advisories(connection_advisory_topic(), produce, 1, broker)
    assert isinstance(produced.data_structure, ow.ProducerInfo)
    assert produced.data_structure.destination == ow.ActiveMQQueue("orders")
    assert isinstance(gone.data_structure, ow.RemoveInfo)
    assert gone.data_structure.object_id == produced.data_structure.producer_id
    assert isinstance(connected.data_structure, ow.ConnectionInfo)
    assert isinstance(connected.data_structure.connection_id, ow.ConnectionId)


async def test_an_expired_message_advisory_carries_a_copy_of_the_message() -> None:
    clock = ManualClock()
    async with Broker(clock=clock) as broker:
        producer_conn = await connect(broker)
        session = await producer_conn.create_session(AckMode.AUTO_ACKNOWLEDGE)

        async def expire() -> None:
            producer = await session.create_producer("orders")
            await producer.send("short-lived", ttl=1.0)
            await clock.advance(2.0)
            consumer = await session.create_consumer("orders")  # expired on its way to the consumer
            assert await consumer.receive(timeout=0) is None

        (advisory,) = await advisories(expired_advisory_topic("orders"), expire, 1, broker)
        await producer_conn.close()
    copy = advisory.data_structure
    assert isinstance(copy, ow.TextMessage) and copy.destination == ow.ActiveMQQueue("orders")


@pytest.mark.parametrize("body", ['{"not": "an advisory"}', "plain text"])
async def test_a_text_message_typed_advisory_by_an_application_stays_a_text_message(body: str) -> None:
    """Only the broker's advisories become bare messages: JSON text without a known data structure stays text."""
    async with Broker() as broker:
        conn = await connect(broker)
        session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
        consumer = await session.create_consumer("orders")
        producer = await session.create_producer("orders")
        await producer.send(body, type="Advisory")
        received = await consumer.receive(timeout=5)
        assert received is not None
        assert isinstance(on_the_wire(received), ow.TextMessage)
        await conn.close()
