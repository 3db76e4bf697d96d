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
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from minibroker._defaults import DEFAULT_MAX_TRANSFORMATION_ENTRIES
from minibroker._java.bodies import deserialize, serialize
from minibroker._java.values import java_double, java_float
from minibroker.errors import MessageFormatError
from minibroker.message import Message, ObjectBody, PropertyValue, map_body
from minibroker.typed import Byte, Double, Float, Int, Long, Short, java_map_order, java_type

__all__ = [
    "DEFAULT_MAX_TRANSFORMATION_ENTRIES",
    "JMS_TRANSLATOR_NAMES",
    "TransformationLimitExceeded",
    "java_map_order",
    "map_to_json",
    "map_to_xml",
    "message_from_transformed_send",
    "object_to_json",
    "object_to_xml",
    "parse_map",
    "transformed",
]


def java_number_text(value: float | int, single: bool = False) -> str:
    """``Double.toString`` (``Float.toString`` when ``single``) for a float; the digits for an int."""
    if isinstance(value, bool) or not isinstance(value, float):
        return str(int(value))
    return java_float(value) if single else java_double(value)


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


class TransformationLimitExceeded(ValueError):
    """A message over a transformation limit: rendering it fails that delivery (the subscriber's connection, as any
    failed rendering); a SEND over it gets ActiveMQ's failed-transformation TextMessage instead of a map."""


def parse_map(body: bytes, transformation: str) -> dict[str, PropertyValue] | None:
    """The map a ``jms-map-json`` / ``jms-map-xml`` SEND body holds; None when it does not parse (the SEND then
    makes a TextMessage of the body, as ActiveMQ does)."""
    try:
        text = body.decode("utf-8")
        return _from_xml(text) if transformation.endswith("xml") else _from_json(text)
    except (ValueError, KeyError, TypeError, AttributeError, ElementTree.ParseError, RecursionError):
        return None  # (RecursionError: JSON nested deeper than Python parses, a body that is no map either)


#: the names ActiveMQ's JmsFrameTranslator answers to (its META-INF/services frametranslator entries); any other
#: ``transformation`` leaves a message to the default translation (recorded: an unknown name on SEND)
JMS_TRANSLATOR_NAMES = frozenset(
    {
        "jms-advisory-json",
        "jms-advisory-xml",
        "jms-byte",
        "jms-json",
        "jms-map-json",
        "jms-map-xml",
        "jms-object-json",
        "jms-object-xml",
        "jms-xml",
    }
)

# -- objects ----------------------------------------------------------------------------------------------------------

#: XStream's element name for each class an ObjectBody can hold (minibroker._java.bodies)
_OBJECT_ELEMENTS = {
    "java.lang.String": "string",
    "java.lang.Integer": "int",
    "java.lang.Long": "long",
    "java.lang.Short": "short",
    "java.lang.Byte": "byte",
    "java.lang.Double": "double",
    "java.lang.Float": "float",
    "java.lang.Boolean": "boolean",
    "java.lang.Character": "char",
    "[B": "byte-array",
}
_ELEMENT_CLASSES = {element: name for name, element in _OBJECT_ELEMENTS.items()}
#: XStream's aliases for classes minibroker cannot serialize: a SEND naming one is refused, not turned into text
_XSTREAM_ALIASES = frozenset(
    {
        "map",
        "list",
        "set",
        "sorted-set",
        "linked-list",
        "linked-hash-map",
        "linked-hash-set",
        "tree-map",
        "tree-set",
        "hashtable",
        "properties",
        "date",
        "big-int",
        "big-decimal",
        "sql-timestamp",
        "sql-date",
        "sql-time",
        "url",
        "uri",
        "file",
        "locale",
        "uuid",
        "string-buffer",
        "string-builder",
        "object-array",
        "int-array",
        "char-array",
        "singleton-list",
        "singleton-map",
        "empty-list",
        "empty-map",
        "empty-set",
    }
)


def _object_entry(body: ObjectBody) -> tuple[str, str | None]:
    """(XStream element name, its text; None for ``<null/>``) of an object ActiveMQ would marshal."""
    class_name, value = deserialize(body.data)  # ValueError: a class Python cannot read
    if value is None:
        return "null", None
    element = _OBJECT_ELEMENTS[class_name]
    if isinstance(value, bytes):
        return element, base64.b64encode(value).decode()
    if isinstance(value, bool):
        return element, "true" if value else "false"
    if isinstance(value, float):
        return element, java_number_text(value, single=class_name == "java.lang.Float")
    return element, str(value) if isinstance(value, str) else java_number_text(int(value))  # type: ignore[call-overload]


def object_to_json(body: ObjectBody) -> str:
    """The object as ActiveMQ's ``jms-object-json`` writes it (``{"int":5}``, ``{"null":""}``)."""
    element, text = _object_entry(body)
    return f'{{"{element}":{_json_value(_jettison(text)) if text is not None else chr(34) * 2}}}'


def object_to_xml(body: ObjectBody) -> str:
    """The object as ActiveMQ's ``jms-object-xml`` writes it (``<int>5</int>``, ``<null/>``)."""
    element, text = _object_entry(body)
    return f"<{element}/>" if text is None else f"<{element}>{_xml_text(text)}</{element}>"


class _NotTransformed(ValueError):
    """The body does not make the message the transformation names; the text is ActiveMQ's transformation-error."""


def _object_from(element: str, raw: object) -> ObjectBody:
    if element == "null":
        return ObjectBody(b"")
    name = _ELEMENT_CLASSES.get(element)
    if name is None:
        if element in _XSTREAM_ALIASES or "." in element:
            from minibroker.refusals import refuse

            raise refuse("stomp-object-transformation-class", element)
        raise _NotTransformed(element)  # XStream's CannotResolveClassException names the element
    text = raw if isinstance(raw, str) else _json_value(raw).strip('"')
    try:
        value: object = text if element in ("string", "char") else _MAKERS[element](text)
    except (ValueError, MessageFormatError):
        raise _NotTransformed(f"For input string: {_json_string(text)}") from None
    body = serialize(value, name)
    if body is None:  # a char of more than one character
        raise _NotTransformed(text)
    return ObjectBody(body)


def _object_from_xml(text: str) -> ObjectBody:
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError:
        raise _NotTransformed("") from None
    return _object_from(root.tag, root.text or "")


def _object_from_json(text: str) -> ObjectBody:
    try:
        document = json.loads(text)
    except ValueError:
        raise _NotTransformed("") from None
    if not isinstance(document, dict) or len(document) != 1:
        raise _NotTransformed("")
    ((element, raw),) = document.items()
    return _object_from(element, raw)


# -- the two directions -----------------------------------------------------------------------------------------------


def transformed(
    message: Message,
    transformation: str,
    max_entries: int = DEFAULT_MAX_TRANSFORMATION_ENTRIES,
    max_size: int | None = None,
) -> Message:
    """The message a subscription with ``transformation`` writes, as ActiveMQ's StompSubscription and
    JmsFrameTranslator do: every message but a BytesMessage carries the ``transformation`` header; a MapMessage's map
    and an ObjectMessage's object become JSON or XML text (``jms-xml``/``jms-json`` named for the type); text and
    stream messages keep their (default) translation. A map of more than ``max_entries`` entries, or a rendering of
    more than ``max_size`` characters, raises :class:`TransformationLimitExceeded` (before the work, for the map)."""
    body = message.body
    if isinstance(body, bytes):
        return message
    properties = {**message.properties, "transformation": transformation}
    if transformation not in JMS_TRANSLATOR_NAMES or isinstance(body, (str, tuple)):
        return attrs.evolve(message, properties=properties)
    kind = "object" if isinstance(body, ObjectBody) else "map"
    header = {"jms-xml": f"jms-{kind}-xml", "jms-json": f"jms-{kind}-json"}.get(transformation, transformation)
    properties["transformation"] = header
    as_json = header.lower().endswith("json")
    if isinstance(body, ObjectBody):
        try:
            text = object_to_json(body) if as_json else object_to_xml(body)
        except ValueError:  # a class Python cannot deserialize: said in the frame, never a failed dispatch
            properties["transformation-error"] = (
                f"minibroker cannot render an ObjectMessage of {body.class_name} (UnsupportedFeature "
                "stomp-object-transformation-class)"
            )
            text = ""
    else:
        if len(body) > max_entries:
            raise TransformationLimitExceeded(
                f"the map of {message.message_id} has {len(body)} entries, more than {transformation} renders "
                f"(max_transformation_entries {max_entries})"
            )
        text = map_to_json(body) if as_json else map_to_xml(body)
    if max_size is not None and len(text) > max_size:
        raise TransformationLimitExceeded(
            f"{transformation} renders {message.message_id} in {len(text)} characters, more than a frame holds "
            f"(max_frame_size {max_size})"
        )
    return attrs.evolve(message, body=text, properties=properties)


def message_from_transformed_send(
    message: Message, transformation: str, has_length: bool, max_entries: int = DEFAULT_MAX_TRANSFORMATION_ENTRIES
) -> Message:
    """A SEND's message with a ``transformation``, as ActiveMQ's JmsFrameTranslator makes it: a MapMessage or an
    ObjectMessage of the body for the map and object forms; with ``content-length`` or ``jms-byte``, or a name no
    JmsFrameTranslator answers to, the default translation; otherwise (a body that does not parse, ``jms-json``,
    ``jms-xml``) a TextMessage carrying ActiveMQ's ``transformation-error``; so too a map body of more than
    ``max_entries`` entries (counted before parsing), or one nested deeper than Python parses."""
    if has_length or transformation == "jms-byte" or transformation not in JMS_TRANSLATOR_NAMES:
        return message
    raw = message.body if isinstance(message.body, bytes) else str(message.body).encode()
    try:
        text = raw.decode("utf-8")
        if transformation in ("jms-map-json", "jms-map-xml"):
            entries = raw.count(b"<entry>") if transformation.endswith("xml") else raw.count(b'"string"')
            if entries > max_entries:
                raise _NotTransformed(
                    f"{transformation}: about {entries} map entries, more than max_transformation_entries {max_entries}"
                )
            values = parse_map(raw, transformation)
            if values is None:
                raise _NotTransformed(_root_element(text, transformation))
            return attrs.evolve(message, body=map_body(values))
        if transformation == "jms-object-xml":
            return attrs.evolve(message, body=_object_from_xml(text))
        if transformation == "jms-object-json":
            return attrs.evolve(message, body=_object_from_json(text))
        raise _NotTransformed(f"Unknown transformation: {transformation}")
    except (_NotTransformed, UnicodeDecodeError, RecursionError) as exc:
        error = str(exc) if isinstance(exc, _NotTransformed) else ""
        properties = {**message.properties, "transformation-error": error}
        return attrs.evolve(message, body=raw.decode("utf-8", "replace"), properties=properties)


def _root_element(text: str, transformation: str) -> str:
    """What XStream's error names when a map body is no map: the root element it could not resolve, else nothing."""
    try:
        if transformation.endswith("xml"):
            tag = ElementTree.fromstring(text).tag
        else:
            document = json.loads(text)
            tag = next(iter(document)) if isinstance(document, dict) and len(document) == 1 else ""
    except (ValueError, ElementTree.ParseError):
        return ""
    return "" if tag == "map" else str(tag)
