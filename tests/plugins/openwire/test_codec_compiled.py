"""The compiled codec (one reading and one writing function per class, issue 45) against the table it is compiled
from, read field by field: the same bytes out, the same command back, the same refusals."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.errors import LocalProtocolError
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire.codec import (
    _COMPILED_READERS,
    _SEEN_MAX,
    WireFormat,
    decode_command,
    decode_command_table,
    encode_command,
    encode_command_table,
)
from minibroker.plugins.openwire.primitives import OpenWireFormatError

from .test_codec import KINDS, _traced, instances

_CLASSES = sorted(ow.TYPES.values(), key=lambda cls: cls.TYPE)


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda cls: cls.__name__)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_same_bytes_and_the_same_command(cls: type[ow.DataStructure], data: st.DataObject) -> None:
    command = data.draw(instances(cls))
    frame = encode_command(command)
    assert frame == encode_command_table(command)
    assert decode_command(frame[4:]) == decode_command_table(frame[4:]) == command


@settings(max_examples=40, deadline=None)
@given(command=instances(ow.ExceptionResponse, {**KINDS, ow.Kind.THROWABLE: st.none() | _traced}))
def test_stack_traces_go_through_the_table_alike(command: ow.ExceptionResponse) -> None:
    fmt = WireFormat(stack_trace=True)
    frame = encode_command(command, fmt)
    assert frame == encode_command_table(command, fmt)
    assert decode_command(frame[4:], fmt) == decode_command_table(frame[4:], fmt) == command


def _message() -> ow.BytesMessage:
    producer = ow.ProducerId("ID:host-1-2-3", 1, 1)
    return ow.BytesMessage(
        command_id=7,
        response_required=True,
        producer_id=producer,
        destination=ow.ActiveMQQueue("orders"),
        message_id=ow.MessageId(None, producer, 42, 0),
        correlation_id="c-é",
        persistent=True,
        priority=-3,
        timestamp=1_767_225_600_000,
        content=b"\x00\x01body",
        marshalled_properties=b"\x00\x00\x00\x00",
        broker_path=(ow.BrokerId("b1"), None),
    )


def test_every_truncation_is_refused_by_both() -> None:
    payload = encode_command(_message())[4:]
    for end in range(1, len(payload)):
        for decode in (decode_command, decode_command_table):
            with pytest.raises(OpenWireFormatError):
                decode(payload[:end])


def test_a_negative_length_and_a_wrong_nested_type_are_refused_by_both() -> None:
    frame = encode_command(ow.ConsumerInfo(consumer_id=ow.ConnectionId("ID:x")))  # type: ignore[arg-type]
    for decode in (decode_command, decode_command_table):
        with pytest.raises(OpenWireFormatError, match=r"ConsumerInfo\.consumer_id: a ConnectionId"):
            decode(frame[4:])
    bytes_frame = bytearray(encode_command(ow.WireFormatInfo(version=12, marshalled_properties=b"ab"))[4:])
    bytes_frame[1 + 8 + 4 + 1 : 1 + 8 + 4 + 5] = (-2).to_bytes(4, "big", signed=True)
    for decode in (decode_command, decode_command_table):
        with pytest.raises(OpenWireFormatError, match="negative length -2"):
            decode(bytes(bytes_frame))


def test_values_java_cannot_hold_are_refused_by_both() -> None:
    for encode in (encode_command, encode_command_table):
        with pytest.raises(LocalProtocolError, match="cannot be written"):
            encode(ow.KeepAliveInfo(command_id=2**31))
        with pytest.raises(LocalProtocolError, match="writeUTF"):
            encode(ow.ConnectionInfo(client_id="é" * 40_000))


def test_ids_read_again_are_the_same_object_and_the_memory_is_bounded() -> None:
    frame = encode_command(_message())[4:]
    first, again = decode_command(frame), decode_command(frame)
    assert isinstance(first, ow.BytesMessage) and isinstance(again, ow.BytesMessage)
    assert first.producer_id is again.producer_id and first.destination is again.destination
    assert first == again == decode_command_table(frame)
    assert first.message_id is not again.message_id  # a class with a nested field is built each time
    for n in range(_SEEN_MAX + 10):  # a client inventing ids forever cannot grow the memory past its bound
        decode_command(encode_command(ow.ConsumerId("ID:x", 1, n))[4:])
    (seen,) = [v for k, v in _COMPILED_READERS[ow.ConsumerId.TYPE].__globals__.items() if k == "SEEN"]
    assert 0 < len(seen) <= _SEEN_MAX
