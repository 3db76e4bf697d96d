"""Retained messages: ActiveMQ's default topic recovery policy (``RetainedMessageSubscriptionRecoveryPolicy``).

A message published to a topic with the property ``ActiveMQ.Retain`` true (an MQTT PUBLISH with the retain flag; any
client may set it) becomes the topic's retained message, a copy marked ``ActiveMQ.Retained``; one with an empty body
clears it. The published message itself loses ``ActiveMQ.Retain``. A retroactive subscriber (an MQTT subscription)
gets the retained message of each topic it reads when it subscribes, before anything newer.
"""

from __future__ import annotations

import attrs

from ..message import Message

__all__ = ["RETAINED_PROPERTY", "RETAIN_PROPERTY", "is_retained", "retain"]

RETAIN_PROPERTY = "ActiveMQ.Retain"
RETAINED_PROPERTY = "ActiveMQ.Retained"


def is_retained(message: Message) -> bool:
    """Whether a publish asks to be retained (``Boolean.parseBoolean`` of the property, as ActiveMQ reads it)."""
    value = message.properties.get(RETAIN_PROPERTY)
    return value is True or (isinstance(value, str) and value.lower() == "true")


def retain(message: Message) -> tuple[Message, Message | None]:
    """(the message to publish, without ``ActiveMQ.Retain``; the topic's new retained message, None to clear it)."""
    properties = {k: v for k, v in message.properties.items() if k != RETAIN_PROPERTY}
    published = attrs.evolve(message, properties=properties)
    if not message.body:
        return published, None
    return published, attrs.evolve(message, properties={**properties, RETAINED_PROPERTY: True})
