"""The store's producer audit (KahaDB's producerSequenceIdTracker): the last sequence stored per producer, bounded,
kept by both stores across a restart, fed and read at the one door by the connections of clients that resend
(``_driver/resent_sends.py``; the OpenWire failover tests show what it is for)."""

from __future__ import annotations

from pathlib import Path

import pytest

from minibroker import Broker
from minibroker._core.journal import Removed
from minibroker._core.producer_audit import ProducerAudit, producer_sequence
from minibroker.message import Destination, Message
from minibroker.store import MemoryStore, SqliteStore

PRODUCER = "ID:host-40000-1700000000000-1:1:1:1"


def message(seq: int, producer: str = PRODUCER, persistent: bool = True) -> Message:
    return Message(
        destination=Destination.parse("q"), body=f"m{seq}", message_id=f"{producer}:{seq}", persistent=persistent
    )


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
    store.producer_audit.stored(f"{PRODUCER}:2")
    store.apply([])  # written with the next batch
    store.apply([Removed("q", 1), Removed("q", 2)])  # consumed: the queue no longer knows them
    store.close()
    reopened = SqliteStore(tmp_path)
    try:
        assert reopened.producer_audit.last(PRODUCER) == 2 and reopened.load().messages == ()
    finally:
        reopened.close()


def test_the_memory_store_keeps_it_too() -> None:
    store = MemoryStore()
    store.producer_audit.stored(f"{PRODUCER}:7")
    store.apply([Removed("q", 7)])
    assert store.producer_audit.last(PRODUCER) == 7


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_reconnected_client_s_resent_persistent_send_is_dropped_across_a_restart(
    kind: str, tmp_path: Path
) -> None:
    store = MemoryStore() if kind == "memory" else SqliteStore(tmp_path)
    async with Broker(store=store) as broker:
        first = broker.connect("app", audit_producers=True)
        first.send(message(1))
        first.send(message(2))
        first.send(message(3, producer="ID:other-1:1:1:1", persistent=False))
        first.close()
    restarted = SqliteStore(tmp_path) if kind == "sqlite" else store
    async with Broker(store=restarted) as broker:
        again = broker.connect("app", audit_producers=True, failover_reconnect=True)
        again.send(message(2))  # stored before the "kill": dropped, answered
        again.send(message(3))  # never stored: taken
        again.send(message(3))  # the same connection sends it again: dropped too
        again.send(message(1, producer="ID:other-1:1:1:1", persistent=False))  # non-persistent: never checked
        assert [m.body for m in again.browse("q")] == ["m1", "m2", "m3", "m1"]


async def test_only_connections_of_resending_clients_feed_the_audit() -> None:
    store = MemoryStore()
    async with Broker(store=store) as broker:
        broker.connect("native").send(message(1))
        assert store.producer_audit.last(PRODUCER) == -1  # nothing to pay for a client that never resends
        broker.connect("jms", audit_producers=True).send(message(5))
        assert store.producer_audit.last(PRODUCER) == 5


@pytest.mark.parametrize("door", ["send_if_admitted", "minted_sender"])
async def test_the_connection_s_fast_sends_check_a_resending_client_s_sends_too(door: str) -> None:
    """The one door's shorter ways in (an edge's send_if_admitted, a minted sender) take a resending client's send
    the long way, where it is checked against the audit: a resend after a reconnect is dropped whichever way it
    comes, even once the first copy was consumed (purged here), when the queue's own duplicate check no longer
    sees it."""
    store = MemoryStore()
    async with Broker(store=store) as broker:
        first = broker.connect("app", audit_producers=True)
        first.send(message(1))
        first.close()
        broker.purge("q")
        again = broker.connect("app", audit_producers=True, failover_reconnect=True)
        if door == "send_if_admitted":
            assert again.send_if_admitted(message(1))
            assert again.send_if_admitted(message(2))
        else:
            send = again.minted_sender()
            assert send(message(1), None, True) is None
            assert send(message(2), None, True) is None
        assert [m.body for m in again.browse("q")] == ["m2"]
