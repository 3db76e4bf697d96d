"""Map, stream and object messages and Java-typed properties (issue 19, item 2). What ActiveMQ does with them
replays from the ``map_message_*``, ``stream_message_*``, ``object_message_*`` and ``typed_properties_*`` recordings;
these tests cover the wrappers, the checks at send, the store, STOMP and the corners the recordings do not reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker import Broker, ManualClock
from minibroker.client import connect
from minibroker.errors import MessageEOFError, MessageFormatError, NullValueError, NumberFormatError
from minibroker.message import ObjectBody
from minibroker.typed import Byte, Double, Float, Int, Long, Short, convert, java_type


class TestWrappers:
    def test_ranges_are_java_s(self) -> None:
        assert (Byte(127), Short(-32768), Int(2**31 - 1), Long(2**63 - 1)) == (127, -32768, 2**31 - 1, 2**63 - 1)
        for make, value in ((Byte, 128), (Short, 2**15), (Int, 2**31), (Long, 2**63)):
            with pytest.raises(MessageFormatError, match="outside a Java"):
                make(value)

    def test_a_float_is_rounded_to_single_precision_as_java_stores_it(self) -> None:
        assert Float(0.1) != 0.1 and Float(0.1) == Float(Float(0.1)) and Float(1.5) == 1.5
        assert repr(Short(3)) == "Short(3)" and repr(Float(1.5)) == "Float(1.5)"

    def test_java_types_of_plain_values(self) -> None:
        assert [java_type(v) for v in (True, 1, 2**40, 1.5, "s", b"b", Double(1.0), Short(1))] == [
            "Boolean",
            "Integer",
            "Long",
            "Double",
            "String",
            "byte[]",
            "Double",
            "Short",
        ]

    def test_conversions_beyond_the_recording(self) -> None:
        assert convert("TRUE", "boolean") is True and convert("12", "byte") == 12
        assert type(convert(Byte(3), "long")) is Long and convert(Float(1.5), "string") == "1.5"
        with pytest.raises(NumberFormatError):
            convert("300", "byte")  # parsed, then out of a byte's range: Java's NumberFormatException
        with pytest.raises(MessageFormatError):
            convert(True, "int")
        with pytest.raises(MessageFormatError, match="no JMS getter"):
            convert(1, "char")


async def test_a_map_message_round_trips_and_is_read_only() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        consumer = await session.create_consumer("q")
        sent = {"id": Long(7), "name": "x", "raw": b"\x01", "ok": True}
        await (await session.create_producer("q")).send(sent, properties={"retries": Short(2)})
        msg = await consumer.receive(timeout=1)
        assert msg is not None and msg.body == sent and type(msg.body["id"]) is Long  # type: ignore[index]
        assert msg.property_as("retries", "long") == 2
        with pytest.raises(TypeError):
            msg.body["name"] = "y"  # type: ignore[index]
        with pytest.raises(MessageFormatError, match="MapMessage"):
            _ = msg.text


@pytest.mark.parametrize(
    ("body", "match"), [({"": 1}, "non-empty str"), ({1: "x"}, "non-empty str"), ({"k": [1]}, "no JMS map value")]
)
async def test_a_bad_map_is_refused_at_send(body: dict[object, object], match: str) -> None:
    async with Broker() as broker, await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer("q")
        with pytest.raises(MessageFormatError, match=match):
            await producer.send(body)  # type: ignore[arg-type]
        assert not broker.queue("q").exists


async def test_maps_and_typed_properties_survive_a_restart(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("q")
            await producer.send({"n": Short(1)}, properties={"f": Float(0.5), "b": Byte(1)})
        await broker.restart()
        (stored,) = broker.queue("q").browse()
        assert stored.body == {"n": 1} and type(stored.body["n"]) is Short  # type: ignore[index]
        assert {k: type(v) for k, v in stored.properties.items()} == {"f": Float, "b": Byte}


async def test_a_stomp_subscriber_gets_a_map_message_without_a_body() -> None:
    """ActiveMQ's default STOMP translation has no form for a MapMessage: an empty body, no content-length."""
    from support.stomp_helpers import RawStompClient

    from minibroker.plugins.stomp import start_stomp_server

    async with Broker(clock=ManualClock(autojump=True)) as broker, await start_stomp_server(broker, port=0) as server:
        stomp = await RawStompClient.open(server.port)
        await stomp.request("SUBSCRIBE", {"id": "s", "destination": "/queue/q"})
        async with await connect(broker) as conn:
            await (await (await conn.create_session()).create_producer("q")).send({"k": 1}, properties={"p": Short(3)})
        frame = await stomp.message()
        assert frame.body == b"" and "content-length" not in frame.headers and frame.headers["p"] == "3"
        await stomp.close()


# -- StreamMessage and ObjectMessage ---------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["memory", "tcp"])
async def test_stream_and_object_messages_round_trip(transport: str) -> None:
    from support.transports import connect_to

    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect_to(broker, transport) as conn:
        session = await conn.create_session()
        consumer = await session.create_consumer("q")
        producer = await session.create_producer("q")
        await producer.send(["a", Long(1), Float(0.5), b"\x00", None, True])
        await producer.send(ObjectBody.of(Short(7)))
        await producer.send(ObjectBody(b""))
        stream, obj, empty = [await consumer.receive(timeout=5) for _ in range(3)]
        assert stream is not None and obj is not None and empty is not None
        assert stream.body == ("a", 1, 0.5, b"\x00", None, True) and stream.jms_type == "StreamMessage"
        assert [type(v) for v in stream.body] == [str, Long, Float, bytes, type(None), bool]  # type: ignore[union-attr]
        assert obj.jms_type == "ObjectMessage" and obj.object_value == 7 and type(obj.object_value) is Short
        assert empty.object_value is None and isinstance(empty.body, ObjectBody) and empty.body.class_name is None


async def test_a_stream_is_read_only_and_read_in_order() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        consumer = await session.create_consumer("q")
        await (await session.create_producer("q")).send([Short(1), "2", None])
        msg = await consumer.receive(timeout=1)
        assert msg is not None and isinstance(msg.body, tuple)
        reader = msg.stream_reader()
        assert reader.read("long") == 1 and reader.read("int") == 2
        with pytest.raises(NullValueError):
            reader.read("int")  # a null is no int: Java's NullPointerException, and the reader stays put
        assert reader.read("string") is None
        with pytest.raises(MessageEOFError):
            reader.read()
        assert list(msg.stream_reader()) == [1, "2", None]  # a new reader starts again (JMS's reset)
        with pytest.raises(MessageFormatError, match="StreamMessage"):
            _ = msg.text
        with pytest.raises(MessageFormatError, match="not an ObjectMessage"):
            _ = msg.object_value


@pytest.mark.parametrize(
    ("body", "match"), [([[1]], "no JMS stream value"), ([{"k": 1}], "no JMS stream value"), ([2**63], "stream")]
)
async def test_a_bad_stream_is_refused_at_send(body: list[object], match: str) -> None:
    async with Broker() as broker, await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer("q")
        with pytest.raises(MessageFormatError, match=match):
            await producer.send(body)  # type: ignore[arg-type]
        assert not broker.queue("q").exists


class TestObjectBody:
    def test_of_serializes_as_java_does(self) -> None:
        """ActiveMQ 5.17.2's bytes for setObject("hello") and setObject(Integer 5) (recordings/transformations)."""
        assert ObjectBody.of("hello").data.hex() == "aced000574000568656c6c6f79"
        assert (
            ObjectBody.of(5).class_name == "java.lang.Integer" and ObjectBody.of(2**40).class_name == "java.lang.Long"
        )
        assert ObjectBody.of("x", "java.lang.Character").value() == "x"
        assert ObjectBody.of("z" * 70_000).value() == "z" * 70_000  # past 64 KiB: Java's long string form

    def test_a_foreign_class_is_carried_but_not_read(self) -> None:
        name = b"com.acme.Order"
        data = b"\xac\xed\x00\x05\x73\x72" + len(name).to_bytes(2, "big") + name + b"\x00" * 12
        body = ObjectBody(data)
        assert body.class_name == "com.acme.Order" and len(body) == len(data)
        with pytest.raises(MessageFormatError, match="cannot read"):
            body.value()

    def test_what_python_cannot_serialize_is_refused(self) -> None:
        for value in ([1], {"k": 1}, None):
            with pytest.raises(MessageFormatError, match="serializes"):
                ObjectBody.of(value)
        with pytest.raises(MessageFormatError):
            ObjectBody.of("xy", "java.lang.Character")


async def test_streams_and_objects_survive_a_restart(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("q")
            await producer.send([Byte(1), "s"])
            await producer.send(ObjectBody.of(1.5))
        await broker.restart()
        stream, obj = broker.queue("q").browse()
        assert stream.body == (1, "s") and type(stream.body[0]) is Byte  # type: ignore[index]
        assert isinstance(obj.body, ObjectBody) and obj.body.value() == 1.5


async def test_a_stomp_subscriber_gets_stream_and_object_messages_without_a_body() -> None:
    from support.stomp_helpers import RawStompClient

    from minibroker.plugins.stomp import start_stomp_server

    async with Broker(clock=ManualClock(autojump=True)) as broker, await start_stomp_server(broker, port=0) as server:
        stomp = await RawStompClient.open(server.port)
        await stomp.request("SUBSCRIBE", {"id": "s", "destination": "/queue/q"})
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("q")
            await producer.send([1, 2])
            await producer.send(ObjectBody.of("o"))
        for _ in range(2):
            frame = await stomp.message()
            assert frame.body == b"" and "content-length" not in frame.headers
        await stomp.close()
