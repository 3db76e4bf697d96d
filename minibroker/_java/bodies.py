"""The bytes ActiveMQ keeps in an ObjectMessage's and a StreamMessage's body, for the values Python can name.

An ObjectMessage holds a Java-serialized object (``ObjectOutputStream``, then a reset, as ``ActiveMQObjectMessage``
writes it). Python cannot run Java serialization in general, so minibroker carries object bodies as opaque bytes; this
module writes and reads the few objects a STOMP ``jms-object-xml``/``jms-object-json`` frame can name and ActiveMQ
trusts: ``String`` and the boxed primitives (``Integer``, ``Long``, ``Short``, ``Byte``, ``Double``, ``Float``,
``Boolean``, ``Character``) and ``byte[]``. A StreamMessage's body is ActiveMQ's ``MarshallingSupport`` encoding
(a type byte, then the value), which an MQTT subscriber receives as its payload. Both byte for byte as recorded on
ActiveMQ 5.17.2 (tests/plugins/stomp/recordings/transformations.json).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import MessageFormatError
from ..typed import Byte, Double, Float, Int, Long, Short, java_type

__all__ = [
    "deserialize",
    "java_class",
    "marshal_stream",
    "modified_utf8",
    "read_modified_utf8",
    "serialize",
    "serialized_class_name",
]

_MAGIC = b"\xac\xed\x00\x05"
TC_NULL, TC_CLASSDESC, TC_OBJECT, TC_STRING, TC_ARRAY, TC_ENDBLOCKDATA, TC_RESET, TC_LONGSTRING = (
    0x70,
    0x72,
    0x73,
    0x74,
    0x75,
    0x78,
    0x79,
    0x7C,
)
_SC_SERIALIZABLE = 0x02
_NUMBER = ("java.lang.Number", 0x86AC951D0B94E08B)

#: boxed class -> (serialVersionUID, field type code, struct layout, extends java.lang.Number)
_BOXED: dict[str, tuple[int, str, struct.Struct, bool]] = {
    "java.lang.Integer": (0x12E2A0A4F7818738, "I", struct.Struct(">i"), True),
    "java.lang.Long": (0x3B8BE490CC8F23DF, "J", struct.Struct(">q"), True),
    "java.lang.Short": (0x684D37133460DA52, "S", struct.Struct(">h"), True),
    "java.lang.Byte": (0x9C4E6084EE50F51C, "B", struct.Struct(">b"), True),
    "java.lang.Double": (0x80B3C24A296BFB04, "D", struct.Struct(">d"), True),
    "java.lang.Float": (0xDAEDC9A2DB3CF0EC, "F", struct.Struct(">f"), True),
    "java.lang.Boolean": (0xCD207280D59CFAEE, "Z", struct.Struct(">?"), False),
    "java.lang.Character": (0x348B47D96B1A2678, "C", struct.Struct(">H"), False),
}
_BYTE_ARRAY_UID = 0xACF317F8060854E0


def modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8 (``DataOutput.writeUTF``'s bytes): NUL as two bytes, a supplementary character as its
    two surrogates, three bytes each."""
    out = bytearray()
    for (unit,) in struct.iter_unpack("<H", text.encode("utf-16-le", "surrogatepass")):
        if 0 < unit < 0x80:
            out.append(unit)
        elif unit < 0x800:
            out += bytes((0xC0 | unit >> 6, 0x80 | unit & 0x3F))
        else:
            out += bytes((0xE0 | unit >> 12, 0x80 | unit >> 6 & 0x3F, 0x80 | unit & 0x3F))
    return bytes(out)


def read_modified_utf8(raw: bytes) -> str:
    units: list[int] = []
    i = 0
    while i < len(raw):
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b >> 5 == 0b110:
            units.append((b & 0x1F) << 6 | raw[i + 1] & 0x3F)
            i += 2
        else:
            units.append((b & 0x0F) << 12 | (raw[i + 1] & 0x3F) << 6 | raw[i + 2] & 0x3F)
            i += 3
    return struct.pack(f"<{len(units)}H", *units).decode("utf-16-le", "surrogatepass")


def _utf(text: str) -> bytes:
    raw = modified_utf8(text)
    return struct.pack(">H", len(raw)) + raw


def _class_desc(name: str, uid: int, fields: tuple[tuple[str, str], ...], parent: bytes) -> bytes:
    body = b"".join(code.encode() + _utf(field) for code, field in fields)
    return (
        bytes((TC_CLASSDESC,))
        + _utf(name)
        + struct.pack(">QBH", uid, _SC_SERIALIZABLE, len(fields))
        + body
        + bytes((TC_ENDBLOCKDATA,))
        + parent
    )


def java_class(value: object) -> str | None:
    """The Java class :func:`serialize` writes ``value`` as (the class :func:`~minibroker.typed.java_type` names);
    None when it writes no such value."""
    try:
        kind = java_type(value)
    except MessageFormatError:
        return None
    return "[B" if kind == "byte[]" else f"java.lang.{kind}"


def serialize(value: object, class_name: str | None = None) -> bytes | None:
    """The bytes ``ActiveMQObjectMessage.setObject(value)`` stores, for a String, a boxed primitive (a plain or a
    :mod:`minibroker.typed` number, a bool; ``class_name="java.lang.Character"`` for a one-character str) or
    ``byte[]``; None for anything else (Python cannot write it)."""
    name = class_name or java_class(value)
    if name is None or (name == "java.lang.Character" and not (isinstance(value, str) and len(value) == 1)):
        return None
    if name == "java.lang.String":
        assert isinstance(value, str)
        raw = modified_utf8(value)
        head = (
            struct.pack(">BH", TC_STRING, len(raw))
            if len(raw) <= 0xFFFF
            else struct.pack(">BQ", TC_LONGSTRING, len(raw))
        )
        return _MAGIC + head + raw + bytes((TC_RESET,))
    if name == "[B":
        assert isinstance(value, (bytes, bytearray))
        desc = _class_desc("[B", _BYTE_ARRAY_UID, (), bytes((TC_NULL,)))
        return _MAGIC + bytes((TC_ARRAY,)) + desc + struct.pack(">I", len(value)) + bytes(value) + bytes((TC_RESET,))
    if name not in _BOXED:
        return None
    uid, code, layout, is_number = _BOXED[name]
    packed = layout.pack(ord(value) if code == "C" else value)  # type: ignore[arg-type]
    parent = _class_desc(*_NUMBER, (), bytes((TC_NULL,))) if is_number else bytes((TC_NULL,))
    desc = _class_desc(name, uid, ((code, "value"),), parent)
    return _MAGIC + bytes((TC_OBJECT,)) + desc + packed + bytes((TC_RESET,))


def serialized_class_name(data: bytes) -> str | None:
    """The class of the object a Java serialization stream holds (``java.lang.String``, ``[B``, ``com.acme.Order``);
    None when ``data`` is empty (no object) or no serialization stream."""
    if len(data) < 6 or not data.startswith(_MAGIC):
        return None
    tag = data[4]
    if tag in (TC_STRING, TC_LONGSTRING):
        return "java.lang.String"
    if tag in (TC_OBJECT, TC_ARRAY) and data[5] == TC_CLASSDESC and len(data) >= 8:
        (length,) = struct.unpack_from(">H", data, 6)
        try:
            return read_modified_utf8(data[8 : 8 + length])
        except (IndexError, UnicodeDecodeError, struct.error):
            return None
    return None


def deserialize(data: bytes) -> tuple[str, object]:
    """The class and value :func:`serialize` wrote (a String as str, a boxed primitive as its :mod:`minibroker.typed`
    number or a bool, a Character as a one-character str, ``byte[]`` as bytes); ``("null", None)`` for an empty body
    (no object). Raises ValueError for any other object: Python cannot read it."""
    if not data:
        return "null", None
    name = serialized_class_name(data)
    try:
        if name == "java.lang.String":
            if data[4] == TC_STRING:
                (length,) = struct.unpack_from(">H", data, 5)
                return name, read_modified_utf8(data[7 : 7 + length])
            (length,) = struct.unpack_from(">Q", data, 5)
            return name, read_modified_utf8(data[13 : 13 + length])
        if name == "[B":
            desc = _class_desc("[B", _BYTE_ARRAY_UID, (), bytes((TC_NULL,)))
            start = 5 + len(desc)
            if data[5:start] == desc:
                (length,) = struct.unpack_from(">I", data, start)
                return name, bytes(data[start + 4 : start + 4 + length])
        elif name in _BOXED:
            uid, code, layout, is_number = _BOXED[name]
            parent = _class_desc(*_NUMBER, (), bytes((TC_NULL,))) if is_number else bytes((TC_NULL,))
            desc = _class_desc(name, uid, ((code, "value"),), parent)
            start = 5 + len(desc)
            if data[5:start] == desc:
                (raw,) = layout.unpack_from(data, start)
                return name, _BOXED_VALUES[name](raw)
    except (IndexError, struct.error, UnicodeDecodeError):
        pass
    raise ValueError(f"a serialized {name or 'stream'} that Python cannot read")


_BOXED_VALUES: dict[str, Callable[[Any], object]] = {
    "java.lang.Integer": Int,
    "java.lang.Long": Long,
    "java.lang.Short": Short,
    "java.lang.Byte": Byte,
    "java.lang.Double": Double,
    "java.lang.Float": Float,
    "java.lang.Boolean": bool,
    "java.lang.Character": chr,
}


# -- StreamMessage bodies (MarshallingSupport) -------------------------------------------------------------------


def marshal_stream(values: Iterable[object]) -> bytes:
    """A StreamMessage's body as ActiveMQ holds it: each value as ``writeObject`` marshals it."""
    out = bytearray()
    for value in values:
        if value is None:
            out.append(0)
        elif isinstance(value, str):
            raw = modified_utf8(value)
            if len(value.encode("utf-16-le", "surrogatepass")) // 2 < 8191:
                out += b"\x09" + struct.pack(">H", len(raw)) + raw
            else:
                out += b"\x0d" + struct.pack(">I", len(raw)) + raw
        elif isinstance(value, bool):
            out += b"\x01" + bytes((int(value),))
        elif isinstance(value, (bytes, bytearray)):
            out += b"\x0a" + struct.pack(">I", len(value)) + bytes(value)
        elif isinstance(value, Byte):
            out += b"\x02" + struct.pack(">b", value)
        elif isinstance(value, Short):
            out += b"\x04" + struct.pack(">h", value)
        elif isinstance(value, Long) or (isinstance(value, int) and not -(2**31) <= value < 2**31):
            out += b"\x06" + struct.pack(">q", value)
        elif isinstance(value, int):
            out += b"\x05" + struct.pack(">i", value)
        elif isinstance(value, Float):
            out += b"\x08" + struct.pack(">f", value)
        elif isinstance(value, float):
            out += b"\x07" + struct.pack(">d", value)
        else:
            raise ValueError(f"a {type(value).__name__} is no StreamMessage value")
    return bytes(out)
