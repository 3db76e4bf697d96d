"""Java's ``DataInput``/``DataOutput`` and ActiveMQ's primitive map, sans-IO: what every OpenWire field and message
property is made of.

A :class:`Reader` walks a frame's bytes and raises :class:`OpenWireFormatError` (never ``IndexError``) when they
run out; a :class:`Writer` is a ``bytearray`` with Java's big-endian writers. The primitive map (message
properties, a MapMessage's body, WireFormatInfo's options) and the primitive list (a StreamMessage's body) use
ActiveMQ's ``MarshallingSupport`` type codes; Java's types survive a round trip through the :mod:`minibroker.typed`
wrappers (a ``Short`` read is a ``Short`` written), plain ``int`` is an ``Integer`` (``Long`` past 32 bits) and
plain ``float`` a ``Double``, as everywhere in minibroker.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Final

from minibroker._java.bodies import modified_utf8, read_modified_utf8
from minibroker.errors import LocalProtocolError, RemoteProtocolError
from minibroker.typed import Byte, Float, Int, Long, Short

__all__ = [
    "Char",
    "OpenWireFormatError",
    "PrimitiveValue",
    "Reader",
    "Writer",
    "marshal_primitive_list",
    "marshal_primitive_map",
    "unmarshal_primitive_list",
    "unmarshal_primitive_map",
]


class OpenWireFormatError(RemoteProtocolError):
    """The peer's bytes are no OpenWire (truncated, an unknown type, a bad size): the connection cannot go on."""


class Char(str):
    """A Java ``Character``: one UTF-16 unit, kept apart from a one-letter ``String`` so it is written back as one."""

    __slots__ = ()

    def __new__(cls, value: str) -> Char:
        if len(value.encode("utf-16-le", "surrogatepass")) != 2:
            raise ValueError(f"a Java char is one UTF-16 unit, not {value!r}")
        return super().__new__(cls, value)

    def __repr__(self) -> str:
        return f"Char({str.__repr__(self)})"


#: what a primitive map or list holds (nested maps and lists included, as ActiveMQ allows them)
PrimitiveValue = object

_SHORT = struct.Struct(">h")
_USHORT = struct.Struct(">H")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_FLOAT = struct.Struct(">f")
_DOUBLE = struct.Struct(">d")

# MarshallingSupport's type codes
NULL: Final = 0
BOOLEAN: Final = 1
BYTE: Final = 2
CHAR: Final = 3
SHORT: Final = 4
INTEGER: Final = 5
LONG: Final = 6
DOUBLE: Final = 7
FLOAT: Final = 8
STRING: Final = 9
BYTE_ARRAY: Final = 10
MAP: Final = 11
LIST: Final = 12
BIG_STRING: Final = 13

#: a String of this many UTF-16 units or more is written as a BIG_STRING (an int length), as ActiveMQ does
BIG_STRING_UNITS: Final = 32767 // 4


def encode_utf(text: str) -> bytes:
    """Java's modified UTF-8 (a NUL as two bytes, a supplementary character as two surrogates)."""
    if text.isascii() and "\0" not in text:
        return text.encode("ascii")
    return modified_utf8(text)


def decode_utf(raw: bytes) -> str:
    if raw.isascii():
        return raw.decode("ascii")
    try:
        return read_modified_utf8(raw)
    except (IndexError, UnicodeDecodeError) as exc:
        raise OpenWireFormatError(f"malformed modified UTF-8: {exc}") from None


class Reader:
    """Big-endian reads over one frame's bytes (Java's ``DataInput``)."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0:
            raise OpenWireFormatError(f"negative length {n}")
        start = self.pos
        end = start + n
        if end > len(self.data):
            raise OpenWireFormatError(f"frame ends {end - len(self.data)} byte(s) early")
        self.pos = end
        return self.data[start:end]

    def i8(self) -> int:
        (value,) = self.take(1)
        return value - 256 if value > 127 else value

    def boolean(self) -> bool:
        return self.take(1) != b"\0"

    def i16(self) -> int:
        return int(_SHORT.unpack(self.take(2))[0])

    def u16(self) -> int:
        return int(_USHORT.unpack(self.take(2))[0])

    def i32(self) -> int:
        return int(_INT.unpack(self.take(4))[0])

    def i64(self) -> int:
        return int(_LONG.unpack(self.take(8))[0])

    def f32(self) -> float:
        return float(_FLOAT.unpack(self.take(4))[0])

    def f64(self) -> float:
        return float(_DOUBLE.unpack(self.take(8))[0])

    def utf(self) -> str:
        """``readUTF``: an unsigned short length, then modified UTF-8."""
        return decode_utf(self.take(self.u16()))

    def at_end(self) -> bool:
        return self.pos >= len(self.data)


class Writer:
    """Big-endian writes into a growing buffer (Java's ``DataOutput``)."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def i8(self, value: int) -> None:
        self.buf.append(value & 0xFF)

    def boolean(self, value: bool) -> None:
        self.buf.append(1 if value else 0)

    def i16(self, value: int) -> None:
        self.buf += _SHORT.pack(value)

    def i32(self, value: int) -> None:
        self.buf += _INT.pack(value)

    def i64(self, value: int) -> None:
        self.buf += _LONG.pack(value)

    def f32(self, value: float) -> None:
        self.buf += _FLOAT.pack(value)

    def f64(self, value: float) -> None:
        self.buf += _DOUBLE.pack(value)

    def raw(self, data: bytes) -> None:
        self.buf += data

    def utf(self, text: str) -> None:
        """``writeUTF``: refused past 65,535 bytes, as Java refuses it (UTFDataFormatException)."""
        raw = encode_utf(text)
        if len(raw) > 0xFFFF:
            raise LocalProtocolError(f"a string of {len(raw)} bytes does not fit writeUTF (65,535 at most)")
        self.buf += _USHORT.pack(len(raw))
        self.buf += raw

    def getvalue(self) -> bytes:
        return bytes(self.buf)


# -- one primitive ----------------------------------------------------------------------------------------------------


def marshal_primitive(out: Writer, value: object) -> None:
    """One value with its type code (``MarshallingSupport.marshalPrimitive``); LocalProtocolError for a value Java
    has no primitive for."""
    if value is None:
        out.i8(NULL)
    elif value is True or value is False:
        out.i8(BOOLEAN)
        out.boolean(value)
    elif isinstance(value, Byte):
        out.i8(BYTE)
        out.i8(value)
    elif isinstance(value, Char):
        out.i8(CHAR)
        out.raw(value.encode("utf-16-be", "surrogatepass"))
    elif isinstance(value, Short):
        out.i8(SHORT)
        out.i16(value)
    elif isinstance(value, Long):
        out.i8(LONG)
        out.i64(value)
    elif isinstance(value, int):
        if isinstance(value, Int) or -(2**31) <= value < 2**31:
            out.i8(INTEGER)
            out.i32(value)
        elif -(2**63) <= value < 2**63:
            out.i8(LONG)
            out.i64(value)
        else:
            raise LocalProtocolError(f"{value} does not fit a Java long")
    elif isinstance(value, Float):
        out.i8(FLOAT)
        out.f32(value)
    elif isinstance(value, float):
        out.i8(DOUBLE)
        out.f64(value)
    elif isinstance(value, str):
        if len(value.encode("utf-16-le", "surrogatepass")) // 2 < BIG_STRING_UNITS:
            out.i8(STRING)
            out.utf(value)
        else:
            raw = encode_utf(value)
            out.i8(BIG_STRING)
            out.i32(len(raw))
            out.raw(raw)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        out.i8(BYTE_ARRAY)
        out.i32(len(data))
        out.raw(data)
    elif isinstance(value, Mapping):
        out.i8(MAP)
        _marshal_map(out, value)
    elif isinstance(value, (list, tuple)):
        out.i8(LIST)
        out.i32(len(value))
        for item in value:
            marshal_primitive(out, item)
    else:
        raise LocalProtocolError(f"a {type(value).__name__} is no Java primitive")


def unmarshal_primitive(reader: Reader, depth: int = 0) -> object:
    """One value written by :func:`marshal_primitive` (or by ActiveMQ)."""
    code = reader.i8()
    if code == NULL:
        return None
    if code == BOOLEAN:
        return reader.boolean()
    if code == BYTE:
        return Byte(reader.i8())
    if code == CHAR:
        return Char(reader.take(2).decode("utf-16-be", "surrogatepass"))
    if code == SHORT:
        return Short(reader.i16())
    if code == INTEGER:
        return reader.i32()
    if code == LONG:
        return Long(reader.i64())
    if code == FLOAT:
        return Float(reader.f32())
    if code == DOUBLE:
        return reader.f64()
    if code == STRING:
        return reader.utf()
    if code == BIG_STRING:
        return decode_utf(reader.take(reader.i32()))
    if code == BYTE_ARRAY:
        return reader.take(reader.i32())
    if depth > 32:
        raise OpenWireFormatError("primitive maps and lists nested more than 32 deep")
    if code == MAP:
        return _unmarshal_map(reader, depth + 1)
    if code == LIST:
        return [unmarshal_primitive(reader, depth + 1) for _ in range(_count(reader))]
    raise OpenWireFormatError(f"unknown primitive type {code}")


def _count(reader: Reader) -> int:
    """A count read ahead of its items, bounded by the bytes left (each item takes one at least)."""
    count = reader.i32()
    if count > len(reader.data) - reader.pos:
        raise OpenWireFormatError(f"{count} items announced, {len(reader.data) - reader.pos} bytes left")
    return count


def _marshal_map(out: Writer, values: Mapping[str, object]) -> None:
    out.i32(len(values))
    for name, value in values.items():
        out.utf(name)
        marshal_primitive(out, value)


def _unmarshal_map(reader: Reader, depth: int) -> dict[str, object] | None:
    count = reader.i32()
    if count < 0:
        return None
    if count > len(reader.data) - reader.pos:
        raise OpenWireFormatError(f"{count} entries announced, {len(reader.data) - reader.pos} bytes left")
    values: dict[str, object] = {}
    for _ in range(count):
        name = reader.utf()
        values[name] = unmarshal_primitive(reader, depth)
    return values


# -- whole maps and lists (message properties, MapMessage and StreamMessage bodies) -----------------------------------


def marshal_primitive_map(values: Mapping[str, object] | None) -> bytes:
    """A primitive map's bytes (None: the count -1, as ActiveMQ writes a null map)."""
    out = Writer()
    if values is None:
        out.i32(-1)
    else:
        _marshal_map(out, values)
    return out.getvalue()


def unmarshal_primitive_map(data: bytes) -> dict[str, object] | None:
    reader = Reader(data)
    return _unmarshal_map(reader, 0)


def marshal_primitive_list(values: Iterable[object]) -> bytes:
    """A StreamMessage's body: the values one after the other, no count (ActiveMQStreamMessage's layout)."""
    out = Writer()
    for value in values:
        marshal_primitive(out, value)
    return out.getvalue()


def unmarshal_primitive_list(data: bytes) -> list[object]:
    reader = Reader(data)
    values = []
    while not reader.at_end():
        values.append(unmarshal_primitive(reader))
    return values
