"""The numbers a broker hands out: connection, consumer and transaction ids, and ActiveMQ's broker sequence id.

One object rather than four core attributes: the core keeps few instance attributes (see ``test_driver``), and none
of these is read on the hot path of a send or an ack.
"""

from __future__ import annotations

import attrs

__all__ = ["BrokerSequence", "Numbering"]


@attrs.define(slots=True, eq=False)
class BrokerSequence:
    """ActiveMQ's broker sequence id: every message arriving at any of a broker's destinations takes the next number
    (``last`` is the newest given). Queues and topics hold this one object and count on it themselves: an attribute
    add costs a third of an ``itertools.count`` call on the send path."""

    last: int = 0

    def take(self) -> int:
        self.last += 1
        return self.last


@attrs.define(slots=True, eq=False)
class Numbering:
    #: the next connection, consumer and transaction id
    connection: int = 1
    consumer: int = 1
    transaction: int = 1
    broker_sequence: BrokerSequence = attrs.field(factory=BrokerSequence)
