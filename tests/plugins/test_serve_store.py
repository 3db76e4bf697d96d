"""``minibroker serve`` with a data directory whose database cannot be used (issue 41, item 4): one line that names
the file and the problem, exit status 1, and no URL; and the URL only once the store is open and converted, so no
client connects to a broker that will not start."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from support.servekit import MINIBROKER, run, serve

from minibroker import Destination, Message
from minibroker._core.journal import Stored
from minibroker._data_dir_lock import DATABASE_NAME
from minibroker.client import AckMode, connect
from minibroker.store import SqliteStore, encode_message

QUEUE = Destination.queue("kept")


def future_version(db_path: Path) -> None:
    db = sqlite3.connect(db_path)
    db.execute("CREATE TABLE later (x)")
    db.execute("PRAGMA user_version=99")
    db.commit()
    db.close()


def directory(db_path: Path) -> None:
    db_path.mkdir()


def damaged_pages(db_path: Path) -> None:
    """A store with 300 messages, then every seventh page from the fourth on overwritten."""
    store = SqliteStore(db_path.parent)
    store.apply([Stored("kept", seq, Message(f"ID:{seq}", QUEUE, f"{seq:04d}" * 500), 0) for seq in range(300)])
    store.close()
    size = db_path.stat().st_size
    with db_path.open("r+b") as f:
        for offset in range(4096 * 3, size, 4096 * 7):
            f.seek(offset)
            f.write(b"\xff" * 200)


def version_1(db_path: Path, *, column: str = "message") -> None:
    """A store written before version 2: a message blob in each queue row (one message, ``ID:old``)."""
    db = sqlite3.connect(db_path)
    db.execute(
        "CREATE TABLE messages (queue TEXT NOT NULL, seq INTEGER NOT NULL, counter INTEGER NOT NULL, "
        f"{column} BLOB NOT NULL, PRIMARY KEY (queue, seq)) WITHOUT ROWID"
    )
    db.execute(
        "INSERT INTO messages VALUES (?, ?, ?, ?)", ("kept", 0, 0, encode_message(Message("ID:old", QUEUE, "old")))
    )
    db.execute("PRAGMA user_version=1")
    db.commit()
    db.close()


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (future_version, "it has schema version 99, written by a newer minibroker (this one reads versions up to 4)"),
        (directory, "it is a directory, not a database file"),
        (damaged_pages, "database disk image is malformed"),
        # a version 1 file whose conversion fails (its blob column misnamed): the URL waits for the conversion
        (
            lambda path: version_1(path, column="blob"),
            "from schema version 1 to 4: no such column: message (the conversion was rolled back)",
        ),
    ],
    ids=["future-version", "directory", "damaged-pages", "failed-conversion"],
)
async def test_an_unusable_store_is_one_line_and_no_url(
    make: Callable[[Path], None], problem: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    make(data / DATABASE_NAME)
    code, out, err = await run(MINIBROKER, "serve", "--port", "0", "--data-dir", str(data), cwd=tmp_path)
    assert (code, out) == (1, "")
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("minibroker serve: cannot ") and f"message store {data / DATABASE_NAME}" in lines[0], (
        lines[0]
    )
    assert lines[0].endswith(problem), lines[0]


async def test_the_url_comes_once_an_old_store_is_converted(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    version_1(data / DATABASE_NAME)
    served = await serve(tmp_path, "--data-dir", str(data))
    try:
        async with await connect(served.url) as conn:
            consumer = await (await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)).create_consumer("kept")
            msg = await consumer.receive(timeout=5.0)
            assert msg is not None and msg.body == "old"
        assert await served.stop() == 0
    finally:
        await served.kill()
    db = sqlite3.connect(data / DATABASE_NAME)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4
    db.close()


def test_the_store_says_which_file_and_version(tmp_path: Path) -> None:
    from minibroker.errors import StoreUnusable

    future_version(tmp_path / DATABASE_NAME)
    with pytest.raises(StoreUnusable) as info:
        SqliteStore(tmp_path)
    assert info.value.path == str(tmp_path / DATABASE_NAME) and info.value.version == 99
    SqliteStore(tmp_path / "other").close()  # the failed store let go of its lock and database: nothing leaks
    with pytest.raises(StoreUnusable):
        SqliteStore(tmp_path)  # the same answer again, not "in use by another broker"
