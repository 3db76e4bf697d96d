"""The rows of a topic's log a durable subscription's queue reads, handed to it a page at a time (store.py).

A subscription that catches up with the part of its topic's log a restart left on disk does not have those rows
copied (``LogShared``: a row of ``log_shares`` says the log's rows ``from_seq`` up to ``to_seq`` are the queue's rows
from ``first`` on). When its queue reads its next page, the page is taken from its own rows and its shares together,
in sequence order, and the shared rows among them become rows of its own in one transaction as small as the page:
their acks then remove them as any row's do, and the share moves on past them (it goes once nothing is left), so
the log may let go of them (``LogTrimmed``). The core keeps the same shares (topic_log.py ``LogShare``) and moves
them on as the store does, for the log's floor.
"""

from __future__ import annotations

import sqlite3

__all__ = ["hand_over", "share_counts", "shared_queues", "shares"]

#: (seq, counter, body id) of a queue row
Row = tuple[int, int, int]


def shared_queues(db: sqlite3.Connection) -> set[str]:
    """The queues that read part of a topic's log."""
    return {queue for (queue,) in db.execute("SELECT DISTINCT queue FROM log_shares")}


def shares(db: sqlite3.Connection) -> tuple[tuple[str, int, str, int, int, int], ...]:
    """Every share: (queue, first, log, from_seq, to_seq, rows it still shares)."""
    return tuple(
        db.execute(
            "SELECT s.queue, s.first, s.log, s.from_seq, s.to_seq, "
            "(SELECT COUNT(*) FROM messages m WHERE m.queue = s.log AND m.seq >= s.from_seq AND m.seq < s.to_seq) "
            "FROM log_shares s ORDER BY s.queue, s.first"
        ).fetchall()
    )


def share_counts(db: sqlite3.Connection, queue: str) -> tuple[int, int]:
    """How many rows ``queue``'s shares still hold, and the highest sequence number they give it (-1: none)."""
    count, last = 0, -1
    for _, first, log, from_seq, to_seq, rows in (s for s in shares(db) if s[0] == queue):
        if rows:
            count += rows
            top = db.execute(
                "SELECT MAX(seq) FROM messages WHERE queue = ? AND seq >= ? AND seq < ?", (log, from_seq, to_seq)
            ).fetchone()[0]
            last = max(last, first + top - from_seq)
    return count, last


def hand_over(db: sqlite3.Connection, queue: str, after: int, limit: int | None) -> list[Row]:
    """The next rows of ``queue`` after sequence number ``after`` (``limit`` at most), its own and those it shares
    with a topic's log, in order; the shared ones among them become its own and its shares move on, in one
    transaction (the caller's :meth:`~minibroker.store.SqliteStore` turns a failure into a StoreError)."""
    found = db.execute(
        "SELECT first, log, from_seq, to_seq FROM log_shares WHERE queue = ? ORDER BY first", (queue,)
    ).fetchall()
    sql = "SELECT seq, counter, body, NULL, NULL FROM messages WHERE queue = ? AND seq > ?"
    params: list[object] = [queue, after]
    for index, (first, log, from_seq, to_seq) in enumerate(found):
        sql += (
            " UNION ALL SELECT seq - ? + ?, 0, body, seq, ? FROM messages "
            "WHERE queue = ? AND seq >= ? AND seq < ? AND seq - ? + ? > ?"
        )
        params += [from_seq, first, index, log, from_seq, to_seq, from_seq, first, after]
    sql += " ORDER BY 1"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    rows = db.execute(sql, params).fetchall()
    handed = [(seq, body, log_seq, index) for seq, _, body, log_seq, index in rows if log_seq is not None]
    if handed:
        db.execute("BEGIN")
        try:
            db.executemany(
                "INSERT INTO messages VALUES (?, ?, 0, ?)", [(queue, seq, body) for seq, body, _, _ in handed]
            )
            db.executemany("UPDATE body_refs SET refs = refs + 1 WHERE body = ?", [(body,) for _, body, _, _ in handed])
            for index, (first, log, from_seq, to_seq) in enumerate(found):
                mine = [log_seq for _, _, log_seq, i in handed if i == index]
                if not mine:
                    continue
                moved = mine[-1] + 1
                db.execute("DELETE FROM log_shares WHERE queue = ? AND first = ?", (queue, first))
                left = db.execute(
                    "SELECT EXISTS (SELECT 1 FROM messages WHERE queue = ? AND seq >= ? AND seq < ?)",
                    (log, moved, to_seq),
                ).fetchone()[0]
                if left:
                    db.execute(
                        "INSERT INTO log_shares VALUES (?, ?, ?, ?, ?)",
                        (queue, first + moved - from_seq, log, moved, to_seq),
                    )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
    return [(seq, counter, body) for seq, counter, body, _, _ in rows]
