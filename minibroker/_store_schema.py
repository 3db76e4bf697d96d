"""The SQLite store's tables, and the conversion of every older file to them (store.py).

Version 4 (issue 41) keeps each body's reference count in a table of its own (``body_refs``), apart from the blob:
SQLite rewrites a whole row to change one column, so a count kept beside the blob wrote every body again each time a
row referring to it was copied or let go of (a durable subscription catching up with a 22 MB log wrote 22 MB more),
and it keeps the parts of a topic's log that a durable subscription's queue reads (``log_shares``: the queue's rows
``first``... are the log's rows ``from_seq``...``to_seq``, handed to it a page at a time) instead of copying them.
"""

from __future__ import annotations

import sqlite3

__all__ = ["SCHEMA_VERSION", "create_tables", "upgrade"]

SCHEMA_VERSION = 4


def create_tables(db: sqlite3.Connection) -> None:
    """Make every table this version uses that is missing (inside the caller's transaction)."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS bodies (id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, message BLOB NOT NULL)"
    )
    db.execute("CREATE TABLE IF NOT EXISTS body_refs (body INTEGER PRIMARY KEY, refs INTEGER NOT NULL)")
    db.execute("CREATE INDEX IF NOT EXISTS body_refs_unreferenced ON body_refs (refs) WHERE refs <= 0")
    db.execute(
        "CREATE TABLE IF NOT EXISTS messages (queue TEXT NOT NULL, seq INTEGER NOT NULL, "
        "counter INTEGER NOT NULL, body INTEGER NOT NULL, PRIMARY KEY (queue, seq)) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS scheduled (job INTEGER PRIMARY KEY, due REAL NOT NULL, "
        "counter INTEGER NOT NULL, message BLOB NOT NULL)"
    )
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute(
        "CREATE TABLE IF NOT EXISTS durables (client_id TEXT NOT NULL, name TEXT NOT NULL, "
        "topic TEXT NOT NULL, selector TEXT, no_local INTEGER NOT NULL, position INTEGER, "
        "PRIMARY KEY (client_id, name)) WITHOUT ROWID"
    )
    db.execute(
        "CREATE TABLE IF NOT EXISTS log_shares (queue TEXT NOT NULL, first INTEGER NOT NULL, log TEXT NOT NULL, "
        "from_seq INTEGER NOT NULL, to_seq INTEGER NOT NULL, PRIMARY KEY (queue, first)) WITHOUT ROWID"
    )


def upgrade(db: sqlite3.Connection, version: int, body_key: object) -> int:
    """Convert a file of an older ``version`` to this one, a transaction per step; the version it has then."""
    if version == 1:
        _step(db, _from_1, body_key)
        version = 4
    if version in (2, 3):
        _step(db, _from_2_or_3, version)
        version = 4
    return version


def _step(db: sqlite3.Connection, convert: object, arg: object) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        convert(db, arg)  # type: ignore[operator]
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _from_1(db: sqlite3.Connection, body_key: object) -> None:
    """Version 1 kept a message blob in each queue row: each distinct one becomes one body, counted."""
    db.create_function("minibroker_body_key", 1, body_key, deterministic=True)  # type: ignore[arg-type]
    db.execute("ALTER TABLE messages RENAME TO messages_v1")
    create_tables(db)
    db.execute(
        "INSERT INTO bodies (key, message) SELECT minibroker_body_key(message), message "
        "FROM messages_v1 GROUP BY minibroker_body_key(message)"
    )
    db.execute(
        "INSERT INTO messages SELECT m.queue, m.seq, m.counter, b.id FROM messages_v1 m "
        "JOIN bodies b ON b.key = minibroker_body_key(m.message)"
    )
    db.execute("INSERT INTO body_refs SELECT body, COUNT(*) FROM messages GROUP BY body")
    db.execute("DROP TABLE messages_v1")


def _from_2_or_3(db: sqlite3.Connection, version: int) -> None:
    """Version 2 had no log positions (its durable subscriptions' messages were all in their queues); versions 2
    and 3 kept the reference counts in ``bodies``."""
    has_durables = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'durables'").fetchone()
    if version == 2 and has_durables:
        db.execute("ALTER TABLE durables ADD COLUMN position INTEGER")
    create_tables(db)
    db.execute("INSERT INTO body_refs SELECT id, refs FROM bodies")
    db.execute("DROP INDEX IF EXISTS bodies_unreferenced")
    db.execute("ALTER TABLE bodies DROP COLUMN refs")
