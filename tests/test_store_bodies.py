"""The SQLite store keeps each distinct message once (issue 31, item 1: a topic message fed to a thousand durable
subscriptions was written a thousand times): queue rows refer to a body with a reference count."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from minibroker import Destination, Message
from minibroker._core.journal import Purged, Removed, Stored
from minibroker.store import DATABASE_NAME, SqliteStore, body_key, encode_message

TOPIC = Destination.topic("audit")


def counts(directory: Path) -> tuple[int, int]:
    """(queue rows, bodies), read behind the store's back (the store is closed)."""
    db = sqlite3.connect(directory / DATABASE_NAME)
    try:
        rows = db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        bodies = db.execute("SELECT COUNT(*) FROM bodies").fetchone()[0]
        return int(rows), int(bodies)
    finally:
        db.close()


def test_one_message_in_many_queues_is_one_body_until_the_last_row_goes(tmp_path: Path) -> None:
    message = Message("ID:1", TOPIC, "x" * 1000)
    store = SqliteStore(tmp_path)
    store.apply([Stored(f"sub{i}", 0, message, 0) for i in range(100)])
    state = store.load()
    assert len(state.messages) == 100 and len({id(s.message) for s in state.messages}) == 1  # one object, shared
    store.apply([Removed(f"sub{i}", 0) for i in range(99)])
    store.close()
    assert counts(tmp_path) == (1, 1)
    store = SqliteStore(tmp_path)
    assert [s.message.body for s in store.load().messages] == ["x" * 1000]
    store.apply([Removed("sub99", 0)])
    store.close()
    assert counts(tmp_path) == (0, 0)


def test_a_purge_and_a_row_replaced_in_place_keep_the_counts(tmp_path: Path) -> None:
    a, b = Message("ID:a", TOPIC, "a"), Message("ID:b", TOPIC, "b")
    store = SqliteStore(tmp_path)
    store.apply([Stored("q1", 0, a, 0), Stored("q2", 0, a, 0), Stored("q2", 1, b, 0)])
    store.apply([Purged("q2")])
    store.apply([Stored("q1", 0, b, 0)])  # the same row again, another message: a's body loses its last reference
    store.close()
    assert counts(tmp_path) == (1, 1)
    store = SqliteStore(tmp_path)
    assert [(s.queue, s.message.body) for s in store.load().messages] == [("q1", "b")]
    store.close()


def test_a_version_1_file_is_converted_on_open(tmp_path: Path) -> None:
    """A data directory written before (a message blob in every queue row) opens, each distinct message kept once."""
    message = Message("ID:old", TOPIC, "kept")
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    db.execute(
        "CREATE TABLE messages (queue TEXT NOT NULL, seq INTEGER NOT NULL, counter INTEGER NOT NULL, "
        "message BLOB NOT NULL, PRIMARY KEY (queue, seq)) WITHOUT ROWID"
    )
    blob = encode_message(message)
    db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?)", [("s1", 3, 1, blob), ("s2", 4, 0, blob)])
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()
    store = SqliteStore(tmp_path)
    state = store.load()
    assert [(s.queue, s.seq, s.redelivery_counter, s.message.body) for s in state.messages] == [
        ("s1", 3, 1, "kept"),
        ("s2", 4, 0, "kept"),
    ]
    store.close()
    assert counts(tmp_path) == (2, 1)
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4
    assert db.execute("SELECT key FROM bodies").fetchone()[0] == body_key(blob)
    assert db.execute("SELECT refs FROM body_refs").fetchall() == [(2,)]  # the count kept apart from the blob
    db.close()
