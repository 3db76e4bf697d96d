"""Strings as Java's ``String.getBytes(UTF_8)`` writes them: what ActiveMQ's STOMP and MQTT encoders send.

A Python string can hold what UTF-8 cannot encode: a lone surrogate (from an in-process client, or a JSON ``\\ud800``
over HTTP). Java's encoder writes ``?`` in its place, and a pair of surrogates kept apart in Python is one
character to Java. The encoders try the plain ``str.encode()`` first (the usual case costs nothing more) and take
these on its ``UnicodeEncodeError``, so a string no subscriber can read never disconnects one.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ..message import Destination, Message

__all__ = ["java_text", "java_text_message", "java_utf8"]


def java_text(text: str) -> str:
    """``text`` as Java reads it back from its UTF-8: surrogate pairs joined, every lone surrogate ``?``."""
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return joined.encode("utf-8", "replace").decode("utf-8")


def java_utf8(text: str) -> bytes:
    """UTF-8 of ``text``, as Java's ``String.getBytes(UTF_8)``: ``?`` for what cannot be encoded."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return java_text(text).encode()


def _value(value: object) -> object:
    if type(value) is str:
        return java_text(value)
    if isinstance(value, Mapping):
        return {java_text(k): _value(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_value(v) for v in value)
    return value


def _destination(destination: Destination | None) -> Destination | None:
    if destination is None:
        return None
    return Destination(destination.kind, java_text(destination.name))


def java_text_message(message: Message) -> Message:
    """A copy of ``message`` whose every string (body, properties, headers, destination names) is as Java's UTF-8
    encoder writes it: for an encoder that failed on the message itself (``UnicodeEncodeError``)."""
    destination = _destination(message.destination)
    assert destination is not None
    return attrs.evolve(
        message,
        message_id=java_text(message.message_id),
        destination=destination,
        body=_value(message.body),  # type: ignore[arg-type]
        properties=_value(message.properties),  # type: ignore[arg-type]
        correlation_id=None if message.correlation_id is None else java_text(message.correlation_id),
        reply_to=_destination(message.reply_to),
        type=None if message.type is None else java_text(message.type),
        group_id=None if message.group_id is None else java_text(message.group_id),
        producer_id=java_text(message.producer_id),
        original_destination=_destination(message.original_destination),
    )
