"""Header values as ActiveMQ's STOMP connector reads and writes them: Java's ``toString`` and ``parseLong``, the
escaping of 1.1/1.2 headers, and the refusals (an ERROR frame, or a dropped connection) a frame can earn."""

from __future__ import annotations

import re
from typing import Final

from minibroker._java.exceptions import java_class
from minibroker._java.values import java_double, java_string
from minibroker.errors import (
    DestinationDoesNotExist,
    InvalidSelector,
    MinibrokerError,
)

from .codec import VERSIONS, escape_header

__all__ = [
    "JAVA_WS",
    "LONG",
    "PROTOCOL_EXCEPTION",
    "DropConnection",
    "StompError",
    "escape_value",
    "java_class",
    "java_double",
    "java_string",
    "negotiate_version",
    "parse_bool_option",
    "parse_heart_beat",
    "parse_int_option",
    "parse_long",
]

PROTOCOL_EXCEPTION: Final = "org.apache.activemq.transport.stomp.ProtocolException"
LONG: Final = re.compile(r"[+-]?[0-9]{1,19}")
#: what Java's ``String.trim`` strips: every character up to the space
JAVA_WS: Final = "".join(chr(i) for i in range(0x21))


class StompError(Exception):
    """A frame the converter refuses: becomes an ERROR frame. ``fatal`` closes the connection after it."""

    def __init__(
        self, message: str, *, fatal: bool = False, java_class: str = PROTOCOL_EXCEPTION, localized: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.fatal = fatal
        self.java_class = java_class
        #: the exception's ``getLocalizedMessage()`` where it differs from its message: the ERROR body's first line
        #: (the stack trace ActiveMQ prints starts with ``toString()``), while the ``message`` header is the message
        self.localized = localized

    @classmethod
    def of(cls, exc: MinibrokerError, *, fatal: bool = False) -> StompError:
        """The ERROR ActiveMQ's connector writes for the broker exception ``exc`` (ProtocolConverter.handleException:
        ``message`` is its getMessage(), the body its stack trace)."""
        if isinstance(exc, DestinationDoesNotExist):  # its message is the destination, its localized text a sentence
            text = exc.message or str(exc)
            return cls(
                text,
                fatal=fatal,
                java_class="org.apache.activemq.DestinationDoesNotExistException",
                localized=f"The destination {text} does not exist.",
            )
        if isinstance(exc, InvalidSelector) and isinstance(exc.selector, str):  # SelectorParser: the text itself
            from minibroker.selector import CONVERT_STRINGS_PREFIX  # the parser loads with the first selector

            return cls(exc.selector.removeprefix(CONVERT_STRINGS_PREFIX), fatal=fatal, java_class=java_class(exc))
        return cls(exc.message or str(exc), fatal=fatal, java_class=java_class(exc))


class _Drop(Exception):
    """ActiveMQ drops the connection without an ERROR (a non-numeric priority, expires or timestamp)."""


class DropConnection(Exception):
    """ActiveMQ drops the connection without an ERROR (a non-numeric priority, expires or timestamp)."""


def escape_value(text: str, version: str) -> str | None:
    """``text`` escaped for a 1.1/1.2 header; None when it holds a NUL (no version can carry one)."""
    return None if "\0" in text else escape_header(text, version)


def parse_long(value: str) -> int:
    """Java ``Long.parseLong``: a non-number drops the connection, as ActiveMQ's converter does."""
    if not LONG.fullmatch(value):
        raise DropConnection(f"not a number: {value!r}")
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise DropConnection(f"out of range: {value!r}")
    return number


def parse_priority(value: str) -> int:
    """A SEND's ``priority`` as ActiveMQ takes it: ``Integer.parseInt`` (a non-int drops the connection), the cast to
    a Java byte of ``setJMSPriority``, then the clamp to 0..9 its cursors order by. Stored clamped, so no peer can
    hand another one a priority its wire cannot carry."""
    number = parse_long(value)
    if not -(2**31) <= number < 2**31:
        raise DropConnection(f"not an int: {value!r}")
    as_byte = (number + 128) % 256 - 128
    return min(9, max(0, as_byte))


def parse_int_option(value: str | None) -> int | None:
    if value is None:
        return None
    text = value.strip(JAVA_WS)
    if not re.fullmatch(r"[+-]?[0-9]{1,10}", text):
        return None
    number = int(text)
    return number if -(2**31) <= number < 2**31 else None


def parse_bool_option(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.strip(JAVA_WS).lower() == "true"


def negotiate_version(accept: str | None) -> str:
    """The highest version both sides speak (CONNECT's ``accept-version``; none given: 1.0); none in common is fatal."""
    if accept is None:
        return "1.0"
    offered = {v.strip(JAVA_WS) for v in accept.split(",")}
    common = [v for v in VERSIONS if v in offered]
    if not common:
        raise StompError(f"Invalid Protocol version[{accept}], supported versions are: [1.2, 1.1, 1.0]", fatal=True)
    return common[-1]


def parse_heart_beat(heart_beat: str) -> tuple[int, int]:
    """CONNECT's ``heart-beat`` as (client sends every, client wants every) milliseconds; malformed is fatal."""
    parts = heart_beat.split(",")
    if len(parts) != 2 or not all(LONG.fullmatch(p) for p in parts):
        raise StompError(f"Invalid heart-beat header:{heart_beat}", fatal=True)
    client_sends, client_wants = (max(0, int(p)) for p in parts)
    return client_sends, client_wants
