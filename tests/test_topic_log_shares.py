"""A returning durable subscriber reads its topic's log from its position (issue 41, row 5; _store_shares.py): the
part a restart left on disk is shared with its queue, not copied, and handed to it a page at a time; each body's
reference count lives apart from its blob, and a failed batch leaves no large WAL behind. Before, the catch-up
copied the whole log in one transaction, rewriting every body to count it: the data directory doubled, and with less
free disk than the log's size the subscriber could never come back."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from test_topic_log_paging import LOG, bodies, leave, publish, restarted_with_one_away, take

from minibroker import Broker, ManualClock
from minibroker._core import paging
from minibroker._core.journal import LogShared, Stored
from minibroker.client import Connection, connect
from minibroker.errors import StoreError
from minibroker.message import Destination, Message
from minibroker.store import DATABASE_NAME, SqliteStore, encode_message

PAGE, LOW = 50, 10
QUEUE = "durable://c/s"


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    from minibroker._driver import broker as _driver

    monkeypatch.setattr(paging, "LOW_WATER", LOW)
    monkeypatch.setattr(_driver, "PAGE", PAGE)


async def take_some(conn: Connection, name: str, count: int) -> list[str]:
    """The next ``count`` messages of subscription ``name`` (more may wait), acked; then its subscriber leaves."""
    session = await conn.create_session()
    consumer = await session.create_durable_subscriber("topic://audit", name, prefetch=5)
    got = []
    for _ in range(count):
        msg = await consumer.receive(timeout=1)
        assert msg is not None and isinstance(msg.body, str)
        got.append(msg.body)
    await consumer.close()
    await session.close()
    return got


def shares_on_disk(path: Path) -> list[tuple[str, int, str, int, int]]:
    db = sqlite3.connect(path / DATABASE_NAME)
    try:
        return db.execute("SELECT queue, first, log, from_seq, to_seq FROM log_shares").fetchall()
    finally:
        db.close()


async def test_a_catch_up_shares_the_rows_on_disk_and_hands_them_over_a_page_at_a_time(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        await restarted_with_one_away(broker, 300)
        store = broker.store
        assert isinstance(store, SqliteStore)
        assert store.count(LOG) == 300
        statistics = broker.queue_statistics(QUEUE)  # a read of its queue: it catches up
        assert statistics is not None and statistics.size == 300
        # the page in memory is copied as the queue's rows; the 250 rows on disk are shared, not copied
        journal = broker._journal
        assert journal is not None
        assert sum(isinstance(op, Stored) for op in journal) == PAGE
        assert [op for op in journal if isinstance(op, LogShared)] == [LogShared(LOG, PAGE, 300, QUEUE, PAGE)]
        log = broker.core.topics["audit"].log
        assert log is not None and [attrs.astuple(share) for share in log.shares] == [(QUEUE, PAGE, 300, PAGE, 250)]
        async with await connect(broker, client_id="c") as conn:
            assert await take_some(conn, "s", 60) == bodies(0, 60)
            # handed over a page at a time as it reads: what it was handed is its own, and the log lets it go
            assert store.count(QUEUE) + store.count(LOG) <= 300 - 60 + 2 * PAGE
            assert await take(conn, "s", 240) == bodies(60, 300)
        assert store.count(LOG) == 0 and store.count(QUEUE) == 0
    assert shares_on_disk(tmp_path) == []


async def test_a_subscriber_that_leaves_mid_share_and_restarts_twice_gets_everything_in_order(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        await restarted_with_one_away(broker, 200)
        async with await connect(broker, client_id="c") as conn:
            assert await take_some(conn, "s", 70) == bodies(0, 70)  # the share is still being read: it leaves
        await publish(broker, bodies(200, 260))  # behind what is on disk
        await broker.restart()
        async with await connect(broker, client_id="c") as conn:
            assert await take_some(conn, "s", 20) == bodies(70, 90)
        await publish(broker, bodies(260, 300))
        await broker.restart()
        assert [v.pending for v in broker.durable_subscriptions()] == [210]
        async with await connect(broker, client_id="c") as conn:
            assert await take(conn, "s", 210) == bodies(90, 300)
        store = broker.store
        assert isinstance(store, SqliteStore) and store.count(LOG) == 0 and store.count(QUEUE) == 0


@pytest.mark.parametrize("how", ["purge", "unsubscribe"])
async def test_a_subscription_purged_or_removed_mid_share_lets_the_log_go(tmp_path: Path, how: str) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        await restarted_with_one_away(broker, 200)
        async with await connect(broker, client_id="c") as conn:
            assert await take_some(conn, "s", 10) == bodies(0, 10)
            if how == "purge":
                broker.purge(QUEUE)
            else:
                await (await conn.create_session()).unsubscribe("s")
        store = broker.store
        assert isinstance(store, SqliteStore) and store.count(LOG) == 0 and store.count(QUEUE) == 0
        await broker.restart()
        assert [v.pending for v in broker.durable_subscriptions()] == ([0] if how == "purge" else [])
    assert shares_on_disk(tmp_path) == []


async def test_another_subscription_away_keeps_the_rows_a_share_was_handed(tmp_path: Path) -> None:
    async with Broker(clock=ManualClock(autojump=True), data_dir=tmp_path) as broker:
        async with await connect(broker, client_id="c") as conn:
            await leave(conn, "s", "t")
        await publish(broker, bodies(0, 150))
        await broker.restart()
        async with await connect(broker, client_id="c") as conn:
            assert await take(conn, "s", 150) == bodies(0, 150)
            assert await take(conn, "t", 150) == bodies(0, 150)


def test_the_wal_is_given_back_after_a_large_batch_fails(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    store._db.execute(  # the disk fills up at the batch's last row
        "CREATE TEMP TRIGGER full AFTER INSERT ON messages WHEN NEW.queue = 'last' "
        "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
    )
    queue = Destination.queue("q")
    ops = [Stored("q", i, Message(f"ID:{i}", queue, "x" * 4000), 0) for i in range(1500)]
    ops.append(Stored("last", 0, Message("ID:last", queue, "y"), 0))
    with pytest.raises(StoreError, match="full"):
        store.apply(ops)
    assert os.path.getsize(tmp_path / f"{DATABASE_NAME}-wal") < 100_000  # 6 MB were written there, then given back
    assert store.count() == 0
    store.close()


def test_a_version_3_file_keeps_its_counts_apart_from_its_bodies_after_conversion(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    db.execute(
        "CREATE TABLE bodies (id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, message BLOB NOT NULL, "
        "refs INTEGER NOT NULL)"
    )
    db.execute("CREATE INDEX bodies_unreferenced ON bodies (refs) WHERE refs <= 0")
    db.execute(
        "CREATE TABLE messages (queue TEXT NOT NULL, seq INTEGER NOT NULL, counter INTEGER NOT NULL, "
        "body INTEGER NOT NULL, PRIMARY KEY (queue, seq)) WITHOUT ROWID"
    )
    blob = encode_message(Message("ID:old", Destination.queue("q"), "kept"))
    db.execute("INSERT INTO bodies VALUES (1, x'00', ?, 2)", (blob,))
    db.executemany("INSERT INTO messages VALUES (?, ?, 0, 1)", [("a", 1), ("b", 2)])
    db.execute("PRAGMA user_version=3")
    db.commit()
    db.close()
    store = SqliteStore(tmp_path)
    assert [(s.queue, s.message.body) for s in store.load().messages] == [("a", "kept"), ("b", "kept")]
    store.apply([Stored("a", 1, Message("ID:new", Destination.queue("q"), "n"), 0)])  # replaces a's row: 1 ref left
    store.close()
    db = sqlite3.connect(tmp_path / DATABASE_NAME)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4
    assert "refs" not in [row[1] for row in db.execute("PRAGMA table_info(bodies)")]
    assert db.execute("SELECT body, refs FROM body_refs ORDER BY body").fetchall() == [(1, 1), (2, 1)]
    db.close()


@contextlib.contextmanager
def small_disk(path: Path, megabytes: int) -> Iterator[Path]:
    """A file system of ``megabytes`` (tmpfs), for a test that fills it; skipped where mounting is not allowed."""
    path.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", str(path)], capture_output=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


async def test_a_subscriber_comes_back_with_less_free_disk_than_its_log(tmp_path: Path) -> None:
    """Row 5 as a user meets it: 6,000 messages of 1 KB wait in a paged log on a 16 MB disk with less free space
    than the log holds; the subscriber comes back and gets them all."""
    with small_disk(tmp_path / "disk", 16) as disk:
        data = disk / "data"
        payload = "p" * 1000
        async with Broker(clock=ManualClock(autojump=True), data_dir=data) as broker:
            async with await connect(broker, client_id="c") as conn:
                await leave(conn, "s")
            async with await connect(broker) as conn:
                producer = await (await conn.create_session()).create_producer("topic://audit")
                for i in range(6000):
                    await producer.send(f"{i}:{payload}", persistent=True)
            await broker.restart()
            free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
            assert free < 6000 * 1000  # less free disk than the log's size
            async with await connect(broker, client_id="c") as conn:
                got = [body.split(":")[0] for body in await take(conn, "s", 6000, prefetch=100)]
            assert got == [str(i) for i in range(6000)]
