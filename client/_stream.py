"""Reading a StreamMessage as ActiveMQ's ``ActiveMQStreamMessage`` does: value by value over its marshalled bytes,
each read as the type the reader asks for.

The reads work on the body's bytes as ActiveMQ lays them out (:func:`minibroker._java_bodies.marshal_stream`)
because ActiveMQ's rules are rules about those bytes: a read that fails goes back to where it started, except a
``readBytes`` of a value that is no byte array, which has already consumed its type byte (what follows is then read
from the middle of a value, as recorded on ActiveMQ 5.17.2: tests/differential/features/stream_message_reads.json).
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from minibroker._java.bodies import marshal_stream, read_modified_utf8
from minibroker._java.values import java_bool, java_double, java_float, parse_double, parse_long
from minibroker.errors import MessageEOFError, MessageFormatError, NullValueError, NumberFormatError
from minibroker.message import PropertyValue
from minibroker.typed import Byte, Double, Float, Int, Long, Short

__all__ = ["StreamReader"]

NULL, BOOLEAN, BYTE, CHAR, SHORT, INTEGER, LONG, DOUBLE, FLOAT, STRING, BYTE_ARRAY = range(11)
BIG_STRING = 13
_NUMBERS = {BYTE: ">b", SHORT: ">h", INTEGER: ">i", LONG: ">q", FLOAT: ">f", DOUBLE: ">d", CHAR: ">H"}

#: each read: the value types it takes (ActiveMQStreamMessage's readXxx), and how it makes its result
_TAKES: dict[str, frozenset[int]] = {
    "boolean": frozenset({BOOLEAN, STRING}),
    "byte": frozenset({BYTE, STRING}),
    "short": frozenset({SHORT, BYTE, STRING}),
    "int": frozenset({INTEGER, SHORT, BYTE, STRING}),
    "long": frozenset({LONG, INTEGER, SHORT, BYTE, STRING}),
    "float": frozenset({FLOAT, STRING}),
    "double": frozenset({DOUBLE, FLOAT, STRING}),
    "string": frozenset({STRING, BIG_STRING, LONG, INTEGER, SHORT, BYTE, FLOAT, DOUBLE, BOOLEAN, CHAR}),
    "object": frozenset({STRING, BIG_STRING, LONG, INTEGER, SHORT, BYTE, FLOAT, DOUBLE, BOOLEAN, CHAR, BYTE_ARRAY}),
}
_INTEGRAL: dict[str, Callable[[int], object]] = {"byte": Byte, "short": Short, "int": Int, "long": Long}
#: what readObject gives for each value type
_BOXES: dict[int, Callable[[object], object]] = {
    LONG: Long,  # type: ignore[dict-item]
    SHORT: Short,  # type: ignore[dict-item]
    BYTE: Byte,  # type: ignore[dict-item]
    FLOAT: Float,  # type: ignore[dict-item]
}
#: what ``read`` accepts: JMS's ``readXxx`` methods
READS = (*_TAKES, "bytes")


class StreamReader:
    """A cursor over a StreamMessage's values (``msg.stream_reader()``), with ActiveMQ's ``readXxx`` rules.

    ``read("int")`` is ``readInt()``: a ``Short`` or ``Byte`` reads as an int, a ``Long`` does not
    (MessageFormatError), a string is parsed (NumberFormatError when it is no number); ``read()`` is ``readObject()``
    and gives each value as it is. A read that fails does not advance, so the value can be read as another type, as
    in ActiveMQ. ``read("bytes")`` reads a byte array whole; the ``read("bytes")`` after it returns None (JMS's
    end-of-array ``-1``). Past the last value reads raise :class:`~minibroker.errors.MessageEOFError`; a null reads
    as None for ``string`` and ``object`` and raises :class:`~minibroker.errors.NullValueError` (Java's
    NullPointerException) for the others. ``stream_reader()`` starts again from the first value (JMS's ``reset``).
    """

    __slots__ = ("_data", "_position", "_remaining")

    def __init__(self, values: tuple[PropertyValue, ...]) -> None:
        self._data = marshal_stream(values)
        self._position = 0
        #: readBytes' state, as ActiveMQ keeps it: -1 between values, 0 after a whole array was read
        self._remaining = -1

    def read(self, as_type: str = "object") -> object:
        if as_type not in READS:
            raise MessageFormatError(f"no StreamMessage read {as_type!r}: one of {', '.join(READS)}", value=as_type)
        if as_type == "bytes":
            return self._read_bytes()
        data, start = self._data, self._position
        if start >= len(data):
            raise MessageEOFError("reached end of data", value=start)
        kind = data[start]
        if kind == NULL:
            if as_type not in ("string", "object"):
                raise NullValueError(f"Cannot convert NULL value to {as_type}.", value=start)
            self._position = start + 1
            return None
        if kind not in _TAKES[as_type]:
            raise MessageFormatError(f"not a {as_type} type", value=kind)
        value, end = self._value(kind, start + 1)
        if as_type == "object":
            result = _BOXES[kind](value) if kind in _BOXES else value
        elif as_type == "string":
            result = _text(kind, value)
        elif kind in (STRING, BIG_STRING) and as_type != "string":
            result = _parsed(str(value), as_type)  # a NumberFormatError leaves the position where it was
        elif as_type == "boolean":
            result = bool(value)
        elif as_type in _INTEGRAL:
            result = _INTEGRAL[as_type](int(value))  # type: ignore[call-overload]
        else:
            result = Float(value) if as_type == "float" else Double(value)  # type: ignore[arg-type]
        self._position = end
        return result

    def __iter__(self) -> StreamReader:
        return self

    def __next__(self) -> object:
        """The next value as it is (``readObject``), until the end."""
        if self._position >= len(self._data):
            raise StopIteration
        return self.read()

    def __repr__(self) -> str:
        return f"<StreamReader at byte {self._position} of {len(self._data)}>"

    def _read_bytes(self) -> bytes | None:
        data, start = self._data, self._position
        if self._remaining == 0:
            self._remaining = -1
            return None
        if start >= len(data):
            raise MessageEOFError("reached end of data", value=start)
        if data[start] != BYTE_ARRAY:
            self._position = start + 1  # ActiveMQ's readBytes does not go back to the type byte
            raise MessageFormatError("Not a byte array", value=data[start])
        value, end = self._value(BYTE_ARRAY, start + 1)
        self._position = end
        self._remaining = 0
        assert isinstance(value, bytes)
        return value

    def _value(self, kind: int, pos: int) -> tuple[object, int]:
        """The value of type ``kind`` at ``pos`` and the position after it (EOF where the bytes end first)."""
        data = self._data
        try:
            if kind in _NUMBERS:
                layout = _NUMBERS[kind]
                (number,) = struct.unpack_from(layout, data, pos)
                return (chr(number) if kind == CHAR else number), pos + struct.calcsize(layout)
            if kind == BOOLEAN:
                if pos >= len(data):
                    raise struct.error
                return data[pos] != 0, pos + 1
            (length,) = struct.unpack_from(">H" if kind == STRING else ">i", data, pos)
            pos += 2 if kind == STRING else 4
            if length < 0 or pos + length > len(data):
                raise struct.error
            raw = data[pos : pos + length]
        except struct.error:
            self._position = len(data)
            raise MessageEOFError("reached end of data", value=pos) from None
        if kind == BYTE_ARRAY:
            return raw, pos + length
        try:
            return read_modified_utf8(raw), pos + length
        except (IndexError, UnicodeDecodeError):
            raise MessageFormatError("malformed input around byte", value=pos) from None


def _text(kind: int, value: object) -> str:
    """``readString`` of a value of type ``kind``: Java's toString."""
    if kind == BOOLEAN:
        return java_bool(bool(value))
    if kind == FLOAT:
        return java_float(float(value))  # type: ignore[arg-type]
    if kind == DOUBLE:
        return java_double(float(value))  # type: ignore[arg-type]
    return str(value)


_RANGES = {"byte": 8, "short": 16, "int": 32, "long": 64}


def _parsed(text: str, as_type: str) -> object:
    """``Byte.valueOf(text)``, ``Integer.valueOf``, ``Float.valueOf``, ...; ``Boolean.valueOf`` never fails."""
    if as_type == "boolean":
        return text.lower() == "true"
    if as_type in _RANGES:
        number = parse_long(text)
        bits = _RANGES[as_type]
        if number is None or not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise NumberFormatError(f"For input string: {text!r}", value=text)
        return _INTEGRAL[as_type](number)
    parsed = parse_double(text)
    if parsed is None:
        raise NumberFormatError(f"For input string: {text!r}", value=text)
    return Float(parsed) if as_type == "float" else Double(parsed)
