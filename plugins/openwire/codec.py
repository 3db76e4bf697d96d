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

import struct
import typing
from collections.abc import Callable
from typing import Any, Final

import attrs

from minibroker._java.bodies import modified_utf8
from minibroker.errors import FrameTooLarge, LocalProtocolError

from .commands import TYPES, DataStructure, JavaThrowable, Kind, Message
from .primitives import OpenWireFormatError, Reader, Writer, decode_utf

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
    """The table's writing of one object (the reference :func:`_compiled_writer` is checked against)."""
    for name, kind in layout(type(value)):
        _WRITERS[kind](out, getattr(value, name), fmt)


def encode_command(command: DataStructure, fmt: WireFormat | None = None) -> bytes:
    """One frame: the size, the type byte, the fields."""
    buf = bytearray(5)
    buf[4] = command.TYPE & 0xFF
    try:
        _writer(type(command))(buf, command, fmt or _DEFAULT_FORMAT)
    except (OverflowError, ValueError, struct.error) as exc:  # a number out of its Java type's range
        raise LocalProtocolError(f"{type(command).__name__} cannot be written: {exc}") from None
    buf[0:4] = (len(buf) - 4).to_bytes(4, "big")
    return bytes(buf)


def encode_command_table(command: DataStructure, fmt: WireFormat | None = None) -> bytes:
    """:func:`encode_command` through the table, field by field (the reference the compiled writers are checked
    against)."""
    fmt = fmt or WireFormat()
    out = Writer()
    out.i32(0)
    out.i8(command.TYPE)
    try:
        _write_fields(out, command, fmt)
    except (OverflowError, ValueError, struct.error) as exc:
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
    return _read_object_table(reader, fmt, depth + 1)


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


def _read_object_table(reader: Reader, fmt: WireFormat, depth: int) -> DataStructure:
    """The table's reading of one object, field by field (the reference :func:`_compiled_reader` is checked
    against; arrays, exceptions and the magic still read through it)."""
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
    return _decode(payload, fmt, _read_object)


def decode_command_table(payload: bytes, fmt: WireFormat | None = None) -> DataStructure | None:
    """:func:`decode_command` through the table, field by field (the reference the compiled readers are checked
    against)."""
    return _decode(payload, fmt, _read_object_table)


def _decode(
    payload: bytes, fmt: WireFormat | None, read: Callable[[Reader, WireFormat, int], DataStructure]
) -> DataStructure | None:
    reader = Reader(payload)
    if payload[:1] == b"\0":
        return None
    try:
        command = read(reader, fmt or _DEFAULT_FORMAT, 0)
    except (IndexError, struct.error):  # a compiled reader read past the end: the frame is short
        raise OpenWireFormatError("the frame ends early") from None
    if not reader.at_end():
        raise OpenWireFormatError(f"{len(payload) - reader.pos} byte(s) left after a {type(command).__name__}")
    return command


# -- the compiled codec -------------------------------------------------------------------------------------------
#
# The table above is read field by field: a dict lookup, a call and a Reader method per field, about 60 fields per
# message with its ids. The same table is compiled here, once per class, into one reading and one writing function
# whose fields are inlined struct calls (as attrs writes a class's __init__): the reference and the compiled path
# meet byte for byte in tests/plugins/openwire/test_codec_compiled.py. Arrays, exceptions and the magic, rare,
# still go through the table's functions.

_DEFAULT_FORMAT: Final = WireFormat()
_INT_FROM = struct.Struct(">i").unpack_from
_LONG_FROM = struct.Struct(">q").unpack_from
_USHORT_FROM = struct.Struct(">H").unpack_from
_INT_PACK = struct.Struct(">i").pack
_LONG_PACK = struct.Struct(">q").pack
_USHORT_PACK = struct.Struct(">H").pack

ObjectReader = Callable[[Reader, WireFormat, int], DataStructure]
ObjectWriter = Callable[[bytearray, Any, WireFormat], None]

_COMPILED_READERS: dict[int, ObjectReader] = {}
_COMPILED_WRITERS: dict[type[DataStructure], ObjectWriter] = {}


def _short(data: bytes, end: int) -> typing.NoReturn:
    raise OpenWireFormatError(f"frame ends {end - len(data)} byte(s) early")


def _negative(n: int) -> typing.NoReturn:
    raise OpenWireFormatError(f"negative length {n}")


def _wrong(cls: type[DataStructure], name: str, value: object) -> typing.NoReturn:
    raise OpenWireFormatError(f"{cls.__name__}.{name}: a {type(value).__name__} where it takes none")


def _too_long(raw: bytes) -> typing.NoReturn:
    raise LocalProtocolError(f"a string of {len(raw)} bytes does not fit writeUTF (65,535 at most)")


def _compile(source: str, name: str, namespace: dict[str, Any]) -> Any:
    scope = dict(namespace)
    exec(compile(source, f"<openwire {name}>", "exec"), scope)  # the table compiled: our own source, not input
    return scope[name]


def _compiled_reader(cls: type[DataStructure]) -> ObjectReader:
    """One function reading ``cls``'s fields (after its type byte), as :func:`_read_object_table` reads them."""
    lines = ["def read(reader, fmt, depth):", "    data = reader.data", "    pos = reader.pos"]
    checks: list[str] = []
    namespace: dict[str, Any] = {
        "cls": cls,
        "_INT_FROM": _INT_FROM,
        "_LONG_FROM": _LONG_FROM,
        "_USHORT_FROM": _USHORT_FROM,
        "_short": _short,
        "_negative": _negative,
        "_wrong": _wrong,
        "decode_utf": decode_utf,
        "_read_object": _read_object,
        "READERS": _COMPILED_READERS,
        "MAX_DEPTH": MAX_DEPTH,
    }
    names = []
    header, lines = lines, []
    per_field: list[list[str]] = []
    for i, ((name, kind), wanted) in enumerate(zip(layout(cls), _expected(cls), strict=True)):
        v = f"v{i}"
        names.append(v)
        lines = []
        per_field.append(lines)
        if kind is Kind.BOOL:
            lines += [f"    {v} = data[pos] != 0", "    pos += 1"]
        elif kind is Kind.BYTE:
            lines += [f"    {v} = data[pos]", f"    if {v} > 127:", f"        {v} -= 256", "    pos += 1"]
        elif kind is Kind.INT:
            lines += [f"    ({v},) = _INT_FROM(data, pos)", "    pos += 4"]
        elif kind is Kind.LONG:
            lines += [f"    ({v},) = _LONG_FROM(data, pos)", "    pos += 8"]
        elif kind is Kind.STRING:
            lines += [
                "    if data[pos]:",
                "        (n,) = _USHORT_FROM(data, pos + 1)",
                "        pos += 3",
                "        end = pos + n",
                "        if end > len(data):",
                "            _short(data, end)",
                "        raw = data[pos:end]",
                f"        {v} = raw.decode('ascii') if raw.isascii() else decode_utf(raw)",
                "        pos = end",
                "    else:",
                f"        {v} = None",
                "        pos += 1",
            ]
        elif kind is Kind.BYTES:
            lines += [
                "    if data[pos]:",
                "        (n,) = _INT_FROM(data, pos + 1)",
                "        pos += 5",
                "        if n < 0:",
                "            _negative(n)",
                "        end = pos + n",
                "        if end > len(data):",
                "            _short(data, end)",
                f"        {v} = data[pos:end]",
                "        pos = end",
                "    else:",
                f"        {v} = None",
                "        pos += 1",
            ]
        elif kind in (Kind.NESTED, Kind.CACHED):
            lines += [  # the type byte read here: a known type's reader called straight, else _read_object
                "    if data[pos]:",
                "        read = READERS.get(data[pos + 1])",
                "        if read is None or depth >= MAX_DEPTH:",
                "            reader.pos = pos + 1",
                f"            {v} = _read_object(reader, fmt, depth + 1)",
                "        else:",
                "            reader.pos = pos + 2",
                f"            {v} = read(reader, fmt, depth + 1)",
                "        pos = reader.pos",
                "    else:",
                f"        {v} = None",
                "        pos += 1",
            ]
            if wanted is not None:
                namespace[f"W{i}"] = wanted
                checks += [
                    f"    if {v} is not None and not isinstance({v}, W{i}):",
                    f"        _wrong(cls, {name!r}, {v})",
                ]
        else:  # arrays, exceptions, the magic: the table's reader
            namespace[f"R{i}"] = _READERS[kind]
            lines += ["    reader.pos = pos", f"    {v} = R{i}(reader, fmt, depth)", "    pos = reader.pos"]
    lines = header + _zero_runs(cls, per_field, namespace)
    if _shareable(cls):  # the same bytes, the same (immutable) object: an id read again is not built again
        namespace["SEEN"] = {}
        namespace["SEEN_MAX"] = _SEEN_MAX
        lines[3:3] = ["    start = pos"]
        lines += [
            "    reader.pos = pos",
            "    key = data[start:pos]",
            "    found = SEEN.get(key)",
            "    if found is None:",
            f"        found = cls({', '.join(names)})",
            "        if len(SEEN) >= SEEN_MAX:",
            "            SEEN.clear()",
            "        SEEN[key] = found",
            "    return found",
        ]
    else:
        lines += ["    reader.pos = pos", *checks, f"    return cls({', '.join(names)})"]
    return typing.cast(ObjectReader, _compile("\n".join(lines) + "\n", "read", namespace))


#: the bytes of a field left at its default (absent, false, zero) where those are all zero bytes
_ZERO_WIDTH: Final = {
    Kind.BOOL: 1,
    Kind.BYTE: 1,
    Kind.INT: 4,
    Kind.LONG: 8,
    Kind.STRING: 1,
    Kind.BYTES: 1,
    Kind.NESTED: 1,
    Kind.CACHED: 1,
    Kind.ARRAY: 1,
    Kind.THROWABLE: 1,
}
_ZERO_DEFAULT: Final = {Kind.BOOL: "False", Kind.BYTE: "0", Kind.INT: "0", Kind.LONG: "0"}


def _zero_runs(cls: type[DataStructure], per_field: list[list[str]], namespace: dict[str, Any]) -> list[str]:
    """The fields' reading code; the class's rarely set tail (``RARELY_SET``: a message's data structure, broker path,
    times the broker sets...), when all its fields are at their defaults, read with one comparison of zero bytes
    instead of one read each (any other bytes: field by field as before)."""
    fields = layout(cls)
    names = [name for name, _ in fields]
    first = getattr(cls, "RARELY_SET", None)
    if first not in names or any(kind not in _ZERO_WIDTH for _, kind in fields[names.index(first) :]):
        return [line for lines in per_field for line in lines]
    i = names.index(first)
    width = sum(_ZERO_WIDTH[kind] for _, kind in fields[i:])
    namespace["ZEROS"] = bytes(width)
    out = [line for lines in per_field[:i] for line in lines]
    out.append(f"    if data[pos:pos + {width}] == ZEROS:")
    out += [f"        v{k} = {_ZERO_DEFAULT.get(fields[k][1], 'None')}" for k in range(i, len(fields))]
    out += [f"        pos += {width}", "    else:"]
    out += ["    " + line for lines in per_field[i:] for line in lines]
    return out


#: the objects each shareable class remembers by their bytes (then forgets all at once): a connection's ids and
#: destinations come back in every message and ack, and building one costs more than finding it
_SEEN_MAX: Final = 4096
_FLAT: Final = frozenset({Kind.BOOL, Kind.BYTE, Kind.INT, Kind.LONG, Kind.STRING})


def _shareable(cls: type[DataStructure]) -> bool:
    """A frozen class of plain fields only (ids, destinations): one decoded object may stand for every equal read."""
    fields = layout(cls)
    if not fields or any(kind not in _FLAT for _, kind in fields):
        return False
    try:
        setattr(cls(), fields[0][0], None)
    except attrs.exceptions.FrozenInstanceError:
        return True
    return False


def _read_object(reader: Reader, fmt: WireFormat, depth: int) -> DataStructure:
    """One object (its type byte, then its fields) through its class's compiled reader."""
    if depth > MAX_DEPTH:
        raise OpenWireFormatError(f"objects nested more than {MAX_DEPTH} deep")
    type_byte = reader.i8()
    read = _COMPILED_READERS.get(type_byte)
    if read is None:
        cls = TYPES.get(type_byte)
        if cls is None:
            raise OpenWireFormatError(f"unknown OpenWire data type {type_byte}")
        read = _COMPILED_READERS[type_byte] = _compiled_reader(cls)
    return read(reader, fmt, depth)


def _compiled_writer(cls: type[DataStructure]) -> ObjectWriter:
    """One function writing ``cls``'s fields (after its type byte), as :func:`_write_fields` writes them."""
    lines = ["def write(buf, value, fmt):"]
    namespace: dict[str, Any] = {
        "_INT_PACK": _INT_PACK,
        "_LONG_PACK": _LONG_PACK,
        "_USHORT_PACK": _USHORT_PACK,
        "_too_long": _too_long,
        "modified_utf8": modified_utf8,
        "_writer": _writer,
        "WRITERS": _COMPILED_WRITERS,
        "Writer": Writer,
    }
    for i, (name, kind) in enumerate(layout(cls)):
        lines.append(f"    v = value.{name}")
        if kind is Kind.BOOL:
            lines.append("    buf.append(1 if v else 0)")
        elif kind is Kind.BYTE:
            lines.append("    buf.append(v & 0xFF)")
        elif kind is Kind.INT:
            lines.append("    buf += _INT_PACK(v)")
        elif kind is Kind.LONG:
            lines.append("    buf += _LONG_PACK(v)")
        elif kind is Kind.STRING:
            lines += [
                "    if v is None:",
                "        buf.append(0)",
                "    else:",
                "        buf.append(1)",
                "        raw = v.encode('ascii') if v.isascii() and '\\0' not in v else modified_utf8(v)",
                "        if len(raw) > 0xFFFF:",
                "            _too_long(raw)",
                "        buf += _USHORT_PACK(len(raw))",
                "        buf += raw",
            ]
        elif kind is Kind.BYTES:
            lines += [
                "    if v is None:",
                "        buf.append(0)",
                "    else:",
                "        buf.append(1)",
                "        buf += _INT_PACK(len(v))",
                "        buf += v",
            ]
        elif kind in (Kind.NESTED, Kind.CACHED):
            lines += [
                "    if v is None:",
                "        buf.append(0)",
                "    else:",
                "        buf.append(1)",
                "        buf.append(v.TYPE & 0xFF)",
                "        (WRITERS.get(type(v)) or _writer(type(v)))(buf, v, fmt)",
            ]
        else:  # arrays, exceptions, the magic: the table's writer
            namespace[f"W{i}"] = _WRITERS[kind]
            lines += ["    out = Writer()", "    out.buf = buf", f"    W{i}(out, v, fmt)"]
    if len(lines) == 1:
        lines.append("    pass")
    return typing.cast(ObjectWriter, _compile("\n".join(lines) + "\n", "write", namespace))


def _writer(cls: type[DataStructure]) -> ObjectWriter:
    write = _COMPILED_WRITERS.get(cls)
    if write is None:
        write = _COMPILED_WRITERS[cls] = _compiled_writer(cls)
    return write


#: the message commands whose payload the decoder keeps (``Message.raw``: what a dispatch may reuse)
_MESSAGE_CLASSES: Final = frozenset(cls for cls in TYPES.values() if issubclass(cls, Message))


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
                if command.__class__ in _MESSAGE_CLASSES:
                    command.raw = payload
                return command
