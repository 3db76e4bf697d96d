"""Frames marshalled by activemq-client 5.17.2's own OpenWireFormat (java/OpenWireFrames.java: version 12, loose, no
cache, no stack traces), byte for byte: each decodes to what the Java side built and encodes back to the same bytes.
``frames.txt`` holds them as captured; when Java and Debian's client are here, they are captured again and
compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker.message import Destination, DestinationKind, ObjectBody
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire.codec import OpenWireDecoder, encode_command
from minibroker.plugins.openwire.messages import broker_message, openwire_message
from minibroker.plugins.openwire.primitives import Char, unmarshal_primitive_map
from minibroker.typed import Byte, Float, Long, Short

CAPTURED = Path(__file__).with_name("frames.txt")
FRAMES = {line.split()[0]: bytes.fromhex(line.split()[1]) for line in CAPTURED.read_text().splitlines() if line}
#: the client's own WireFormatInfo names the JVM and the OS it runs on: it differs from machine to machine
MACHINE_DEPENDENT = {"wire_format_info"}


def decode(data: bytes) -> ow.DataStructure:
    decoder = OpenWireDecoder()
    decoder.receive_data(data)
    command = decoder.next_command()
    assert command is not None and decoder.buffered == 0
    return command


@pytest.mark.parametrize("name", sorted(FRAMES))
def test_captured_frame_round_trips_byte_for_byte(name: str) -> None:
    command = decode(FRAMES[name])
    assert encode_command(command) == FRAMES[name]


def test_the_clients_wire_format_offer() -> None:
    info = decode(FRAMES["wire_format_info"])
    assert isinstance(info, ow.WireFormatInfo) and info.magic == b"ActiveMQ" and info.version == 12
    assert info.marshalled_properties is not None
    offer = unmarshal_primitive_map(info.marshalled_properties)
    assert offer is not None
    # what the client asks for, and the server's AND/min turns down: tight encoding, a cache, stack traces
    assert offer["TightEncodingEnabled"] is True and offer["CacheEnabled"] is True
    assert offer["StackTraceEnabled"] is True and offer["SizePrefixDisabled"] is False
    assert offer["MaxInactivityDuration"] == Long(30_000) and isinstance(offer["MaxInactivityDuration"], Long)
    assert offer["CacheSize"] == 1024


def test_commands_carry_what_the_java_side_set() -> None:
    consumer = decode(FRAMES["consumer_info"])
    assert isinstance(consumer, ow.ConsumerInfo)
    assert consumer.consumer_id == ow.ConsumerId("ID:host-40000-1700000000000-0:1", 1, 2)
    assert consumer.destination == ow.ActiveMQTopic("prices.eu")
    assert (consumer.prefetch_size, consumer.priority, consumer.no_local, consumer.exclusive) == (1000, 5, True, True)
    assert consumer.selector == "color = 'red' AND weight > 5" and consumer.subscription_name == "audit"
    assert consumer.command_id == 3 and consumer.response_required

    ack = decode(FRAMES["message_ack"])
    assert isinstance(ack, ow.MessageAck) and ack.ack_type == 1 and ack.message_count == 3
    assert ack.poison_cause == ow.JavaThrowable("java.lang.Throwable", "Delivery[7] exceeds redelivery policy limit")
    assert ack.last_message_id is not None and str(ack.last_message_id) == "ID:host-40000-1700000000000-0:1:1:3:17"
    assert ack.transaction_id == ow.LocalTransactionId(5, ow.ConnectionId("ID:host-40000-1700000000000-0:1"))

    failure = decode(FRAMES["exception_response"])
    assert isinstance(failure, ow.ExceptionResponse) and failure.correlation_id == 4
    assert failure.exception == ow.JavaThrowable("javax.jms.InvalidSelectorException", "bad selector")

    xa = decode(FRAMES["transaction_info_xa"])
    assert isinstance(xa, ow.TransactionInfo) and xa.type == ow.TransactionType.PREPARE
    assert xa.transaction_id == ow.XATransactionId(4660, b"\x01\x02\x03", b"\x09")

    end = decode(FRAMES["message_dispatch_end"])
    assert isinstance(end, ow.MessageDispatch) and end.message is None


def test_message_bodies_and_properties() -> None:
    text = decode(FRAMES["text_message"])
    assert isinstance(text, ow.TextMessage)
    message = broker_message(text)
    assert message.body == "héllo, wörld \0 \U0001f600"
    assert message.message_id == "ID:host-40000-1700000000000-0:1:1:3:17"
    assert message.properties == {
        "flag": True,
        "b": Byte(-3),
        "s": Short(300),
        "i": -70000,
        "l": Long(1 << 40),
        "f": Float(1.5),
        "d": -2.25,
        "str": "ünïcode",
    }
    assert [type(message.properties[k]) for k in ("b", "s", "l", "f")] == [Byte, Short, Long, Float]
    assert (message.priority, message.persistent, message.timestamp) == (7, True, 1700000000.123)
    assert message.expiration == 1700000060.123
    assert (message.correlation_id, message.type, message.group_id, message.group_seq) == (
        "corr-1",
        "order",
        "group-A",
        2,
    )
    assert message.reply_to == Destination(DestinationKind.QUEUE, "ID:host-40000-1700000000000-0:1:1")

    mapped = broker_message(decode(FRAMES["map_message"]))  # type: ignore[arg-type]
    assert dict(mapped.body) == {  # type: ignore[arg-type]
        "name": "widget",
        "qty": 3,
        "price": 9.5,
        "ok": True,
        "grade": Char("A"),
        "raw": b"\x00\x01\x02\xff",
        "id": Long(-1),
        "sh": Short(-2),
        "by": Byte(127),
        "fl": Float(0.1),
        "nothing": None,
    }
    assert mapped.destination == Destination.topic("prices.eu")
    streamed = broker_message(decode(FRAMES["stream_message"]))  # type: ignore[arg-type]
    assert streamed.body == ("first", 2, False, 3.5, b"\x07\x08", None, Long(4))
    assert broker_message(decode(FRAMES["bytes_message"])).body == bytes([10, 20, 30, 40, 50])  # type: ignore[arg-type]
    obj = broker_message(decode(FRAMES["object_message"])).body  # type: ignore[arg-type]
    assert isinstance(obj, ObjectBody) and obj.value() == "a serialized string"


@pytest.mark.parametrize("name", ["text_message", "map_message", "stream_message", "bytes_message", "object_message"])
def test_a_dispatched_message_has_the_producers_content_and_properties(name: str) -> None:
    sent = decode(FRAMES[name])
    assert isinstance(sent, ow.Message)
    assert sent.message_id is not None
    out = openwire_message(broker_message(sent), broker_seq=sent.message_id.broker_sequence_id)
    assert type(out) is type(sent)
    assert out.content == sent.content and out.marshalled_properties == sent.marshalled_properties
    assert out.message_id == sent.message_id  # the same producer id and sequence, no text view


async def test_the_java_side_marshals_what_frames_txt_holds(openwire_java: str) -> None:
    from .conftest import run_java

    lines = await run_java(openwire_java, "OpenWireFrames")
    captured = {line.split()[0]: bytes.fromhex(line.split()[1]) for line in lines}
    assert captured.keys() == FRAMES.keys()
    for name, data in captured.items():
        assert encode_command(decode(data)) == data, name
        if name not in MACHINE_DEPENDENT:
            assert data == FRAMES[name], name
