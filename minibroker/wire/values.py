"""Property maps on the wire (a message's properties, and a MapMessage's body): one tagged value per name.

Tags 0-7 are Python's own types (``int`` in 64 bits, else as big-endian bytes; ``float`` a double); 8-11 keep the Java
types of :mod:`minibroker.typed` that a plain Python value would not say (``Byte``, ``Short``, a small ``Long``, a
single-precision ``Float``), so they come back as sent. ``Int`` and ``Double`` need no tag: a plain ``int`` in 32 bits
is an Integer and a plain ``float`` a Double anyway.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from ..message import PropertyValue
from ..typed import Byte, Float, Long, Short
from . import layouts as _layouts
from .errors import Malformed, cannot_encode

__all__ = ["read_properties", "write_properties"]

P_NONE, P_FALSE, P_TRUE, P_INT, P_FLOAT, P_STR, P_BYTES, P_BIGINT = range(8)
P_BYTE, P_SHORT, P_LONG, P_FLOAT32 = 8, 9, 10, 11

I64 = _layouts.I64
F64 = _layouts.F64
LEN = _layouts.LEN
U32_UNPACK = LEN.unpack_from
INT64_MIN = _layouts.INT64_MIN
INT64_MAX = _layouts.INT64_MAX
_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_F32 = struct.Struct(">f")

#: wrapper type -> (tag, layout)
_TYPED: dict[type, tuple[int, struct.Struct]] = {
    Byte: (P_BYTE, _I8),
    Short: (P_SHORT, _I16),
    Long: (P_LONG, I64),
    Float: (P_FLOAT32, _F32),
}
_TYPED_BY_TAG = {tag: (layout, cls) for cls, (tag, layout) in _TYPED.items()}


def write_properties(props: Mapping[str, PropertyValue], parts: list[bytes]) -> int:
    """Append ``props`` (count, then name and tagged value each) to ``parts``; return the bytes written."""
    parts.append(LEN.pack(len(props)))
    size = 4
    pack_len = LEN.pack
    for key, value in props.items():
        if not isinstance(key, str):
            cannot_encode(f"property name {key!r}: names are str")
        raw = key.encode()
        parts.append(pack_len(len(raw)))
        parts.append(raw)
        size += 4 + len(raw)
        kind = type(value)
        if kind is str:
            assert isinstance(value, str)
            raw = value.encode()
            parts.append(b"\x05")
            parts.append(pack_len(len(raw)))
            parts.append(raw)
            size += 5 + len(raw)
        elif value is None:
            parts.append(b"\x00")
            size += 1
        elif value is True:
            parts.append(b"\x02")
            size += 1
        elif value is False:
            parts.append(b"\x01")
            size += 1
        elif kind in _TYPED:
            tag, layout = _TYPED[kind]
            parts.append(bytes((tag,)))
            parts.append(layout.pack(value))
            size += 1 + layout.size
        elif isinstance(value, int):
            if INT64_MIN <= value <= INT64_MAX:
                parts.append(b"\x03")
                parts.append(I64.pack(value))
                size += 9
            else:
                big = int(value).to_bytes((value.bit_length() + 8) // 8, "big", signed=True)
                parts.append(b"\x07")
                parts.append(pack_len(len(big)))
                parts.append(big)
                size += 5 + len(big)
        elif isinstance(value, float):
            parts.append(b"\x04")
            parts.append(F64.pack(value))
            size += 9
        elif isinstance(value, str):
            raw = str(value).encode()
            parts.append(b"\x05")
            parts.append(pack_len(len(raw)))
            parts.append(raw)
            size += 5 + len(raw)
        elif isinstance(value, (bytes, bytearray, memoryview)):
            raw = bytes(value)
            parts.append(b"\x06")
            parts.append(pack_len(len(raw)))
            parts.append(raw)
            size += 5 + len(raw)
        else:
            cannot_encode(
                f"property {key!r}: a {type(value).__name__} is not a property type "
                "(str, int, float, bool, bytes, None or a minibroker.typed wrapper)"
            )
    return size


def read_properties(frame: bytes, pos: int) -> tuple[dict[str, PropertyValue], int]:
    """The property map at ``pos`` of ``frame``, and the position after it."""
    (count,) = U32_UNPACK(frame, pos)
    pos += 4
    size = len(frame)
    if count * 5 > size - pos:
        raise Malformed(f"{count} properties announced, {size - pos} bytes left")
    props: dict[str, PropertyValue] = {}
    for _ in range(count):
        (n,) = U32_UNPACK(frame, pos)
        pos += 4
        end = pos + n
        if end >= size:
            raise Malformed(f"property name is truncated: {n} bytes announced, {size - pos} left")
        key = frame[pos:end].decode()
        tag = frame[end]
        pos = end + 1
        value: PropertyValue
        if tag == P_STR:
            (n,) = U32_UNPACK(frame, pos)
            pos += 4
            end = pos + n
            if end > size:
                raise Malformed(f"property {key!r} is truncated: {n} bytes announced, {size - pos} left")
            value = frame[pos:end].decode()
            pos = end
        elif tag == P_INT:
            (value,) = I64.unpack_from(frame, pos)
            pos += 8
        elif tag == P_TRUE:
            value = True
        elif tag == P_FALSE:
            value = False
        elif tag == P_NONE:
            value = None
        elif tag == P_FLOAT:
            (value,) = F64.unpack_from(frame, pos)
            pos += 8
        elif tag in (P_BYTES, P_BIGINT):
            (n,) = U32_UNPACK(frame, pos)
            pos += 4
            end = pos + n
            if end > size:
                raise Malformed(f"property {key!r} is truncated: {n} bytes announced, {size - pos} left")
            raw = frame[pos:end]
            pos = end
            value = raw if tag == P_BYTES else int.from_bytes(raw, "big", signed=True)
        elif tag in _TYPED_BY_TAG:
            layout, cls = _TYPED_BY_TAG[tag]
            if pos + layout.size > size:
                raise Malformed(f"property {key!r} is truncated")
            (raw_value,) = layout.unpack_from(frame, pos)
            pos += layout.size
            value = cls(raw_value)
        else:
            raise Malformed(f"property {key!r} has an unknown type tag {tag}")
        if key in props:
            raise Malformed(f"property {key!r} appears twice")
        props[key] = value
    return props, pos
