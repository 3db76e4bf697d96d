"""A message dispatched with the bytes it came in with (passthrough.py) against the reference path: building the
message command again (messages.openwire_message) and encoding it in a MessageDispatch. Seeded random messages,
every field varied (ids, destinations, headers, bodies, times, what the broker never dispatches as sent): where the
fast path takes a message, its frame is the reference's byte for byte; where the reference would write a field
differently, the fast path declines it."""

from __future__ import annotations

import random

import attrs
import pytest

from minibroker import Broker, Dispatch
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire.codec import OpenWireDecoder, decode_command, encode_command
from minibroker.plugins.openwire.converter import OpenWireConverter
from minibroker.plugins.openwire.messages import broker_message, openwire_message
from minibroker.plugins.openwire.passthrough import WireMessage, consumer_prefix, dispatch_frame, wire_of
from minibroker.plugins.openwire.primitives import marshal_primitive_map

CONNECTION = "ID:host-40000-1700000000000-0:1"
PRODUCER = ow.ProducerId(CONNECTION, 3, 1)
CONSUMER = ow.ConsumerId("ID:host-40000-1700000000000-0:2", 1, 7)


def _choice(rng: random.Random, common: object, *others: object) -> object:
    """``common`` most of the time (the shape a JMS client sends), else one of ``others``."""
    return common if rng.random() < 0.93 else rng.choice(others)


def random_message(rng: random.Random, seq: int) -> ow.Message:
    producer = _choice(
        rng,
        PRODUCER,
        ow.ProducerId("ID:other-1:9", 2, 5),
        ow.ProducerId("no-colons", 1, 1),
        ow.ProducerId("ID:h\u00e9te-1:1", 1, 1),
        ow.ProducerId(None, 0, 0),
        ow.ProducerId(CONNECTION, -1, 1),
    )
    assert isinstance(producer, ow.ProducerId)
    destination = _choice(
        rng,
        ow.ActiveMQQueue("orders"),
        ow.ActiveMQTopic("prices.eu"),
        ow.ActiveMQQueue("a,b"),
        ow.ActiveMQQueue("queue://prefixed"),
        ow.ActiveMQTempQueue("ID:host-1:1:1"),
        ow.ActiveMQQueue("caf\u00e9"),
    )
    message_id = _choice(
        rng,
        ow.MessageId(None, producer, seq),
        ow.MessageId("ID:custom-text", producer, seq),
        ow.MessageId(None, PRODUCER if producer != PRODUCER else ow.ProducerId("ID:x:1", 1, 1), seq),
        ow.MessageId(None, producer, seq, 77),
    )
    text = _choice(rng, None, "plain text", "caf\u00e9", "nul\0inside", "")
    cls = ow.BytesMessage if text is None else ow.TextMessage
    if text is None:
        content = _choice(rng, bytes(rng.randrange(256) for _ in range(rng.randrange(40))), None, b"")
    else:
        assert isinstance(text, str)
        raw = text.encode("utf-8")
        content = _choice(rng, len(raw).to_bytes(4, "big") + raw, None, b"\xff\xff\xff\xff", b"\0\0\0\x09short")
    fields: dict[str, object] = {
        "command_id": rng.randrange(1 << 20),
        "response_required": rng.random() < 0.5,
        "producer_id": _choice(rng, producer, None, ow.ProducerId("ID:elsewhere:1", 1, 1)),
        "destination": destination,
        "transaction_id": _choice(rng, None, ow.LocalTransactionId(5, ow.ConnectionId(CONNECTION))),
        "original_destination": _choice(rng, None, ow.ActiveMQQueue("was-here")),
        "message_id": message_id,
        "original_transaction_id": _choice(rng, None, ow.LocalTransactionId(6, None)),
        "group_id": _choice(rng, None, "group-a", "gr\u00fcppe", ""),
        "group_sequence": _choice(rng, 0, 1, -3, 2**31 - 1),
        "correlation_id": _choice(rng, None, "corr-1", "c\0"),
        "persistent": rng.random() < 0.5,
        "expiration": _choice(rng, 0, 1_700_000_060_000, -5, 1, 2**62),
        "priority": _choice(rng, 4, 0, 9, -1, 10, 127),
        "reply_to": _choice(rng, None, ow.ActiveMQQueue("replies"), ow.ActiveMQTempQueue("ID:host-1:1:2")),
        "timestamp": _choice(rng, 1_700_000_000_000 + seq, 0, -1_000, 2**62, 123),
        "type": _choice(rng, None, "order", "Advisory", "t\u00ff"),
        "content": content,
        "marshalled_properties": _choice(rng, None, marshal_primitive_map({"k": 1}), marshal_primitive_map({})),
        "target_consumer_id": _choice(rng, None, CONSUMER),
        "compressed": _choice(rng, False, True) if content is None else False,
        "redelivery_counter": _choice(rng, 0, 3),
        "arrival": _choice(rng, 0, 99),
        "user_id": _choice(rng, None, "alice"),
        "droppable": _choice(rng, False, True),
        "broker_in_time": _choice(rng, 0, 1_700_000_000_001),
        "broker_out_time": _choice(rng, 0, 1_700_000_000_002),
        "jmsx_group_first_for_consumer": _choice(rng, False, True),
    }
    return cls(**fields)  # type: ignore[arg-type]


def reference_frame(message: object, broker_seq: int, counter: int, group_first: bool, now_ms: int) -> bytes:
    command = openwire_message(
        message,  # type: ignore[arg-type]
        broker_seq=broker_seq,
        redelivery_counter=counter,
        group_first=group_first,
        is_temporary=lambda destination: False,
        now_ms=now_ms,
    )
    dispatch = ow.MessageDispatch(
        consumer_id=CONSUMER, destination=command.destination, message=command, redelivery_counter=counter
    )
    return encode_command(dispatch)


def read_back(frame: bytes) -> ow.Message:
    decoder = OpenWireDecoder()
    decoder.receive_data(frame)
    command = decoder.next_command()
    assert isinstance(command, ow.Message) and command.raw == frame[4:]
    return command


class TestTheFrameIsTheReferences:
    def test_seeded_random_messages(self) -> None:
        """Every message the fast path takes is dispatched byte for byte as the reference path writes it; the
        seeds cover both ways (taken and declined) many times."""
        rng = random.Random(45)
        taken = declined = 0
        for seq in range(1, 3001):
            command = read_back(encode_command(random_message(rng, seq)))
            try:
                message = broker_message(command, WireMessage)
            except Exception:
                continue  # refused on the way in (a bad body, a nested property): never dispatched
            assert command.raw is not None
            wire = wire_of(command, command.raw)
            if wire is None:
                declined += 1
                continue
            taken += 1
            broker_seq, counter, group_first = rng.randrange(1 << 40), rng.choice((0, 1, 6)), rng.random() < 0.3
            now_ms = rng.choice((0, 1_700_000_000_500))
            assert isinstance(message, WireMessage)
            message.wire = wire
            dispatch = Dispatch(1, message, redelivery_counter=counter, group_first=group_first, broker_seq=broker_seq)
            fast = dispatch_frame(message, consumer_prefix(CONSUMER), dispatch, now_ms)
            assert fast == reference_frame(message, broker_seq, counter, group_first, now_ms), (seq, command)
        assert taken > 500 and declined > 1000, (taken, declined)

    def test_what_a_jms_producer_sends_is_taken(self) -> None:
        """The common shape (a queue or topic, ids the client made, a body, no properties) takes the fast path."""
        for cls, content in ((ow.BytesMessage, b"\x01\x02"), (ow.TextMessage, b"\0\0\0\x02hi")):
            for destination in (ow.ActiveMQQueue("orders"), ow.ActiveMQTopic("prices")):
                command = read_back(
                    encode_command(
                        cls(
                            command_id=9,
                            response_required=True,
                            producer_id=PRODUCER,
                            destination=destination,
                            message_id=ow.MessageId(None, PRODUCER, 12),
                            persistent=True,
                            priority=4,
                            timestamp=1_700_000_000_000,
                            content=content,
                            transaction_id=ow.LocalTransactionId(3, ow.ConnectionId(CONNECTION)),
                        )
                    )
                )
                assert command.raw is not None and wire_of(command, command.raw) is not None

    @pytest.mark.parametrize(
        "change",
        [
            {"destination": ow.ActiveMQTempQueue("ID:host-1:1:1")},
            {"reply_to": ow.ActiveMQQueue("replies")},
            {"marshalled_properties": marshal_primitive_map({"k": 1})},
            {"user_id": "alice"},
            {"correlation_id": "caf\u00e9"},
            {"priority": 10},
            {"timestamp": -1},
            {"type": "Advisory"},
            {"message_id": ow.MessageId("ID:text", PRODUCER, 1)},
        ],
    )
    def test_what_the_reference_writes_otherwise_is_declined(self, change: dict[str, object]) -> None:
        base = ow.BytesMessage(
            producer_id=PRODUCER,
            destination=ow.ActiveMQQueue("orders"),
            message_id=ow.MessageId(None, PRODUCER, 1),
            priority=4,
            content=b"x",
        )
        command = read_back(encode_command(attrs.evolve(base, **change)))
        assert command.raw is not None and wire_of(command, command.raw) is None


class TestThroughTheConverter:
    async def test_a_copy_the_broker_changes_goes_the_reference_way(self) -> None:
        """The broker copies a message to change it (``attrs.evolve``): the copy carries no frame runs."""
        command = read_back(
            encode_command(
                ow.BytesMessage(
                    producer_id=PRODUCER,
                    destination=ow.ActiveMQQueue("orders"),
                    message_id=ow.MessageId(None, PRODUCER, 1),
                    content=b"x",
                )
            )
        )
        message = broker_message(command, WireMessage)
        assert command.raw is not None
        message.wire = wire_of(command, command.raw)  # type: ignore[attr-defined]
        assert message.wire is not None  # type: ignore[attr-defined]
        copy = attrs.evolve(message, priority=9)
        assert isinstance(copy, WireMessage) and copy.wire is None

    async def test_a_consumer_receives_the_frame_the_reference_writes(self) -> None:
        """Producer and consumer converters on one broker: the dispatch written is the reference's frame."""
        async with Broker() as broker:
            producer, consumer = OpenWireConverter(broker), OpenWireConverter(broker)
            for converter, connection in ((producer, CONNECTION), (consumer, CONSUMER.connection_id)):
                converter.receive(ow.WireFormatInfo(version=12))
                converter.receive(ow.ConnectionInfo(1, True, ow.ConnectionId(connection)))
                converter.receive(ow.SessionInfo(2, False, ow.SessionId(connection, 1)))
            consumer.receive(
                ow.ConsumerInfo(3, True, CONSUMER, destination=ow.ActiveMQQueue("orders"), prefetch_size=1000)
            )
            consumer.take_commands()
            decoder = OpenWireDecoder()
            decoder.receive_data(
                encode_command(
                    ow.BytesMessage(
                        command_id=4,
                        producer_id=PRODUCER,
                        destination=ow.ActiveMQQueue("orders"),
                        message_id=ow.MessageId(None, PRODUCER, 1),
                        priority=4,
                        timestamp=1_700_000_000_000,
                        content=b"payload",
                    )
                )
            )
            sent = decoder.next_command()
            assert sent is not None
            producer.receive(sent)
            frame = consumer.data_to_send()
            dispatch = decode_command(frame[4:])
            assert isinstance(dispatch, ow.MessageDispatch) and isinstance(dispatch.message, ow.BytesMessage)
            assert dispatch.message.content == b"payload" and dispatch.message.message_id is not None
            (queued,) = [m for m in broker.queue("orders").browse()]
            assert isinstance(queued, WireMessage) and queued.wire is not None
            now_ms = dispatch.message.broker_out_time
            seq = dispatch.message.message_id.broker_sequence_id
            assert frame == reference_frame(queued, seq, 0, False, now_ms)
