"""The oracle's typed values (``{"short": 5}``) and its records of them (``propertyTypes``, ``mapTypes``,
``get:<type>:<name>``), for the script runner."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minibroker._java.values import java_string
from minibroker.errors import MessageEOFError, MessageFormatError, NullValueError, NumberFormatError
from minibroker.message import ObjectBody
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


def object_body(value: Any) -> ObjectBody:
    """The oracle's ``"object"`` of a send: a typed value (``{"char": "x"}`` a Character), or null for none."""
    if value is None:
        return ObjectBody(b"")
    if isinstance(value, Mapping) and set(value) == {"char"}:
        return ObjectBody.of(value["char"], "java.lang.Character")
    return ObjectBody.of(typed(value))


def classed(value: Any) -> Any:
    """A stream value as the oracle prints it: ``Integer:1``, ``byte[]:hi``, ``Float:0.1``; None as None."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return f"byte[]:{value.decode()}"
    return f"{java_type(value)}:{java_string(value)}"


def classed_object(body: ObjectBody) -> Any:
    """An ObjectMessage's object as the oracle prints it: ``java.lang.Integer:5``, ``byte[]:hi``."""
    value = body.value()
    if value is None:
        return None
    if isinstance(value, bytes):
        return f"byte[]:{value.decode()}"
    return f"{body.class_name}:{java_string(value)}"


_EXCEPTIONS = (
    (NumberFormatError, "NumberFormatException"),
    (MessageEOFError, "MessageEOFException"),
    (NullValueError, "NullPointerException"),
    (MessageFormatError, "MessageFormatException"),
)


def stream_reads(reader: Any, spec: str) -> list[Any]:
    """``reads:int,string,...``: each read's value (classed) or its exception, as the oracle records them."""
    results: list[Any] = []
    for kind in spec.split(":", 1)[1].split(","):
        try:
            results.append(classed(reader.read(kind)))
        except Exception as exc:
            results.append(next((name for cls, name in _EXCEPTIONS if isinstance(exc, cls)), repr(exc)))
    return results


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
