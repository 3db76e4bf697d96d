"""Duplicate detection on fault-tolerant connections (ActiveMQ ``ConnectionAudit`` / ``ActiveMQMessageAudit``).

After a failover the broker dispatches again what it had dispatched and not seen acked. The client remembers, per
producer, a window of recently seen producer sequence numbers; a message seen before is a duplicate. Redeliveries
the client itself causes (rollback, recover, close) clear their bits first, so they are never flagged.

Scope, as in ActiveMQ: one audit per destination for queues (shared by the connection's consumers of that queue),
one per consumer for topics; 64 producers tracked per audit, 2048 sequence numbers per producer. Only active when
the connection is fault-tolerant.
"""

from __future__ import annotations

from collections import OrderedDict

from minibroker.message import Message

__all__ = ["ConnectionAudit", "MessageAudit"]

AUDIT_DEPTH = 2048
MAXIMUM_PRODUCERS = 64
MAXIMUM_AUDITS = 1000


class _ProducerWindow:
    """The last ``AUDIT_DEPTH`` sequence numbers of one producer: ids below the window are never flagged."""

    __slots__ = ("highest", "seen")

    def __init__(self) -> None:
        self.highest = 0
        self.seen: set[int] = set()

    def mark(self, seq: int) -> bool:
        """Record ``seq``; True when it had been seen already (a duplicate)."""
        if seq <= self.highest - AUDIT_DEPTH:
            return False
        if seq in self.seen:
            return True
        self.seen.add(seq)
        if seq > self.highest:
            self.highest = seq
            floor = seq - AUDIT_DEPTH
            if len(self.seen) > 2 * AUDIT_DEPTH:
                self.seen = {s for s in self.seen if s > floor}
        return False

    def clear(self, seq: int) -> None:
        self.seen.discard(seq)


class MessageAudit:
    """Producer windows, least recently used producers forgotten first."""

    __slots__ = ("_producers",)

    def __init__(self) -> None:
        self._producers: OrderedDict[str, _ProducerWindow] = OrderedDict()

    def is_duplicate(self, message: Message) -> bool:
        window = self._producers.get(message.producer_id)
        if window is None:
            window = self._producers[message.producer_id] = _ProducerWindow()
            if len(self._producers) > MAXIMUM_PRODUCERS:
                self._producers.popitem(last=False)
        else:
            self._producers.move_to_end(message.producer_id)
        return window.mark(message.producer_seq)

    def rollback(self, message: Message) -> None:
        window = self._producers.get(message.producer_id)
        if window is not None:
            window.clear(message.producer_seq)


class ConnectionAudit:
    """All audits of one connection, keyed by queue name, or by consumer for topics."""

    __slots__ = ("_audits", "enabled")

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._audits: OrderedDict[object, MessageAudit] = OrderedDict()

    def _audit(self, key: object) -> MessageAudit:
        audit = self._audits.get(key)
        if audit is None:
            audit = self._audits[key] = MessageAudit()
            if len(self._audits) > MAXIMUM_AUDITS:
                self._audits.popitem(last=False)
        return audit

    @staticmethod
    def key(message: Message, consumer_key: object) -> object:
        return message.destination.name if message.destination.is_queue else consumer_key

    def is_duplicate(self, message: Message, consumer_key: object) -> bool:
        if not self.enabled or not message.producer_id:
            return False
        return self._audit(self.key(message, consumer_key)).is_duplicate(message)

    def rollback(self, message: Message, consumer_key: object) -> None:
        """Forget a message so that its next delivery is not flagged (rollback, recover, close)."""
        if self.enabled:
            audit = self._audits.get(self.key(message, consumer_key))
            if audit is not None:
                audit.rollback(message)
