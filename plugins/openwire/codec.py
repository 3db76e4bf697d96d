"""OpenWire's loose encoding, sans-IO: frames in, commands out, and back.

A frame is a 4-byte size, a type byte and the command's fields in the order of its class in :mod:`.commands` (the
table: one class per type, each field with its :class:`~.commands.Kind`). Only the loose encoding is spoken, with no
marshal cache: the server's WireFormatInfo offers ``TightEncodingEnabled=false`` and ``CacheEnabled=false``, and
ActiveMQ's negotiation takes the AND of both sides' offers, so a client never uses the others. Stack traces are
offered off too; :class:`WireFormat` still reads and writes them should a peer's settings say so.

:class:`OpenWireDecoder` is fed bytes (``receive_data``) and yields commands (``next_command``), refusing a frame
past ``max_frame_size`` before buffering it; :func:`encode_command` is its inverse.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, Final

import attrs

from minibroker.errors import FrameTooLarge, LocalProtocolError

from .commands import TYPES, DataStructure, JavaThrowable, Kind
from .primitives import OpenWireFormatError, Reader, Writer

__all__ = [
    "MAGIC",
    "OpenWireDecoder",
    "WireFormat",
    "decode_command",
    "encode_command",
    "layout",
]

MAGIC: Final = b"ActiveMQ"

#: the deepest nesting of objects a frame may have (a message in a dispatch, an id in the message, ...): bounds the
#: recursion a hostile frame can cause
MAX_DEPTH: Final = 16


@attrs.define(slots=True)
class WireFormat:
    """The settings both sides agreed on (what the codec needs of them)."""

    version: int = 12
    stack_trace: bool = False
    max_frame_size: int = 104_857_600


# -- the table: each class's fields, in wire order ------------------------------------------------------------------

_LAYOUTS: dict[type[DataStructure], tuple[tuple[str, Kind], ...]] = {}
#: for each class, what each nested field may hold (None: any data structure), read from the field's annotation
_EXPECTED: dict[type[DataStructure], tuple[tuple[type[DataStructure], ...] | None, ...]] = {}


def layout(cls: type[DataStructure]) -> tuple[tuple[str, Kind], ...]:
    """``(attribute, kind)`` for each wire field of ``cls``, in the order they travel."""
    found = _LAYOUTS.get(cls)
    if found is None:
        found = tuple((f.name, f.metadata["wire"]) for f in attrs.fields(cls) if "wire" in f.metadata)
        _LAYOUTS[cls] = found
    return found


def _expected(cls: type[DataStructure]) -> tuple[tuple[type[DataStructure], ...] | None, ...]:
    """Per wire field: the classes a nested object there must be (a ConsumerId where a ConsumerId belongs), so a
    frame that puts another type there is refused by the codec, not met by the converter as a wrong object."""
    found = _EXPECTED.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        expected: list[tuple[type[DataStructure], ...] | None] = []
        for name, kind in layout(cls):
            classes = tuple(
                a for a in typing.get_args(hints[name]) if isinstance(a, type) and issubclass(a, DataStructure)
            )
            wanted = kind in (Kind.NESTED, Kind.CACHED) and classes and classes != (DataStructure,)
            expected.append(classes if wanted else None)
        found = _EXPECTED[cls] = tuple(expected)
    return found


# -- writing ----------------------------------------------------------------------------------------------------------


def _w_string(out: Writer, value: str | None, fmt: WireFormat) -> None:
    out.boolean(value is not None)
    if value is not None:
        out.utf(value)


def _w_nested(out: Writer, value: DataStructure | None, fmt: WireFormat) -> None:
    out.boolean(value is not None)
    if value is not None:
        out.i8(value.TYPE)
        _write_fields(out, value, fmt)


def _w_bytes(out: Writer, value: bytes | None, fmt: WireFormat) -> None:
    out.boolean(value is not None)
    if value is not None:
        out.i32(len(value))
        out.raw(value)


def _w_magic(out: Writer, value: bytes, fmt: WireFormat) -> None:
    if len(value) != 8:
        raise LocalProtocolError(f"WireFormatInfo's magic is 8 bytes, not {len(value)}")
    out.raw(value)


def _w_throwable(out: Writer, value: JavaThrowable | None, fmt: WireFormat) -> None:
    out.boolean(value is not None)
    if value is None:
        return
    _w_string(out, value.class_name, fmt)
    _w_string(out, value.message, fmt)
    if fmt.stack_trace:
        out.i16(len(value.stack))
        for class_name, method, file_name, line in value.stack:
            _w_string(out, class_name, fmt)
            _w_string(out, method, fmt)
            _w_string(out, file_name, fmt)
            out.i32(line)
        _w_throwable(out, value.cause, fmt)


def _w_array(out: Writer, value: tuple[DataStructure | None, ...] | None, fmt: WireFormat) -> None:
    out.boolean(value is not None)
    if value is not None:
        out.i16(len(value))
        for item in value:
            _w_nested(out, item, fmt)


_WRITERS: dict[Kind, Callable[[Writer, Any, WireFormat], None]] = {
    Kind.BYTE: lambda out, v, fmt: out.i8(v),
    Kind.BOOL: lambda out, v, fmt: out.boolean(v),
    Kind.INT: lambda out, v, fmt: out.i32(v),
    Kind.LONG: lambda out, v, fmt: out.i64(v),
    Kind.STRING: _w_string,
    Kind.NESTED: _w_nested,
    Kind.CACHED: _w_nested,
    Kind.BYTES: _w_bytes,
    Kind.MAGIC: _w_magic,
    Kind.THROWABLE: _w_throwable,
    Kind.ARRAY: _w_array,
}


def _write_fields(out: Writer, value: DataStructure, fmt: WireFormat) -> None:
    for name, kind in layout(type(value)):
        _WRITERS[kind](out, getattr(value, name), fmt)


def encode_command(command: DataStructure, fmt: WireFormat | None = None) -> bytes:
    """One frame: the size, the type byte, the fields."""
    fmt = fmt or WireFormat()
    out = Writer()
    out.i32(0)
    out.i8(command.TYPE)
    try:
        _write_fields(out, command, fmt)
    except (OverflowError, ValueError) as exc:  # struct.error is a ValueError: a number out of its Java type's range
        raise LocalProtocolError(f"{type(command).__name__} cannot be written: {exc}") from None
    buf = out.buf
    buf[0:4] = (len(buf) - 4).to_bytes(4, "big")
    return bytes(buf)


# -- reading ----------------------------------------------------------------------------------------------------------


def _r_string(reader: Reader, fmt: WireFormat, depth: int) -> str | None:
    return reader.utf() if reader.boolean() else None


def _r_nested(reader: Reader, fmt: WireFormat, depth: int) -> DataStructure | None:
    if not reader.boolean():
        return None
    return _read_object(reader, fmt, depth + 1)


def _r_bytes(reader: Reader, fmt: WireFormat, depth: int) -> bytes | None:
    return reader.take(reader.i32()) if reader.boolean() else None


def _r_throwable(reader: Reader, fmt: WireFormat, depth: int) -> JavaThrowable | None:
    if not reader.boolean():
        return None
    if depth > MAX_DEPTH:
        raise OpenWireFormatError(f"exceptions nested more than {MAX_DEPTH} deep")
    class_name = _r_string(reader, fmt, depth)
    message = _r_string(reader, fmt, depth)
    if not fmt.stack_trace:
        return JavaThrowable(class_name, message)
    stack = []
    for _ in range(max(0, reader.i16())):
        stack.append(
            (_r_string(reader, fmt, depth), _r_string(reader, fmt, depth), _r_string(reader, fmt, depth), reader.i32())
        )
    cause = _r_throwable(reader, fmt, depth + 1)
    return JavaThrowable(class_name, message, tuple(stack), cause)


def _r_array(reader: Reader, fmt: WireFormat, depth: int) -> tuple[DataStructure | None, ...] | None:
    if not reader.boolean():
        return None
    return tuple(_r_nested(reader, fmt, depth) for _ in range(max(0, reader.i16())))


_READERS: dict[Kind, Callable[[Reader, WireFormat, int], Any]] = {
    Kind.BYTE: lambda reader, fmt, depth: reader.i8(),
    Kind.BOOL: lambda reader, fmt, depth: reader.boolean(),
    Kind.INT: lambda reader, fmt, depth: reader.i32(),
    Kind.LONG: lambda reader, fmt, depth: reader.i64(),
    Kind.STRING: _r_string,
    Kind.NESTED: _r_nested,
    Kind.CACHED: _r_nested,
    Kind.BYTES: _r_bytes,
    Kind.MAGIC: lambda reader, fmt, depth: reader.take(8),
    Kind.THROWABLE: _r_throwable,
    Kind.ARRAY: _r_array,
}


def _read_object(reader: Reader, fmt: WireFormat, depth: int) -> DataStructure:
    if depth > MAX_DEPTH:
        raise OpenWireFormatError(f"objects nested more than {MAX_DEPTH} deep")
    type_byte = reader.i8()
    cls = TYPES.get(type_byte)
    if cls is None:
        raise OpenWireFormatError(f"unknown OpenWire data type {type_byte}")
    values = [_READERS[kind](reader, fmt, depth) for _, kind in layout(cls)]
    for value, wanted, (name, _) in zip(values, _expected(cls), layout(cls), strict=True):
        if wanted is not None and value is not None and not isinstance(value, wanted):
            raise OpenWireFormatError(f"{cls.__name__}.{name}: a {type(value).__name__} where it takes none")
    return cls(*values)


def decode_command(payload: bytes, fmt: WireFormat | None = None) -> DataStructure | None:
    """One frame's payload (after the size): the command; None for a null command (the type byte 0)."""
    reader = Reader(payload)
    if payload[:1] == b"\0":
        return None
    command = _read_object(reader, fmt or WireFormat(), 0)
    if not reader.at_end():
        raise OpenWireFormatError(f"{len(payload) - reader.pos} byte(s) left after a {type(command).__name__}")
    return command


class OpenWireDecoder:
    """Bytes in, commands out. A frame announcing more than ``fmt.max_frame_size`` bytes raises
    :class:`~minibroker.errors.FrameTooLarge` at once (before it is buffered). Frames are read from an offset into
    the buffer, which is compacted once the read part is the larger: a 256 KiB read of small frames is not shifted
    once per frame."""

    def __init__(self, fmt: WireFormat | None = None) -> None:
        self.fmt = fmt or WireFormat()
        self._buffer = bytearray()
        self._pos = 0

    def receive_data(self, data: bytes) -> None:
        if self._pos and self._pos * 2 >= len(self._buffer):
            del self._buffer[: self._pos]
            self._pos = 0
        self._buffer += data

    @property
    def buffered(self) -> int:
        return len(self._buffer) - self._pos

    def next_command(self) -> DataStructure | None:
        """The next whole command, or None when more bytes are needed (a null command is skipped)."""
        while True:
            buffer, pos = self._buffer, self._pos
            if len(buffer) - pos < 4:
                return None
            size = int.from_bytes(buffer[pos : pos + 4], "big", signed=True)
            if size < 1:
                raise OpenWireFormatError(f"a frame of size {size}")
            if size > self.fmt.max_frame_size:
                raise FrameTooLarge(f"Frame size of {size} larger than max allowed {self.fmt.max_frame_size}")
            end = pos + 4 + size
            if len(buffer) < end:
                return None
            payload = bytes(buffer[pos + 4 : end])
            self._pos = end
            if end == len(buffer):
                buffer.clear()
                self._pos = 0
            command = decode_command(payload, self.fmt)
            if command is not None:
                return command
