"""MQTT topic names as ActiveMQ maps them (``MQTTProtocolSupport``): ``/`` and ``.`` trade places, ``+`` is ``*``
and ``#`` is ``>``. So MQTT ``sensors/+/temp`` is the ActiveMQ topic ``sensors.*.temp``, and a JMS or STOMP client
publishing to ``topic://sensors.kitchen.temp`` reaches an MQTT subscriber to ``sensors/kitchen/temp``."""

from __future__ import annotations

from minibroker.errors import RemoteProtocolError

__all__ = ["from_activemq", "has_wildcard", "to_activemq", "validate_filter"]

_TO_ACTIVEMQ = str.maketrans({"#": ">", ">": "#", "+": "*", "*": "+", "/": ".", ".": "/"})


def to_activemq(name: str) -> str:
    """The ActiveMQ topic name of an MQTT topic name or filter."""
    return name.translate(_TO_ACTIVEMQ)


def from_activemq(name: str) -> str:
    """The MQTT topic name of an ActiveMQ topic (the same swap, undone)."""
    return name.translate(_TO_ACTIVEMQ)


def has_wildcard(name: str) -> bool:
    return "#" in name or "+" in name


def validate_filter(name: str) -> None:
    """ActiveMQ's checks of a topic filter (MQTT 4.7.1): a ``#`` stands alone at the end, a ``+`` fills a level."""
    raw = name.encode()
    if not 1 <= len(raw) <= 65535:
        raise RemoteProtocolError(f"topic filter of invalid length {len(raw)}")
    if name in ("#", "+"):
        return
    if name.count("#") > 1:
        raise RemoteProtocolError(f"Topic Filter can only have one multi-level filter: {name}")
    for i, char in enumerate(name):
        if char == "#" and (i > 0 and name[i - 1] != "/"):
            raise RemoteProtocolError(f"The multi level wildcard must stand alone: {name}")
        if char == "+" and ((i > 0 and name[i - 1] != "/") or (i < len(name) - 1 and name[i + 1] != "/")):
            raise RemoteProtocolError(f"The single level wildcard must stand alone: {name}")
    if "#" in name and not name.endswith("#"):
        raise RemoteProtocolError(f"The multi-level filter must be at the end of the Topic name: {name}")
