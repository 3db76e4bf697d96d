"""The loose codec, type by type: every row of the table (each class of commands.py) round-trips through its
bytes with any field values, and the decoder is sans-IO and refuses what is no OpenWire."""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minibroker.errors import FrameTooLarge, LocalProtocolError
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire.codec import (
    OpenWireDecoder,
    WireFormat,
    _expected,
    decode_command,
    encode_command,
    layout,
)
from minibroker.plugins.openwire.primitives import (
    Char,
    OpenWireFormatError,
    marshal_primitive_list,
    marshal_primitive_map,
    unmarshal_primitive_list,
    unmarshal_primitive_map,
)
from minibroker.typed import Byte, Float, Long, Short

_text = st.text(max_size=40)
_opt_text = st.none() | _text
_long = st.integers(-(2**63), 2**63 - 1)

_int32 = st.integers(-(2**31), 2**31 - 1)
_producer_id = st.builds(ow.ProducerId, _opt_text, _long, _long)
_connection_id = st.builds(ow.ConnectionId, _opt_text)
#: a strategy per class a nested field may hold
_LEAVES: dict[type[ow.DataStructure], st.SearchStrategy[Any]] = {
    ow.ConnectionId: _connection_id,
    ow.SessionId: st.builds(ow.SessionId, _opt_text, _long),
    ow.ConsumerId: st.builds(ow.ConsumerId, _opt_text, _long, _long),
    ow.ProducerId: _producer_id,
    ow.BrokerId: st.builds(ow.BrokerId, _opt_text),
    ow.ActiveMQQueue: st.builds(ow.ActiveMQQueue, _opt_text),
    ow.ActiveMQTopic: st.builds(ow.ActiveMQTopic, _opt_text),
    ow.ActiveMQTempQueue: st.builds(ow.ActiveMQTempQueue, _opt_text),
    ow.ActiveMQTempTopic: st.builds(ow.ActiveMQTempTopic, _opt_text),
    ow.LocalTransactionId: st.builds(ow.LocalTransactionId, _long, st.none() | _connection_id),
    ow.XATransactionId: st.builds(
        ow.XATransactionId, st.integers(-(2**31), 2**31 - 1), st.none() | st.binary(max_size=8)
    ),
    ow.MessageId: st.builds(ow.MessageId, _opt_text, st.none() | _producer_id, _long, _long),
    ow.TextMessage: st.builds(
        ow.TextMessage, st.integers(0, 9), st.booleans(), content=st.none() | st.binary(max_size=8)
    ),
}
_leaves = st.one_of(*_LEAVES.values())


def _nested(expected: tuple[type[ow.DataStructure], ...] | None) -> st.SearchStrategy[Any]:
    if expected is None:
        return st.none() | _leaves
    return st.none() | st.one_of(*[s for c, s in _LEAVES.items() if issubclass(c, expected)])


_throwable = st.builds(ow.JavaThrowable, _opt_text, _opt_text)
_traced = st.recursive(
    _throwable,
    lambda inner: st.builds(
        ow.JavaThrowable,
        _opt_text,
        _opt_text,
        st.lists(st.tuples(_opt_text, _opt_text, _opt_text, st.integers(-(2**31), 2**31 - 1)), max_size=3).map(tuple),
        st.none() | inner,
    ),
    max_leaves=3,
)

KINDS: dict[ow.Kind, st.SearchStrategy[Any]] = {
    ow.Kind.BYTE: st.integers(-128, 127),
    ow.Kind.BOOL: st.booleans(),
    ow.Kind.INT: st.integers(-(2**31), 2**31 - 1),
    ow.Kind.LONG: _long,
    ow.Kind.STRING: _opt_text,
    ow.Kind.NESTED: st.none() | _leaves,
    ow.Kind.CACHED: st.none() | _leaves,
    ow.Kind.BYTES: st.none() | st.binary(max_size=64),
    ow.Kind.MAGIC: st.just(b"ActiveMQ"),
    ow.Kind.THROWABLE: st.none() | _throwable,
    ow.Kind.ARRAY: st.none() | st.lists(st.none() | _leaves, max_size=3).map(tuple),
}


def instances(cls: type[ow.DataStructure], kinds: dict[ow.Kind, st.SearchStrategy[Any]] = KINDS) -> Any:
    fields = {}
    for (name, kind), expected in zip(layout(cls), _expected(cls), strict=True):
        fields[name] = _nested(expected) if kind in (ow.Kind.NESTED, ow.Kind.CACHED) else kinds[kind]
    return st.builds(cls, **fields)


def test_a_nested_object_of_the_wrong_type_is_refused() -> None:
    frame = encode_command(ow.ConsumerInfo(consumer_id=ow.ConnectionId("ID:x")))  # type: ignore[arg-type]
    with pytest.raises(OpenWireFormatError, match=r"ConsumerInfo\.consumer_id: a ConnectionId"):
        decode_command(frame[4:])


def test_every_field_of_every_type_has_a_wire_kind() -> None:
    for cls in ow.TYPES.values():
        # a message also keeps the payload it was read from (Message.raw, not on the wire: passthrough.py)
        fields = [f.name for f in attrs.fields(cls) if not (issubclass(cls, ow.Message) and f.name == "raw")]
        assert fields == [name for name, _ in layout(cls)], cls
    assert {1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 21, 22, 23, 24, 25, 26, 27, 28, 30, 31} <= ow.TYPES.keys()


@pytest.mark.parametrize("cls", sorted(ow.TYPES.values(), key=lambda cls: cls.TYPE), ids=lambda cls: cls.__name__)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip(cls: type[ow.DataStructure], data: st.DataObject) -> None:
    command = data.draw(instances(cls))
    frame = encode_command(command)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4 and frame[4] == cls.TYPE
    assert decode_command(frame[4:]) == command


@settings(max_examples=60, deadline=None)
@given(command=instances(ow.ExceptionResponse, {**KINDS, ow.Kind.THROWABLE: st.none() | _traced}))
def test_round_trip_with_stack_traces(command: ow.ExceptionResponse) -> None:
    fmt = WireFormat(stack_trace=True)
    assert decode_command(encode_command(command, fmt)[4:], fmt) == command


_primitive = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-128, 127).map(Byte),
        st.integers(-(2**15), 2**15 - 1).map(Short),
        st.integers(-(2**31), 2**31 - 1),
        _long.map(Long),
        st.floats(width=32, allow_nan=False).map(Float),
        st.floats(allow_nan=False),
        st.text(max_size=20),
        st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",)).map(Char),
        st.binary(max_size=16),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _same(a: object, b: object) -> bool:
    """Equal, and of the same Java type all the way down."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@settings(max_examples=200, deadline=None)
@given(values=st.dictionaries(st.text(max_size=12), _primitive, max_size=6))
def test_primitive_map_round_trip(values: dict[str, object]) -> None:
    assert _same(unmarshal_primitive_map(marshal_primitive_map(values)), values)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(_primitive, max_size=6))
def test_primitive_list_round_trip(values: list[object]) -> None:
    assert _same(unmarshal_primitive_list(marshal_primitive_list(values)), values)


def test_big_strings_and_java_utf() -> None:
    big = "x" * 10_000  # past 8,191 UTF-16 units: ActiveMQ's BIG_STRING, an int length
    data = marshal_primitive_map({"big": big, "nul": "a\0b", "emoji": "\U0001f600"})
    assert data[4 + 2 + 3] == 13
    assert unmarshal_primitive_map(data) == {"big": big, "nul": "a\0b", "emoji": "\U0001f600"}
    assert b"a\xc0\x80b" in data and b"\xed\xa0\xbd\xed\xb8\x80" in data  # modified UTF-8: NUL, surrogate pairs
    assert unmarshal_primitive_map(marshal_primitive_map(None)) is None
    with pytest.raises(LocalProtocolError):
        encode_command(ow.ConnectionInfo(client_id="é" * 40_000))  # writeUTF's 65,535 bytes


def test_decoder_is_fed_any_split() -> None:
    frames = encode_command(ow.SessionInfo(1, False, ow.SessionId("ID:c", 4))) + encode_command(ow.KeepAliveInfo(2))
    decoder = OpenWireDecoder()
    got = []
    for byte in frames:
        decoder.receive_data(bytes([byte]))
        while (command := decoder.next_command()) is not None:
            got.append(command)
    assert got == [ow.SessionInfo(1, False, ow.SessionId("ID:c", 4)), ow.KeepAliveInfo(2)]
    decoder.receive_data(b"\x00\x00\x00\x01\x00")  # a null command is skipped
    assert decoder.next_command() is None and decoder.buffered == 0


def _with_size(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"\x7f\xff\xff\xff", FrameTooLarge),  # refused before it is buffered
        (b"\x00\x00\x00\x00", OpenWireFormatError),
        (b"\x00\x00\x00\x02\x63\x00", OpenWireFormatError),  # unknown type 99
        (b"\x00\x00\x00\x03\x04\x00\x00", OpenWireFormatError),  # a SessionInfo cut short
        (_with_size(encode_command(ow.KeepAliveInfo())[4:] + b"\0"), OpenWireFormatError),  # a byte too many
    ],
)
def test_decoder_refuses_what_is_no_openwire(data: bytes, error: type[Exception]) -> None:
    decoder = OpenWireDecoder(WireFormat(max_frame_size=1 << 20))
    decoder.receive_data(data)
    with pytest.raises(error):
        decoder.next_command()


def test_nesting_is_bounded() -> None:
    # a MessageDispatch whose message's data structure is a MessageDispatch, ... : a hostile frame's recursion
    command: ow.DataStructure = ow.KeepAliveInfo()
    for _ in range(40):
        command = ow.MessageDispatch(message=ow.TextMessage(data_structure=command))
    with pytest.raises(OpenWireFormatError):
        decode_command(encode_command(command)[4:])
