"""What a client tells the broker: consumer registrations and acknowledgements.

These are plain values, the same in-process and on the wire: the TCP codec encodes exactly these fields, so the two
transports cannot drift apart.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import attrs

from ..message import Destination

__all__ = ["AckType", "ConsumerInfo", "MessageAck"]


class AckType(enum.IntEnum):
    """ActiveMQ's ``MessageAck`` types, with their wire values."""

    DELIVERED = 0
    """The client holds the messages: widen the prefetch window, remove nothing."""
    POISON = 1
    """The client gives up on the messages: dead-letter them."""
    STANDARD = 2
    """The messages are consumed: remove them (at commit, when transacted)."""
    REDELIVERED = 3
    """The client is redelivering locally: no state change at the broker."""
    INDIVIDUAL = 4
    """One message is consumed, whatever was delivered before it."""
    UNMATCHED = 5
    """A network-bridge ack; refused by this broker."""
    EXPIRED = 6
    """The messages expired in the client's buffer: remove them through the expiry path."""


class MessageAck(NamedTuple):
    """An acknowledgement of the range ``first_message_id``..``last_message_id`` of one subscription's dispatches.

    ``first_message_id`` None means "from the oldest dispatched message". ``message_count`` is checked against the
    range for STANDARD acks outside transactions, as ActiveMQ does. Immutable (a NamedTuple: as cheap to build as a
    mutable class, one is built per AUTO receive); derive a changed ack with ``_replace``.
    """

    consumer_id: int
    ack_type: AckType
    last_message_id: str
    first_message_id: str | None = None
    message_count: int = 1
    transaction_id: int | None = None
    poison_cause: str | None = None
    #: REDELIVERED acks only: the delay (seconds) the client waits before redelivering, kept in the history
    #: (a minibroker addition; ActiveMQ's broker never learns it)
    redelivery_delay: float | None = None


@attrs.frozen(slots=True)
class ConsumerInfo:
    """What a consumer asks of the broker when it subscribes."""

    destination: Destination
    prefetch: int = 1000
    selector: str | None = None
    priority: int = 0
    exclusive: bool = False
    browser: bool = False
    no_local: bool = False
    session_id: int = 0
    #: a durable topic subscription's name (the connection's client id is the other half of its key)
    subscription_name: str | None = None
    #: ActiveMQ's ``retroactive``: a new topic subscriber first gets each topic's retained message (retained.py);
    #: what MQTT subscriptions ask (the edges that set it do not travel over the native protocol)
    retroactive: bool = False
