"""The store's producer audit (KahaDB's producerSequenceIdTracker): the last sequence stored per producer, bounded,
kept by both stores across a restart (the OpenWire failover tests show what it is for)."""

from __future__ import annotations

from pathlib import Path

from minibroker._core.journal import Removed, Stored
from minibroker._core.producer_audit import ProducerAudit, producer_sequence
from minibroker.message import Destination, Message
from minibroker.store import MemoryStore, SqliteStore

PRODUCER = "ID:host-40000-1700000000000-1:1:1:1"


def stored(seq: int, producer: str = PRODUCER) -> Stored:
    message = Message(destination=Destination.parse("q"), body="x", message_id=f"{producer}:{seq}")
    return Stored("q", seq, message, 0)


def test_an_activemq_message_id_names_its_producer_and_sequence() -> None:
    assert producer_sequence(f"{PRODUCER}:42") == (PRODUCER, 42)
    assert producer_sequence("ID:minibroker-7") is None  # another shape: not tracked
    assert producer_sequence("plain") is None


def test_the_audit_keeps_the_highest_sequence_of_the_most_recent_producers() -> None:
    audit = ProducerAudit(limit=2)
    audit.stored(f"{PRODUCER}:5")
    audit.stored(f"{PRODUCER}:3")  # a redo of an older one does not lower it
    assert audit.last(PRODUCER) == 5 and audit.last("ID:other:1:1:1") == -1
    audit.stored("ID:b-1:1:1:1:1")
    audit.stored("ID:c-1:1:1:1:1")  # a third producer: the least recently stored is forgotten
    assert len(audit) == 2 and audit.last(PRODUCER) == -1
    changed, evicted = audit.take_changes()
    assert changed == {"ID:b-1:1:1:1": 1, "ID:c-1:1:1:1": 1} and evicted == {PRODUCER}
    assert audit.take_changes() == ({}, set())


def test_the_sqlite_store_keeps_the_audit_after_the_message_is_gone(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store.apply([stored(1), stored(2)])
    store.apply([Removed("q", 1), Removed("q", 2)])  # consumed: the queue no longer knows them
    store.close()
    reopened = SqliteStore(tmp_path)
    try:
        assert reopened.producer_audit.last(PRODUCER) == 2 and reopened.load().messages == ()
    finally:
        reopened.close()


def test_the_memory_store_keeps_it_too() -> None:
    store = MemoryStore()
    store.apply([stored(7)])
    store.apply([Removed("q", 7)])
    assert store.producer_audit.last(PRODUCER) == 7
