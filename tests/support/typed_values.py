"""The oracle's typed values (``{"short": 5}``) and its records of them (``propertyTypes``, ``mapTypes``,
``get:<type>:<name>``), for the script runner."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minibroker.errors import MessageFormatError, NumberFormatError
from minibroker.typed import Byte, Double, Float, Int, Long, Short, convert, java_type

_MAKERS: dict[str, Any] = {
    "byte": Byte,
    "short": Short,
    "int": Int,
    "long": Long,
    "float": Float,
    "double": Double,
    "boolean": bool,
    "string": str,
    "bytes": lambda text: str(text).encode(),
}


def typed(value: Any) -> Any:
    """``{"short": 5}`` as ``Short(5)``; a plain JSON value as it is."""
    if isinstance(value, Mapping) and len(value) == 1:
        ((kind, raw),) = value.items()
        if kind in _MAKERS:
            return _MAKERS[kind](raw)
    return value


def java_types(values: Mapping[str, Any]) -> dict[str, str]:
    """The Java class of each value, as the oracle prints them (``byte[]`` for bytes)."""
    return {k: java_type(v) for k, v in sorted(values.items())}


def getter(properties: Mapping[str, Any], spec: str) -> Any:
    """``get:<type>:<name>``: what JMS's getter returns (numbers as the oracle prints them), or the exception."""
    _, kind, name = spec.split(":", 2)
    try:
        value = convert(properties.get(name), kind)
    except NumberFormatError:
        return "NumberFormatException"
    except MessageFormatError:
        return "MessageFormatException"
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    return float(value) if isinstance(value, float) else int(value)  # type: ignore[arg-type]


def plain(values: Mapping[str, Any]) -> dict[str, Any]:
    """A map body as the oracle prints it: bytes as text, sorted."""
    return {
        k: v.decode() if isinstance(v, bytes) else (float(v) if isinstance(v, float) else v)
        for k, v in sorted(values.items())
    }
