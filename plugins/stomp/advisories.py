"""Consumer advisories as ActiveMQ's STOMP connector writes them (issue 42).

ActiveMQ's ``JmsFrameTranslator`` renders a message on an advisory topic that carries a data structure by
marshalling the structure with XStream: as JSON through Jettison (``transformation:jms-advisory-json``, the default)
or as indented XML (``jms-advisory-xml``, asked for with ``jms-xml`` or ``jms-advisory-xml``). The broker keeps an
advisory's structure as JSON in the body (``minibroker.advisory``); this turns a ConsumerInfo or a consumer's
RemoveInfo into ActiveMQ's form, field for field and in XStream's order (the class's declared fields, nulls left out),
as recorded on ActiveMQ 5.17.2. The values are the broker's: a consumer's session id and number, and the command id
and ``responseRequired`` of the frame that made it, are the connection's own on ActiveMQ and minibroker's here.

Other advisory topics (connections, destinations, producers, expired and dead-lettered messages) carry structures
with fields minibroker does not keep (a connection's client address, the command that made a destination, a whole
message): a STOMP subscription to one is refused (``stomp-advisory``) rather than rendered differently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from minibroker.message import Destination

__all__ = ["ADVISORY_PREFIX", "ADVISORY_TRANSFORMATIONS", "render_advisory", "renders_advisories_of"]

#: the ``transformation`` header an advisory is written with, by the subscription's ``transformation``
ADVISORY_TRANSFORMATIONS = {
    None: "jms-advisory-json",
    "jms-json": "jms-advisory-json",
    "jms-xml": "jms-advisory-xml",
    "jms-advisory-json": "jms-advisory-json",
    "jms-advisory-xml": "jms-advisory-xml",
}

ADVISORY_PREFIX = "ActiveMQ.Advisory."
CONSUMER_ADVISORY = ADVISORY_PREFIX + "Consumer."

#: a field: (name, value) where the value is a scalar, None (left out), a nested list of fields, or a destination
Field = tuple[str, object]


def renders_advisories_of(destination: Destination) -> bool:
    """Whether a STOMP subscription to ``destination`` (an advisory topic) gets what ActiveMQ's would: consumer
    advisories, and wildcards and composites only over them."""
    parts = [part.split("://", 1)[-1] for part in destination.name.split(",")]
    return all(part.startswith(CONSUMER_ADVISORY) for part in parts)


def render_advisory(body: str, transformation: str) -> str | None:
    """The advisory ``body`` (the broker's JSON) as ActiveMQ writes it with ``transformation``; None for a structure
    this does not render."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    kind = data.get("dataStructure")
    if kind == "ConsumerInfo":
        fields = _consumer_info(data)
    elif kind == "RemoveInfo" and isinstance(data.get("objectId"), str) and str(data["objectId"]).count(":") >= 2:
        fields = _remove_consumer(data)
    else:
        return None
    if fields is None:
        return None
    if transformation.endswith("json"):
        return json.dumps({kind: _json(fields)}, separators=(",", ":"), ensure_ascii=False)
    return "\n".join(_xml(str(kind), fields, 0, None))


def _consumer_id(text: str) -> list[Field]:
    """``<connection id>:<session>:<value>`` as ActiveMQ's ConsumerId."""
    connection, session, value = text.rsplit(":", 2)
    return [("connectionId", connection), ("sessionId", int(session)), ("value", int(value))]


def _destination(text: object) -> tuple[str, str] | None:
    """A qualified destination name as XStream writes an ActiveMQDestination: its class and physical name."""
    if not isinstance(text, str) or "://" not in text:
        return None
    scheme, name = text.split("://", 1)
    cls = {"queue": "ActiveMQQueue", "topic": "ActiveMQTopic"}.get(scheme)
    return None if cls is None else (cls, name)


def _consumer_info(data: dict[str, object]) -> list[Field] | None:
    destination = _destination(data.get("destination"))
    consumer_id = data.get("consumerId")
    if destination is None or not isinstance(consumer_id, str):
        return None
    return [
        ("commandId", data.get("commandId", 0)),
        ("responseRequired", data.get("responseRequired", True)),
        ("consumerId", _consumer_id(consumer_id)),
        ("destination", destination),
        ("prefetchSize", data.get("prefetchSize", 0)),
        ("maximumPendingMessageLimit", 0),
        ("browser", bool(data.get("browser", False))),
        ("dispatchAsync", True),
        ("selector", data.get("selector")),
        ("clientId", data.get("clientId")),
        ("subscriptionName", data.get("subscriptionName")),
        ("noLocal", bool(data.get("noLocal", False))),
        ("exclusive", bool(data.get("exclusive", False))),
        ("retroactive", bool(data.get("retroactive", False))),
        ("priority", data.get("priority", 0)),
        ("optimizedAcknowledge", False),
        ("noRangeAcks", False),
    ]


def _remove_consumer(data: dict[str, object]) -> list[Field]:
    return [
        ("commandId", 0),
        ("responseRequired", True),
        ("objectId", ("ConsumerId", _consumer_id(str(data["objectId"])))),
        ("lastDeliveredSequenceId", -2),
    ]


def _json(fields: Sequence[Field]) -> dict[str, object]:
    """Jettison's mapped convention: an attribute is ``@name``, numbers and booleans are bare."""
    out: dict[str, object] = {}
    for name, value in fields:
        if value is None:
            continue
        if name == "destination" and isinstance(value, tuple):
            cls, physical = value
            out[name] = {"@class": cls, "string": physical, "null": ""}
        elif name == "objectId" and isinstance(value, tuple):
            cls, inner = value
            out[name] = {"@class": cls, **_json(inner)}
        elif isinstance(value, list):
            out[name] = _json(value)
        else:
            out[name] = value
    return out


def _xml_text(value: object) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    text = str(value)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _xml(name: str, fields: Sequence[Field], depth: int, cls: str | None) -> list[str]:
    """XStream's PrettyPrintWriter: two spaces a level, a class attribute where the field's type is a subclass."""
    pad = "  " * depth
    lines = [f'{pad}<{name} class="{cls}">' if cls else f"{pad}<{name}>"]
    inner = "  " * (depth + 1)
    for field, value in fields:
        if value is None:
            continue
        if field == "destination" and isinstance(value, tuple):
            cls_name, physical = value
            lines += [
                f'{inner}<destination class="{cls_name}">',
                f"{inner}  <string>{_xml_text(physical)}</string>",
                f"{inner}  <null/>",
                f"{inner}</destination>",
            ]
        elif field == "objectId" and isinstance(value, tuple):
            lines += _xml(field, value[1], depth + 1, value[0])
        elif isinstance(value, list):
            lines += _xml(field, value, depth + 1, None)
        else:
            lines.append(f"{inner}<{field}>{_xml_text(value)}</{field}>")
    lines.append(f"{pad}</{name}>")
    return lines
