"""ActiveMQ's producer audit at the one door: a failover client's resent sends are dropped, whatever edge it uses.

ActiveMQ's JMS client, on a failover reconnect, sends again every command still waiting for its answer; a persistent
send the broker had stored before the connection broke (or before it died) then arrives twice with one message id.
KahaDB remembers the last sequence it stored for each producer (``producerSequenceIdTracker``, the store's
``producer_audit``, ``_core/producer_audit.py``), and ActiveMQ's ``TransportConnection`` starts each producer of a
reconnected connection (``ConnectionInfo.failoverReconnect``) at that sequence: ``ProducerBrokerExchange.canDispatch``
drops, still answering, every persistent send that is not above it.

Only connections that say their client may resend (``Broker.connect(..., resends=...)``) pay for this, one dict
update per persistent send: a native, STOMP or MQTT client never resends by producer sequence, and the store writes
the audit only when it changed.
"""

from __future__ import annotations

from .._core.producer_audit import ProducerAudit, producer_sequence
from ..message import Message

__all__ = ["ResentSends"]


class ResentSends:
    """One connection's producers: what each stored last (for the store's audit), and on a reconnect the check."""

    __slots__ = ("_last", "_reconnect", "_store_audit")

    def __init__(self, store_audit: ProducerAudit | None, reconnect: bool) -> None:
        self._store_audit = store_audit
        self._reconnect = reconnect
        self._last: dict[str, int] = {}

    def is_resent(self, message: Message) -> bool:
        """True for a persistent send a reconnected client made again: drop it, answer it. Otherwise the send is
        remembered for its producer (here, and in the store's audit, written with the next batch)."""
        if not message.persistent:
            return False
        parsed = producer_sequence(message.message_id)
        if parsed is None:
            return False
        producer, sequence = parsed
        if self._reconnect:
            last = self._last.get(producer)
            if last is None:
                last = -1 if self._store_audit is None else self._store_audit.last(producer)
            if sequence <= last:
                return True
            self._last[producer] = sequence
        if self._store_audit is not None:
            self._store_audit.stored(message.message_id)
        return False
