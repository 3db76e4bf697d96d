"""A local transaction: sends held back until commit, acks that only take effect at commit."""

from __future__ import annotations

import attrs

from ..message import Message
from .subscription import QueueEntry, Subscription

__all__ = ["Transaction"]


@attrs.define(slots=True, eq=False)
class Transaction:
    transaction_id: int
    connection_id: int
    sends: list[Message] = attrs.field(factory=list)
    #: (subscription, entry) for every message acked inside the transaction
    acks: list[tuple[Subscription, QueueEntry]] = attrs.field(factory=list)
