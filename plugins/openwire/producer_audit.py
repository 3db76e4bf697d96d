"""ActiveMQ's producer audit on a reconnected failover connection (``ProducerBrokerExchange.canDispatch``).

A failover client that reconnects says so (``ConnectionInfo.failoverReconnect``) and sends again every command still
waiting for its answer. For such a connection ActiveMQ starts each producer at the store's last sequence id for it
(``getLastProducerSequenceId``: the store's audit, ``minibroker._core.producer_audit``) and drops, while still
answering, every persistent send whose producer sequence is not above the last one: the send the broker had stored
before it died is not stored twice. Non-persistent sends and connections that are not reconnects are not checked.
"""

from __future__ import annotations

from minibroker import Broker

from . import commands as ow

__all__ = ["ReconnectAudit"]


class ReconnectAudit:
    """The producers of one reconnected connection: the last sequence each sent or the store had."""

    __slots__ = ("_broker", "_last")

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._last: dict[str, int] = {}

    def is_duplicate(self, message: ow.Message) -> bool:
        """True for a persistent send at or below its producer's last sequence: drop it, answer it."""
        if not message.persistent or message.message_id is None or message.message_id.producer_id is None:
            return False
        producer = str(message.message_id.producer_id)
        sequence = message.message_id.producer_sequence_id
        last = self._last.get(producer)
        if last is None:
            audit = getattr(self._broker.store, "producer_audit", None)
            last = -1 if audit is None else audit.last(producer)
        if sequence <= last:
            return True
        self._last[producer] = sequence
        return False
