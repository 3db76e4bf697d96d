"""Java's property and map value types, for applications whose peers (or selectors) care which one a value is.

A plain Python value maps to Java as ActiveMQ's clients see it: ``bool`` a ``Boolean``, ``int`` an ``Integer`` (a
``Long`` beyond 32 bits), ``float`` a ``Double``, ``str`` a ``String``, ``bytes`` a ``byte[]`` (map entries only).
To send another type, wrap the value: ``properties={"retries": Short(3), "ts": Long(0), "ratio": Float(0.5)}``. The
wrappers are ``int`` and ``float`` subclasses, so arithmetic, comparisons and selectors treat them as numbers, and a
received message gives them back with their type (over the native protocol and from the store; STOMP headers are
strings, as in ActiveMQ).

:func:`convert` is JMS's property conversion table (``getLongProperty`` of a ``Short`` is fine, ``getIntProperty``
of a ``Long`` raises ``MessageFormatException``, a ``String`` is parsed), recorded on ActiveMQ 5.17.2; received
messages offer it as ``msg.property_as(name, "long")``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import Any

from ._java.values import java_string
from .errors import MessageFormatError

__all__ = [
    "JAVA_TYPES",
    "Byte",
    "Double",
    "Float",
    "Int",
    "Long",
    "Short",
    "convert",
    "java_map_order",
    "java_type",
]


class _Integral(int):
    """An int that keeps its Java type; refuses a value outside the type's range."""

    __slots__ = ()
    BITS = 64
    JAVA = "Long"

    def __new__(cls, value: int | str = 0) -> _Integral:
        number = int(value)
        low, high = -(2 ** (cls.BITS - 1)), 2 ** (cls.BITS - 1) - 1
        if not low <= number <= high:
            raise MessageFormatError(f"{number} is outside a Java {cls.JAVA}'s range ({low}..{high})", value=number)
        return super().__new__(cls, number)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self)})"

    def __str__(self) -> str:  # the number, as a plain int prints (STOMP headers, f-strings)
        return int.__repr__(self)


class Byte(_Integral):
    """A Java ``byte`` (-128..127)."""

    __slots__ = ()
    BITS = 8
    JAVA = "Byte"


class Short(_Integral):
    """A Java ``short`` (-32768..32767)."""

    __slots__ = ()
    BITS = 16
    JAVA = "Short"


class Int(_Integral):
    """A Java ``int``: what a plain ``int`` is anyway, when it fits 32 bits."""

    __slots__ = ()
    BITS = 32
    JAVA = "Integer"


class Long(_Integral):
    """A Java ``long``, even for a small value."""

    __slots__ = ()
    BITS = 64
    JAVA = "Long"


class Float(float):
    """A Java ``float``: the value rounded to single precision, as Java stores it."""

    __slots__ = ()
    JAVA = "Float"

    def __new__(cls, value: float | str = 0.0) -> Float:
        number = float(value)
        if math.isfinite(number) and abs(number) <= 3.4028234663852886e38:
            number = struct.unpack("<f", struct.pack("<f", number))[0]
        return super().__new__(cls, number)

    def __repr__(self) -> str:
        return f"Float({float(self)!r})"

    def __str__(self) -> str:
        return float.__repr__(self)


class Double(float):
    """A Java ``double``: what a plain ``float`` is anyway."""

    __slots__ = ()
    JAVA = "Double"

    def __repr__(self) -> str:
        return f"Double({float(self)!r})"

    def __str__(self) -> str:
        return float.__repr__(self)


#: the names :func:`convert` accepts, JMS's getters
JAVA_TYPES = ("boolean", "byte", "short", "int", "long", "float", "double", "string")


def java_type(value: object) -> str:
    """The Java class a value is to ActiveMQ: ``Short``, ``Integer``, ``Long``, ``Double``, ``String``, ..."""
    if isinstance(value, (_Integral, Float, Double)):
        return value.JAVA
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Integer" if -(2**31) <= value < 2**31 else "Long"
    if isinstance(value, float):
        return "Double"
    if isinstance(value, str):
        return "String"
    if isinstance(value, (bytes, bytearray)):
        return "byte[]"
    raise MessageFormatError(f"a {type(value).__name__} has no Java type", value=repr(value))


#: JMS's table: which Java types each getter reads without a MessageFormatException (String is parsed)
_READS = {
    "boolean": {"Boolean"},
    "byte": {"Byte"},
    "short": {"Byte", "Short"},
    "int": {"Byte", "Short", "Integer"},
    "long": {"Byte", "Short", "Integer", "Long"},
    "float": {"Float"},
    "double": {"Float", "Double"},
}
_MAKERS: dict[str, Callable[[Any], object]] = {
    "byte": Byte,
    "short": Short,
    "int": Int,
    "long": Long,
    "float": Float,
    "double": Double,
}


def _java_text(value: str | int | float) -> str:
    text = java_string(value)
    assert text is not None
    return text


def convert(value: object, to: str) -> object:
    """``value`` read as Java type ``to`` (``"long"``, ``"string"``, ...: :data:`JAVA_TYPES`) by JMS's conversion
    table: widening is allowed, narrowing raises :class:`~minibroker.errors.MessageFormatError`, a ``String`` is
    parsed (:class:`~minibroker.errors.NumberFormatError` when it is no number). A missing value (None) reads as
    ``False`` for boolean, None for string, and raises NumberFormatError for numbers (ActiveMQ's behaviour)."""
    from .errors import NumberFormatError

    if to not in JAVA_TYPES:
        raise MessageFormatError(f"no JMS getter reads a {to!r}: one of {', '.join(JAVA_TYPES)}", value=to)
    if to == "string":
        if isinstance(value, (bytes, bytearray)):
            raise MessageFormatError("a byte[] cannot be read as a string", value=repr(value))
        return None if value is None else _java_text(value)  # type: ignore[arg-type]
    if value is None:
        if to == "boolean":
            return False
        raise NumberFormatError(f"null is no {to}", value=None)
    kind = java_type(value)
    if kind == "String":
        assert isinstance(value, str)
        if to == "boolean":
            return value.lower() == "true"
        try:
            parsed: int | float = float(value) if to in ("float", "double") else int(value.strip(), 10)
            return _MAKERS[to](parsed)
        except (ValueError, MessageFormatError):
            raise NumberFormatError(f"For input string: {value!r}", value=value) from None
    if kind not in _READS[to]:
        raise MessageFormatError(f"a {kind} cannot be read as a {to}", value=repr(value))
    if to == "boolean":
        return bool(value)
    assert isinstance(value, (int, float))
    return _MAKERS[to](value)


# -- the order a Java HashMap iterates its keys in (ActiveMQ writes maps in it: STOMP transformations, MQTT) ------


def _java_hash(text: str) -> int:
    h = 0
    for unit in struct.unpack(f"<{len(text.encode('utf-16-le')) // 2}H", text.encode("utf-16-le")):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _table_size(capacity: int) -> int:
    size = 1
    while size < capacity:
        size *= 2
    return max(size, 1)


def _hash_map_order(keys: list[str], capacity: int) -> list[str]:
    """Iteration order of a HashMap of initial ``capacity`` after putting ``keys`` in this order (resizes kept)."""
    table = _table_size(capacity)
    while len(keys) > table * 0.75:
        table *= 2
    buckets: dict[int, list[str]] = {}
    for key in keys:
        buckets.setdefault(_java_hash(key) & (table - 1), []).append(key)
    return [key for index in sorted(buckets) for key in buckets[index]]


def java_map_order(keys: list[str]) -> list[str]:
    """The order ActiveMQ's consumer side iterates a map whose producer put ``keys`` in this order: the producer's
    default HashMap, marshalled in its order, read back into ``new HashMap(size)``."""
    produced = _hash_map_order(keys, 16)
    return _hash_map_order(produced, max(len(keys), 1))
