"""What replaying the recorded corpus through ActiveMQ's own client against minibroker found (tests/openwire_replay),
each pinned here without Java: the converter and the message conversion, sans I/O."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from minibroker import Broker
from minibroker.message import Destination, Message, ObjectBody
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire.converter import OpenWireConverter
from minibroker.plugins.openwire.messages import openwire_message

from .test_converter import CONNECTION, SESSION, connected


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    async with Broker() as broker:
        yield broker


def answer(converter: OpenWireConverter, command: ow.BaseCommand) -> ow.DataStructure:
    converter.receive(command)
    *_, last = converter.take_commands()
    return last


async def test_a_producer_on_a_temporary_queue_that_is_gone_is_refused_as_activemq_refuses_it(broker: Broker) -> None:
    """ActiveMQ's ``RegionBroker.addProducer`` adds the destination without creating a temporary one, so the
    ProducerInfo itself fails with ``DestinationDoesNotExistException`` naming it (the client's later check would
    say ``InvalidDestinationException: Cannot publish to a deleted Destination``):
    temp_queue_deleted_with_connection."""
    owner = connected(broker)
    temp = ow.ActiveMQTempQueue(f"{CONNECTION.value}:1")
    made = ow.DestinationInfo(10, True, CONNECTION, temp, ow.DestinationInfo.ADD)
    assert isinstance(answer(owner, made), ow.Response)
    producer = ow.ProducerId(CONNECTION.value, 1, SESSION.value)
    assert type(answer(owner, ow.ProducerInfo(11, True, producer, temp))) is ow.Response  # it exists: accepted
    gone = ow.DestinationInfo(12, True, CONNECTION, temp, ow.DestinationInfo.REMOVE)
    assert type(answer(owner, ow.RemoveInfo(13, True, producer))) is ow.Response
    assert type(answer(owner, gone)) is ow.Response
    refused = answer(owner, ow.ProducerInfo(14, True, ow.ProducerId(CONNECTION.value, 2, SESSION.value), temp))
    assert isinstance(refused, ow.ExceptionResponse) and refused.exception is not None
    assert refused.exception.class_name == "org.apache.activemq.DestinationDoesNotExistException"
    assert refused.exception.message == f"temp-queue://{temp.physical_name}"


async def test_a_producer_on_an_ordinary_queue_is_not_checked(broker: Broker) -> None:
    converter = connected(broker)
    producer = ow.ProducerId(CONNECTION.value, 1, SESSION.value)
    assert type(answer(converter, ow.ProducerInfo(11, True, producer, ow.ActiveMQQueue("nowhere")))) is ow.Response


def test_an_object_message_without_its_object_goes_out_without_content() -> None:
    """``session.createObjectMessage()`` sent as it is: the client reads ``getObject()`` as null from no content, and
    fails (``Failed to build body from bytes``, an EOFException) on empty bytes: object_message_roundtrip."""
    message = Message(message_id="ID:x:1:1:1", destination=Destination.queue("q"), body=ObjectBody(b""))
    command = openwire_message(message)
    assert isinstance(command, ow.ObjectMessage) and command.content is None
