"""The store's producer audit: the last sequence number stored for each producer (KahaDB's
``producerSequenceIdTracker``), so a broker can drop the sends a failover client makes again after a reconnect.

ActiveMQ's failover transport resends, once it has reconnected, every command still waiting for its answer: a
persistent send the broker had stored before it died (or before the connection broke) arrives a second time, with
the same ``MessageId``. ActiveMQ's ``TransportConnection`` then gives each producer of a reconnected connection
(``ConnectionInfo.failoverReconnect``) the store's last sequence id for it
(``PersistenceAdapter.getLastProducerSequenceId``) and drops, still answering, every persistent send whose producer
sequence is not above it (``ProducerBrokerExchange.canDispatch``). KahaDB records the id of every message it adds,
keeps the tracker in its metadata and rebuilds it from the journal on recovery, so the audit holds across a restart
even for messages consumed since; the stores here keep it with the messages (``store.py``).

A message id is ActiveMQ's ``ID:<connection>:<session>:<producer>:<sequence>`` text; an id of another shape (a
producer that is not ActiveMQ's) is not tracked. At most :data:`MAX_PRODUCERS` producers are remembered, the least
recently stored forgotten first (KahaDB's ``maxFailoverProducersToTrack``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

__all__ = ["MAX_PRODUCERS", "ProducerAudit", "producer_sequence"]

#: KahaDB's ``maxFailoverProducersToTrack`` default
MAX_PRODUCERS: Final = 1000


def producer_sequence(message_id: str) -> tuple[str, int] | None:
    """``(producer id, producer sequence)`` of an ActiveMQ message id, or None for an id of another shape."""
    producer, _, sequence = message_id.rpartition(":")
    if not producer or not sequence.isdigit() or producer.count(":") < 3:
        return None
    return producer, int(sequence)


class ProducerAudit:
    """The highest producer sequence stored per producer; :meth:`take_changes` says what to write down."""

    __slots__ = ("_changed", "_evicted", "_last", "limit")

    def __init__(self, limit: int = MAX_PRODUCERS) -> None:
        self.limit = limit
        self._last: dict[str, int] = {}  # insertion order: least recently stored first
        self._changed: set[str] = set()
        self._evicted: set[str] = set()

    def __len__(self) -> int:
        return len(self._last)

    def load(self, rows: Iterable[tuple[str, int]]) -> None:
        """What a store kept (oldest first): nothing to write down again."""
        for producer, sequence in rows:
            self._last[producer] = sequence
        self._trim()
        self._changed.clear()
        self._evicted.clear()

    def stored(self, message_id: str) -> None:
        """A persistent message was stored (a send, a commit, a redo): remember its producer's sequence."""
        parsed = producer_sequence(message_id)
        if parsed is None:
            return
        producer, sequence = parsed
        last = self._last.pop(producer, -1)
        self._last[producer] = max(last, sequence)
        self._changed.add(producer)
        self._evicted.discard(producer)
        if len(self._last) > self.limit:
            self._trim()

    def last(self, producer: str) -> int:
        """The highest sequence stored for ``producer`` (-1: none known), as ``getLastProducerSequenceId``."""
        return self._last.get(producer, -1)

    def take_changes(self) -> tuple[dict[str, int], set[str]]:
        """What changed since the last call: producers to write down with their sequence, producers forgotten."""
        if not self._changed and not self._evicted:
            return {}, set()
        changed = {p: self._last[p] for p in self._changed if p in self._last}
        evicted = self._evicted
        self._changed, self._evicted = set(), set()
        return changed, evicted

    def _trim(self) -> None:
        while len(self._last) > self.limit:
            oldest = next(iter(self._last))
            del self._last[oldest]
            self._changed.discard(oldest)
            self._evicted.add(oldest)
