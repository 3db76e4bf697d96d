"""Java's ways of writing and reading numbers, booleans and strings, in one place.

ActiveMQ is Java: a policy string it prints, a STOMP header it writes for a typed property, the string a selector
reads as a number all follow ``Double.toString``, ``Long.valueOf`` and friends. Python's own formatting differs
(``1e-05`` vs ``1.0E-5``, ``True`` vs ``true``), so every module that must look like ActiveMQ uses these.
"""

from __future__ import annotations

import math
import re
import struct

__all__ = [
    "JAVA_LONG_MAX",
    "JAVA_LONG_MIN",
    "is_number",
    "java_bool",
    "java_double",
    "java_float",
    "java_long",
    "java_string",
    "parse_double",
    "parse_long",
]

JAVA_LONG_MAX = 2**63 - 1
JAVA_LONG_MIN = -(2**63)

#: what ``Long.valueOf`` reads: no spaces, an optional sign, decimal digits
_LONG = re.compile(r"[+-]?\d+")  # \d: like Java, any Unicode digit
#: what ``Double.valueOf`` reads once it has trimmed the ends (hexadecimal floats aside)
_DOUBLE = re.compile(r"([+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?))[fFdD]?")
#: what ``String.trim`` removes: every character up to and including the space
_TRIMMED = "".join(map(chr, range(33)))


def is_number(value: object) -> bool:
    """Whether a value is a Java ``Number``: an int or a float, but not a bool (Python's bool is an int)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def java_bool(value: bool) -> str:
    """``Boolean.toString``: ``true`` / ``false``."""
    return "true" if value else "false"


def java_double(value: float) -> str:
    """``Double.toString``: shortest digits, plain between 1e-3 and 1e7, else ``d.dddE±n``.

    Examples: ``1.0``, ``0.001``, ``1.0E7``, ``1.0E-4``, ``-0.0``, ``NaN``, ``Infinity``.
    """
    return _java_decimal(value, repr(abs(value)) if math.isfinite(value) else "")


def java_float(value: float) -> str:
    """``Float.toString`` of a value held in single precision: the shortest digits that read back as the same
    float32 (``0.1``, not ``0.10000000149011612``), written as :func:`java_double` writes them."""
    if not math.isfinite(value) or value == 0:
        return java_double(value)
    magnitude = abs(value)
    text = repr(magnitude)
    for precision in range(1, 10):
        text = f"{magnitude:.{precision - 1}e}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == magnitude:
            break
    return _java_decimal(value, text)


def _java_decimal(value: float, shortest: str) -> str:
    """Java's layout of ``value`` whose magnitude's shortest decimal text is ``shortest``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    from decimal import Decimal  # with the first double or float written as Java does (issue 45)

    _, digit_tuple, exponent = Decimal(shortest).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    point = len(digits) + exponent  # digits before the decimal point
    if 1e-3 <= magnitude < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole = digits[:point].ljust(point, "0")
        return f"{sign}{whole}.{digits[point:] or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def java_string(value: object) -> str | None:
    """A property value as Java's ``toString()`` writes it; None for what has no Java text (bytes, None)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return java_bool(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):  # a minibroker.typed.Float is single precision
        return java_float(value) if getattr(value, "JAVA", None) == "Float" else java_double(value)
    return None


def java_long(value: float) -> int:
    """Java's ``(long) double`` cast: truncate toward zero, saturate at the long range, NaN becomes 0."""
    if math.isnan(value):
        return 0
    if value >= JAVA_LONG_MAX:
        return JAVA_LONG_MAX
    if value <= JAVA_LONG_MIN:
        return JAVA_LONG_MIN
    return int(value)


def parse_long(text: str) -> int | None:
    """``Long.valueOf``: the number, or None where Java throws ``NumberFormatException``."""
    if not _LONG.fullmatch(text):
        return None
    value = int(text)
    return value if JAVA_LONG_MIN <= value <= JAVA_LONG_MAX else None


def parse_double(text: str) -> float | None:
    """``Double.valueOf`` (after its trim of the ends): the number, or None where Java throws."""
    match = _DOUBLE.fullmatch(text.strip(_TRIMMED))
    return None if match is None else float(match.group(1))
