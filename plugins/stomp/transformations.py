"""The STOMP ``transformation`` header for MapMessages, as ActiveMQ 5.17.2 renders and reads them (recorded:
tests/conformance/recordings/stomp_transformation_*.json).

ActiveMQ's ``JmsFrameTranslator`` writes a map with XStream: as XML (``jms-map-xml``, also asked as ``jms-xml``), or
as JSON through Jettison's mapped convention (``jms-map-json``, also ``jms-json``, and ``jms-object-json`` for a
map). Reproducing it byte for byte means reproducing three Java behaviours:

* the entry order is the iteration order of the ``java.util.HashMap`` the receiving side unmarshals the map into
  (``new HashMap(size)`` filled in the order of the producer's own HashMap): :func:`java_map_order`;
* numbers are printed by Java's ``Double.toString``/``Float.toString`` (``1.0E10``, ``1.23456789E8``);
* Jettison turns every text that parses as a Long, a Double or a boolean into a JSON number or boolean (a string
  value ``"123"`` is written ``123``), strips a Double's trailing ``.0`` and writes one entry as an object, none as
  ``""``.

A SEND with ``jms-map-json`` or ``jms-map-xml`` makes a MapMessage of its body; a body that does not parse makes a
TextMessage of it, as ActiveMQ does (no error).
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import attrs

from minibroker.message import Message, PropertyValue, map_body
from minibroker.typed import Byte, Double, Float, Int, Long, Short, java_map_order, java_type

__all__ = [
    "MAP_TRANSFORMATIONS",
    "SEND_TRANSFORMATIONS",
    "canonical_transformation",
    "java_map_order",
    "map_to_json",
    "map_to_xml",
    "message_from_transformed_send",
    "parse_map",
    "transformed",
]

#: what a SUBSCRIBE may ask for a MapMessage, and the name ActiveMQ puts in the MESSAGE's ``transformation`` header
MAP_TRANSFORMATIONS = {
    "jms-map-json": "jms-map-json",
    "jms-json": "jms-map-json",
    "jms-object-json": "jms-object-json",
    "jms-map-xml": "jms-map-xml",
    "jms-xml": "jms-map-xml",
    "jms-object-xml": "jms-object-xml",
}


def canonical_transformation(name: str) -> str:
    return MAP_TRANSFORMATIONS[name]


# -- Java's number texts ----------------------------------------------------------------------------------------------


def _java_decimal(value: float, digits: str, exponent: int) -> str:
    """Java's Double/Float.toString from the shortest ``digits`` (no dot) with decimal ``exponent`` (d.ddd x 10^e)."""
    sign = "-" if value < 0 else ""
    if 1e-3 <= abs(value) < 1e7:
        point = exponent + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, frac = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest(value: float, single: bool) -> tuple[str, int]:
    """The shortest digits that read back as ``value`` (as a float32 when ``single``), and the decimal exponent."""
    text = float.__repr__(float(value))
    if single:
        for precision in range(1, 10):
            text = f"{value:.{precision - 1}e}"
            if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value:
                break
    _, digit_tuple, exp = Decimal(text).as_tuple()
    digits = "".join(map(str, digit_tuple))
    assert isinstance(exp, int)
    exponent = len(digits) + exp - 1
    return digits.rstrip("0") or "0", exponent


def java_number_text(value: float | int, single: bool = False) -> str:
    """``Double.toString`` (``Float.toString`` when ``single``) for a float; the digits for an int."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(int(value))
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    digits, exponent = _shortest(value, single)
    return _java_decimal(value, digits, exponent)


# -- rendering --------------------------------------------------------------------------------------------------------

_XSTREAM_NAMES = {
    "Boolean": "boolean",
    "Byte": "byte",
    "Short": "short",
    "Integer": "int",
    "Long": "long",
    "Float": "float",
    "Double": "double",
    "String": "string",
    "byte[]": "byte-array",
}


def _entry(value: PropertyValue) -> tuple[str, str]:
    """(XStream element name, its text) of a map value."""
    if isinstance(value, (bytes, bytearray)):
        return "byte-array", base64.b64encode(bytes(value)).decode()
    kind = java_type(value)
    if isinstance(value, bool):
        return "boolean", "true" if value else "false"
    if isinstance(value, float):
        return _XSTREAM_NAMES[kind], java_number_text(value, single=kind == "Float")
    return _XSTREAM_NAMES[kind], str(value) if isinstance(value, str) else java_number_text(int(value))  # type: ignore[arg-type]


def _ordered(values: Mapping[str, PropertyValue]) -> list[tuple[str, PropertyValue]]:
    return [(key, values[key]) for key in java_map_order(list(values))]


_LONG = re.compile(r"[+-]?\d+")
_DOUBLE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?")


def _jettison(text: str) -> object:
    """Jettison's DefaultConverter: a Long, else a finite Double, else a boolean, else the text."""
    if _LONG.fullmatch(text) and -(2**63) <= int(text) < 2**63:
        return int(text)
    if _DOUBLE.fullmatch(text) and "E-" not in text.upper():  # recorded: "1.0E-4" stays a string (Jettison)
        return float(text.rstrip("fFdD"))
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    return text


def _json_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = java_number_text(value)
        if "." in text and "E" not in text:  # Jettison's numberToString: trailing zeros, then the dot, go
            text = text.rstrip("0").rstrip(".")
        return text
    return _json_string(str(value))


def _json_string(text: str) -> str:
    out = ['"']
    previous = ""
    for char in text:
        if char in '\\"':
            out.append("\\" + char)
        elif char == "/":
            out.append("\\/" if previous == "<" else "/")
        elif char == "\b":
            out.append("\\b")
        elif char == "\t":
            out.append("\\t")
        elif char == "\n":
            out.append("\\n")
        elif char == "\f":
            out.append("\\f")
        elif char == "\r":
            out.append("\\r")
        elif char < " ":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
        previous = char
    out.append('"')
    return "".join(out)


def map_to_json(values: Mapping[str, PropertyValue]) -> str:
    """The map as ActiveMQ's ``jms-map-json`` writes it."""
    entries = []
    for key, value in _ordered(values):
        name, text = _entry(value)
        if name == "string":
            entries.append(f'{{"string":[{_json_value(_jettison(key))},{_json_value(_jettison(text))}]}}')
        else:
            entries.append(f'{{"string":{_json_value(_jettison(key))},"{name}":{_json_value(_jettison(text))}}}')
    if not entries:
        return '{"map":""}'
    if len(entries) == 1:
        return f'{{"map":{{"entry":{entries[0]}}}}}'
    return f'{{"map":{{"entry":[{",".join(entries)}]}}}}'


def _xml_text(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
        .replace("\r", "&#xd;")
    )


def map_to_xml(values: Mapping[str, PropertyValue]) -> str:
    """The map as ActiveMQ's ``jms-map-xml`` writes it (XStream's pretty printer)."""
    if not values:
        return "<map/>"
    lines = ["<map>"]
    for key, value in _ordered(values):
        name, text = _entry(value)
        lines += [
            "  <entry>",
            f"    <string>{_xml_text(key)}</string>",
            f"    <{name}>{_xml_text(text)}</{name}>",
            "  </entry>",
        ]
    lines.append("</map>")
    return "\n".join(lines)


# -- reading ----------------------------------------------------------------------------------------------------------

_MAKERS: dict[str, Callable[[Any], PropertyValue]] = {
    "boolean": lambda t: t.strip().lower() == "true" if isinstance(t, str) else bool(t),
    "byte": lambda t: Byte(int(t)),
    "short": lambda t: Short(int(t)),
    "int": lambda t: Int(int(t)),
    "long": lambda t: Long(int(t)),
    "float": lambda t: Float(float(t)),
    "double": lambda t: Double(float(t)),
    "string": lambda t: t if isinstance(t, str) else _json_value(t).strip('"'),
    "byte-array": lambda t: base64.b64decode(str(t)),
}


def _typed(name: str, raw: object) -> PropertyValue:
    if name not in _MAKERS:
        raise ValueError(f"no map value type {name!r}")
    value: PropertyValue = _MAKERS[name](raw)
    return value


def _from_json(body: str) -> dict[str, PropertyValue]:
    document = json.loads(body)
    inner = document["map"]
    if inner == "":
        return {}
    entries = inner["entry"]
    result: dict[str, PropertyValue] = {}
    for entry in entries if isinstance(entries, list) else [entries]:
        if set(entry) == {"string"} and isinstance(entry["string"], list):
            key, value = entry["string"]
            result[str(_typed("string", key))] = _typed("string", value)
        else:
            (other,) = [k for k in entry if k != "string"]
            result[str(_typed("string", entry["string"]))] = _typed(other, entry[other])
    return result


def _from_xml(body: str) -> dict[str, PropertyValue]:
    root = ElementTree.fromstring(body)
    if root.tag != "map":
        raise ValueError("not a map")
    result: dict[str, PropertyValue] = {}
    for entry in root:
        key, value = list(entry)
        result[key.text or ""] = _typed(value.tag, value.text or "")
    return result


def parse_map(body: bytes, transformation: str) -> dict[str, PropertyValue] | None:
    """The map a ``jms-map-json`` / ``jms-map-xml`` SEND body holds; None when it does not parse (the SEND then
    makes a TextMessage of the body, as ActiveMQ does)."""
    try:
        text = body.decode("utf-8")
        return _from_xml(text) if transformation.endswith("xml") else _from_json(text)
    except (ValueError, KeyError, TypeError, AttributeError, ElementTree.ParseError):
        return None


#: what a SEND may ask (recorded: the two map forms)
SEND_TRANSFORMATIONS = ("jms-map-json", "jms-map-xml")


def transformed(message: Message, transformation: str) -> Message:
    """The message a subscription with ``transformation`` writes: a MapMessage's map as JSON or XML text, with the
    ``transformation`` header ActiveMQ sets; any other message as it is."""
    body = message.body
    if isinstance(body, (str, bytes)):
        return message
    name = MAP_TRANSFORMATIONS[transformation]
    text = map_to_xml(body) if name.endswith("xml") else map_to_json(body)
    return attrs.evolve(message, body=text, properties={**message.properties, "transformation": name})


def message_from_transformed_send(message: Message, transformation: str) -> Message:
    """A SEND's message with a map ``transformation``: a MapMessage of its body, or, when the body is no map, a
    TextMessage of it (ActiveMQ answers neither with an error)."""
    raw = message.body if isinstance(message.body, bytes) else str(message.body).encode()
    values = parse_map(raw, transformation)
    if values is None:
        return attrs.evolve(message, body=raw.decode("utf-8", "replace"))
    return attrs.evolve(message, body=map_body(values))
