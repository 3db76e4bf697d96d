"""Message stores: where a broker keeps its persistent messages across restarts.

The broker core journals every change to its persistent messages (see ``minibroker._core.journal``); the driver
hands each call's batch of operations to the store's :meth:`MessageStore.apply`, which must make them durable, all
or nothing, before it returns: only then does the broker answer the call (a synchronous send's receipt, a commit's
OK). At start-up (and on ``Broker.restart()``) :meth:`MessageStore.load` gives back what survived.

* :class:`SqliteStore` keeps them in one SQLite database (stdlib ``sqlite3``, WAL journal) in a directory, the
  ``--data-dir`` of ``minibroker serve``. One transaction per batch. ``synchronous="NORMAL"`` (the default) survives
  the broker process being killed at any point (the data is in the operating system once ``apply`` returns);
  ``synchronous="FULL"`` also survives a power failure, at the cost of an fsync per batch.
* :class:`MemoryStore` keeps them in this process: ``Broker.restart()`` then behaves as a persistent broker's restart
  does, without a disk (handy in tests).

Tables: ``messages(queue, seq, counter, message)`` keyed by queue and sequence number (loaded in that order, which is
the queue's send order) and ``scheduled(job, due, counter, message)``. Messages are kept in the wire encoding of
:mod:`minibroker.wire`. ``meta`` keeps the epoch and, one ``producer <id>`` row each, the producer audit
(``_core/producer_audit.py``: a failover client's resent sends are dropped after a restart too), written in the
batch that stores the message.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import attrs

from ._core.durable import DURABLE_PREFIX
from ._core.journal import (
    DurableDropped,
    DurableSaved,
    JournalOp,
    LogShared,
    LogTrimmed,
    Purged,
    Redelivered,
    Removed,
    Scheduled,
    Stored,
    Unscheduled,
)
from ._core.producer_audit import ProducerAudit
from ._core.replay import random_epoch
from ._core.topic_log import LOG_PREFIX
from ._data_dir_lock import DATABASE_NAME, in_use_message, lock_data_dir
from ._store_schema import SCHEMA_VERSION, create_tables, upgrade
from ._store_shares import hand_over, share_counts, shared_queues, shares
from .errors import IllegalStateError, InvalidConfiguration, MinibrokerError, StoreError, StoreUnusable
from .message import Message
from .wire.encoders import write_message as _encode_message_parts
from .wire.parsers import FrameParser

__all__ = ["DATABASE_NAME", "MemoryStore", "MessageStore", "SqliteStore", "StoreError", "StoredState"]

#: the database file inside a data directory. Version 2 keeps each distinct message once (``bodies``, with the
#: number of queue rows that refer to it): a topic message fed to a thousand durable subscriptions is one body and a
#: thousand small rows, where version 1 wrote it a thousand times (issue 31). Version 3 keeps, with each durable
#: subscription, its position in its topic's log (a topic message an offline subscription has not had yet is kept
#: once, as a row of ``topic-log://<topic>``: topic_log.py). Version 4: _store_schema.py. Older files are converted
#: on open.


@attrs.frozen(slots=True)
class StoredState:
    """What a store holds: persistent messages in queue and sequence order, and scheduled messages."""

    messages: tuple[Stored, ...] = ()
    scheduled: tuple[Scheduled, ...] = ()
    durables: tuple[DurableSaved, ...] = ()
    #: queues loaded only in part (a page): (queue, messages left on disk, last seq loaded, last seq on disk)
    paged: tuple[tuple[str, int, int, int], ...] = ()
    #: for each topic log among them, the sequence numbers of its rows left on disk (a log is not paged in: a
    #: subscription that catches up shares them with its queue, which is, and counts need them)
    log_seqs: tuple[tuple[str, array[int]], ...] = ()
    #: the parts of topic logs durable subscription queues still read there: (queue, first, log, from_seq, to_seq,
    #: rows left) (topic_log.py ``LogShare``)
    shares: tuple[tuple[str, int, str, int, int, int], ...] = ()


class MessageStore(Protocol):
    """What the broker needs of a store."""

    def load(self, page: int | None = None) -> StoredState:
        """What survived; with ``page``, at most that many messages of each queue (the oldest), the rest left on
        disk for :meth:`load_page` (a store may always load everything)."""
        ...

    def load_page(self, queue: str, after_seq: int, limit: int) -> list[Stored]:
        """The next ``limit`` messages of ``queue`` after sequence number ``after_seq``, in order."""
        ...

    def apply(self, ops: Sequence[JournalOp]) -> None:
        """Make a batch of journal operations durable, all or nothing, before returning."""

    def epoch(self) -> str:
        """The broker epoch kept with the messages: the same after a restart, since nothing was lost
        (readers such as the Spark source compare it to detect a broker that forgot its messages)."""
        ...

    def close(self) -> None: ...


def encode_message(message: Message) -> bytes:
    """A message in the wire encoding (the store's format)."""
    parts: list[bytes] = []
    _encode_message_parts(message, parts)
    return b"".join(parts)


def body_key(blob: bytes) -> bytes:
    """The key a stored message body is kept under: its content's digest (copies of one message in several
    queues share it; a virtual topic's copies differ by destination, so do not)."""
    return hashlib.blake2b(blob, digest_size=16).digest()


def decode_message(data: bytes) -> Message:
    message, end = FrameParser().read_message(data, 0)
    if end != len(data):
        raise StoreError(f"a stored message has {len(data) - end} unexpected trailing bytes")
    return message


class _Batch:
    """One batch folded into row changes: a message stored and removed within the batch never reaches the disk."""

    def __init__(self) -> None:
        self.added: dict[tuple[str, int], Stored] = {}
        self.counters: dict[tuple[str, int], int] = {}
        self.removed: list[tuple[str, int]] = []
        self.scheduled: dict[int, Scheduled] = {}
        self.unscheduled: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.added or self.counters or self.removed or self.scheduled or self.unscheduled)


_Cut = Purged | DurableSaved | DurableDropped | LogShared | LogTrimmed
#: operations that apply between what came before them and after: a batch is cut at each
_CUTS = frozenset((Purged, DurableSaved, DurableDropped, LogShared, LogTrimmed))


def _segments(ops: Iterable[JournalOp]) -> Iterator[_Batch | _Cut]:
    """Fold ``ops`` into batches, cut at each purge and durable subscription change (which must apply between what
    came before and after it)."""
    batch = _Batch()
    for op in ops:
        kind = type(op)
        if kind is Stored:
            assert isinstance(op, Stored)
            batch.added[(op.queue, op.seq)] = op
        elif kind is Removed:
            assert isinstance(op, Removed)
            key = (op.queue, op.seq)
            if batch.added.pop(key, None) is None:
                batch.removed.append(key)
            batch.counters.pop(key, None)
        elif kind is Redelivered:
            assert isinstance(op, Redelivered)
            key = (op.queue, op.seq)
            added = batch.added.get(key)
            if added is not None:
                batch.added[key] = added._replace(redelivery_counter=op.redelivery_counter)
            else:
                batch.counters[key] = op.redelivery_counter
        elif kind is Scheduled:
            assert isinstance(op, Scheduled)
            batch.scheduled[op.job] = op
        elif kind is Unscheduled:
            assert isinstance(op, Unscheduled)
            if batch.scheduled.pop(op.job, None) is None:
                batch.unscheduled.append(op.job)
        elif (
            kind is Purged or kind is DurableSaved or kind is DurableDropped or kind is LogShared or kind is LogTrimmed
        ):
            assert isinstance(op, _Cut)
            if batch:
                yield batch
                batch = _Batch()
            yield op
        else:  # pragma: no cover - the journal holds only these
            raise TypeError(f"not a journal operation: {op!r}")
    if batch:
        yield batch


class SqliteStore:
    """Persistent messages in ``<directory>/minibroker.sqlite3`` (created if missing), one transaction per batch.

    The directory is locked (``<directory>/lock``), and the database itself, while the store is open: a second
    broker on the same directory gets :class:`StoreError`. ``synchronous`` is SQLite's setting: ``"NORMAL"``
    survives a killed process, ``"FULL"`` a power failure too.
    """

    def __init__(self, directory: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise InvalidConfiguration(
                f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}", synchronous=synchronous
            )
        self.directory = Path(directory)
        self.path = self.directory / DATABASE_NAME
        self._lock: IO[bytes] | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._lock = self._acquire_lock()
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            self._release_lock()
            if self.path.is_dir():
                raise StoreUnusable(
                    f"cannot open the message store {self.path}: it is a directory, not a database file",
                    path=str(self.path),
                ) from exc
            raise StoreError(
                f"cannot open the message store in {self.directory}: {exc}", directory=str(self.directory)
            ) from exc
        self._closed = False
        #: the last sequence stored per producer (KahaDB's producer audit), kept in ``meta`` with the messages
        self.producer_audit = ProducerAudit()
        try:
            self._setup(synchronous.upper())
            rows = self._db.execute("SELECT key, value FROM meta WHERE key LIKE 'producer %' ORDER BY rowid").fetchall()
            self.producer_audit.load((key[9:], int(value)) for key, value in rows)
        except StoreError:
            self.close()
            raise
        except sqlite3.Error as exc:
            self.close()
            if "locked" in str(exc):
                raise StoreError(in_use_message(self.directory), directory=str(self.directory)) from exc
            # not a database, damaged pages (sqlite3.DatabaseError); OperationalError: I/O, permissions
            unusable = type(exc) is sqlite3.DatabaseError
            error = StoreUnusable if unusable else StoreError
            raise error(f"cannot open the message store {self.path}: {exc}", path=str(self.path)) from exc

    def __repr__(self) -> str:
        return f"<SqliteStore {self.path}{' closed' if self._closed else ''}>"

    def _acquire_lock(self) -> IO[bytes] | None:
        try:
            return lock_data_dir(self.directory)  # held open while the store is
        except BlockingIOError:
            raise StoreError(in_use_message(self.directory), directory=str(self.directory)) from None

    def _release_lock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.close()  # closing the file releases the lock

    def _setup(self, synchronous: str) -> None:
        db = self._db
        # the database itself is locked too, for as long as the store is open (its first write takes the lock and
        # exclusive mode keeps it): a lock file someone deleted does not let a second broker share the messages
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"SQLite refused the WAL journal mode for {self.path} (got {mode})")
        db.execute(f"PRAGMA synchronous={synchronous}")
        found = db.execute("PRAGMA user_version").fetchone()[0]
        if found > SCHEMA_VERSION:
            raise StoreUnusable(
                f"cannot open the message store {self.path}: it has schema version {found}, written by a newer "
                f"minibroker (this one reads versions up to {SCHEMA_VERSION})",
                path=str(self.path),
                version=found,
            )
        try:
            version = upgrade(db, found, body_key)
        except sqlite3.Error as exc:
            if "locked" in str(exc):
                raise
            raise StoreUnusable(
                f"cannot convert the message store {self.path} from schema version {found} to {SCHEMA_VERSION}: "
                f"{exc} (the conversion was rolled back)",
                path=str(self.path),
                version=found,
            ) from exc
        if version not in (0, SCHEMA_VERSION):
            raise StoreUnusable(
                f"cannot open the message store {self.path}: it has schema version {version}, which no minibroker "
                f"wrote (this one reads versions up to {SCHEMA_VERSION})",
                path=str(self.path),
                version=version,
            )
        db.execute("BEGIN IMMEDIATE")
        try:
            create_tables(db)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError(f"the message store {self.path} is closed")

    # -- MessageStore -----------------------------------------------------------------------------------------------

    def load(self, page: int | None = None) -> StoredState:
        self._check_open()
        paged: list[tuple[str, int, int, int]] = []
        log_seqs: list[tuple[str, array[int]]] = []
        try:
            # rows first, without their bodies, then each body once: a body read per row would hold as many copies
            # of a message as durable subscriptions keep it before decoding shares one object
            db = self._db
            sharing = shared_queues(db)
            if page is None:
                for queue in sharing:  # every row it shares becomes its own
                    hand_over(db, queue, -1, None)
                rows = db.execute("SELECT queue, seq, counter, body FROM messages ORDER BY queue, seq").fetchall()
            else:
                rows = []
                # a queue's first page, taken from its shares too where it has some (they become its own rows)
                heads = {queue: [(queue, *row) for row in hand_over(db, queue, -1, page)] for queue in sharing}
                counts = {
                    q: (n, last)
                    for q, n, last in db.execute("SELECT queue, COUNT(*), MAX(seq) FROM messages GROUP BY queue")
                }
                for queue in sharing:
                    own, own_last = counts.get(queue, (0, -1))
                    more, more_last = share_counts(db, queue)
                    counts[queue] = (own + more, max(own_last, more_last))
                for queue, (count, last) in counts.items():
                    head = heads.get(queue)
                    if head is None:
                        head = db.execute(
                            "SELECT queue, seq, counter, body FROM messages WHERE queue = ? ORDER BY seq LIMIT ?",
                            (queue, page),
                        ).fetchall()
                    rows += head
                    if count > len(head):
                        paged.append((queue, count - len(head), head[-1][1] if head else -1, last))
                        if queue.startswith(LOG_PREFIX):
                            left = db.execute(
                                "SELECT seq FROM messages WHERE queue = ? AND seq > ? ORDER BY seq",
                                (queue, head[-1][1]),
                            )
                            log_seqs.append((queue, array("q", (seq for (seq,) in left))))
            log_shares = shares(db)
            blobs = self._bodies({row[3] for row in rows})
            jobs = self._db.execute("SELECT job, due, counter, message FROM scheduled ORDER BY job").fetchall()
            durable_rows = self._db.execute(
                "SELECT client_id, name, topic, selector, no_local, position FROM durables ORDER BY client_id, name"
            ).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the message store {self.path}: {exc}", path=str(self.path)) from exc
        try:
            shared = {body: decode_message(blob) for body, blob in blobs.items()}  # one object per body
            messages = tuple(Stored(q, seq, shared[body], counter) for q, seq, counter, body in rows)
            scheduled = tuple(Scheduled(job, due, decode_message(blob), counter) for job, due, counter, blob in jobs)
        except MinibrokerError as exc:
            raise StoreError(
                f"the message store {self.path} holds an unreadable message: {exc}", path=str(self.path)
            ) from exc
        durables = tuple(DurableSaved(c, n, t, s, bool(nl), p) for c, n, t, s, nl, p in durable_rows)
        return StoredState(messages, scheduled, durables, tuple(paged), tuple(log_seqs), log_shares)

    def _bodies(self, ids: set[int]) -> dict[int, bytes]:
        """The stored bodies of these ids, read in chunks (SQLite bounds a statement's parameters)."""
        found: dict[int, bytes] = {}
        ordered = sorted(ids)
        for start in range(0, len(ordered), 500):
            chunk = ordered[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(self._db.execute(f"SELECT id, message FROM bodies WHERE id IN ({marks})", chunk).fetchall())
        return found

    def load_page(self, queue: str, after_seq: int, limit: int) -> list[Stored]:
        self._check_open()
        try:
            if queue.startswith(DURABLE_PREFIX) and queue in shared_queues(self._db):
                taken = hand_over(self._db, queue, after_seq, limit)
                blobs = self._bodies({body for _, _, body in taken})
                return [Stored(queue, seq, decode_message(blobs[body]), counter) for seq, counter, body in taken]
            rows = self._db.execute(
                "SELECT m.seq, m.counter, b.message FROM messages m JOIN bodies b ON b.id = m.body "
                "WHERE m.queue = ? AND m.seq > ? ORDER BY m.seq LIMIT ?",
                (queue, after_seq, limit),
            ).fetchall()
            return [Stored(queue, seq, decode_message(blob), counter) for seq, counter, blob in rows]
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the message store {self.path}: {exc}", path=str(self.path)) from exc
        except MinibrokerError as exc:
            raise StoreError(
                f"the message store {self.path} holds an unreadable message: {exc}", path=str(self.path)
            ) from exc

    def epoch(self) -> str:
        self._check_open()
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
            if row is not None:
                return str(row[0])
            value = random_epoch()
            with self._db:
                self._db.execute("INSERT INTO meta (key, value) VALUES ('epoch', ?)", (value,))
            return value
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the broker epoch from {self.path}: {exc}", path=str(self.path)) from exc

    def apply(self, ops: Sequence[JournalOp]) -> None:
        self._check_open()
        db = self._db
        try:
            db.execute("BEGIN")
            try:
                for segment in _segments(ops):
                    if isinstance(segment, Purged):
                        db.execute(
                            "UPDATE body_refs SET refs = refs - (SELECT COUNT(*) FROM messages m "
                            "WHERE m.queue = ? AND m.body = body_refs.body) "
                            "WHERE body IN (SELECT body FROM messages WHERE queue = ?)",
                            (segment.queue, segment.queue),
                        )
                        db.execute("DELETE FROM messages WHERE queue = ?", (segment.queue,))
                        db.execute("DELETE FROM log_shares WHERE queue = ?", (segment.queue,))
                        continue
                    if isinstance(segment, DurableSaved):
                        db.execute("INSERT OR REPLACE INTO durables VALUES (?, ?, ?, ?, ?, ?)", tuple(segment))
                        continue
                    if isinstance(segment, DurableDropped):
                        db.execute("DELETE FROM durables WHERE client_id = ? AND name = ?", tuple(segment))
                        continue
                    if isinstance(segment, LogShared):
                        log, from_seq, to_seq, queue, first = segment
                        db.execute(
                            "INSERT OR REPLACE INTO log_shares VALUES (?, ?, ?, ?, ?)",
                            (queue, first, log, from_seq, to_seq),
                        )
                        continue
                    if isinstance(segment, LogTrimmed):
                        db.execute(_LOG_ROWS_GO, (*segment, *segment))
                        db.execute("DELETE FROM messages WHERE queue = ? AND seq < ?", tuple(segment))
                        continue
                    if segment.added:
                        _add_rows(db, list(segment.added.values()))
                    if segment.counters:
                        db.executemany(
                            "UPDATE messages SET counter = ? WHERE queue = ? AND seq = ?",
                            [(counter, queue, seq) for (queue, seq), counter in segment.counters.items()],
                        )
                    if segment.removed:
                        db.executemany(_RELEASE_BODY, segment.removed)
                        db.executemany("DELETE FROM messages WHERE queue = ? AND seq = ?", segment.removed)
                    if segment.scheduled:
                        db.executemany(
                            "INSERT OR REPLACE INTO scheduled VALUES (?, ?, ?, ?)",
                            [
                                (op.job, op.due, op.redelivery_counter, encode_message(op.message))
                                for op in segment.scheduled.values()
                            ],
                        )
                    if segment.unscheduled:
                        db.executemany("DELETE FROM scheduled WHERE job = ?", [(j,) for j in segment.unscheduled])
                _let_go_of_bodies(db)
                _write_producer_audit(db, self.producer_audit)
                db.execute("COMMIT")
            except BaseException:
                self._roll_back()
                raise
        except (sqlite3.Error, MinibrokerError) as exc:
            raise StoreError(f"the message store {self.path} failed: {exc}", path=str(self.path)) from exc

    def _roll_back(self) -> None:
        """Take back the open transaction, and give its pages in the WAL back to the disk: a large batch that failed
        (a full disk) must not leave a WAL as large as itself behind (issue 41)."""
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("ROLLBACK")
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._release_lock()

    # -- inspection (tests, tools) ----------------------------------------------------------------------------------

    def count(self, queue: str | None = None) -> int:
        """Persistent messages stored (in ``queue``, or in all queues)."""
        self._check_open()
        if queue is None:
            return int(self._db.execute("SELECT count(*) FROM messages").fetchone()[0])
        return int(self._db.execute("SELECT count(*) FROM messages WHERE queue = ?", (queue,)).fetchone()[0])


#: a log's rows below a sequence number go: their bodies' references
_LOG_ROWS_GO = (
    "UPDATE body_refs SET refs = refs - (SELECT COUNT(*) FROM messages m "
    "WHERE m.queue = ? AND m.seq < ? AND m.body = body_refs.body) "
    "WHERE body IN (SELECT body FROM messages WHERE queue = ? AND seq < ?)"
)

#: a queue row is going (removed, or replaced): its body has one reference less
_RELEASE_BODY = (
    "UPDATE body_refs SET refs = refs - 1 WHERE body = (SELECT body FROM messages WHERE queue = ? AND seq = ?)"
)


def _let_go_of_bodies(db: sqlite3.Connection) -> None:
    """Bodies no row refers to any more go (the partial index finds them)."""
    db.execute("DELETE FROM bodies WHERE id IN (SELECT body FROM body_refs WHERE refs <= 0)")
    db.execute("DELETE FROM body_refs WHERE refs <= 0")


def _add_rows(db: sqlite3.Connection, added: list[Stored]) -> None:
    """Store queue rows, each message body once: one encoding per message object of the batch (a topic message fed
    to many durable subscriptions is one object), one body per distinct content, referenced by every row."""
    db.executemany(_RELEASE_BODY, [(op.queue, op.seq) for op in added])  # rows replaced in place, if any
    encoded: dict[int, tuple[bytes, bytes]] = {}
    refs: dict[bytes, list[Any]] = {}
    keys = []
    for op in added:
        pair = encoded.get(id(op.message))
        if pair is None:
            blob = encode_message(op.message)
            pair = encoded[id(op.message)] = (body_key(blob), blob)
        key, blob = pair
        entry = refs.get(key)
        if entry is None:
            refs[key] = [key, blob, 1]
        else:
            entry[2] += 1
        keys.append(key)
    db.executemany(
        "INSERT INTO bodies (key, message) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
        [(key, blob) for key, blob, _ in refs.values()],
    )
    db.executemany(
        "INSERT INTO body_refs SELECT id, ? FROM bodies WHERE key = ? "
        "ON CONFLICT (body) DO UPDATE SET refs = refs + excluded.refs",
        [(count, key) for key, _, count in refs.values()],
    )
    db.executemany(
        "INSERT OR REPLACE INTO messages VALUES (?, ?, ?, (SELECT id FROM bodies WHERE key = ?))",
        [(op.queue, op.seq, op.redelivery_counter, key) for op, key in zip(added, keys, strict=True)],
    )


def _write_producer_audit(db: sqlite3.Connection, audit: ProducerAudit) -> None:
    """The producer audit, in the transaction of the messages its change came with (a send answered is in both):
    only the connections of clients that resend feed it (``_driver/resent_sends.py``), so other batches write
    nothing here."""
    changed, evicted = audit.take_changes()
    if changed:
        db.executemany(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)", [(f"producer {p}", str(s)) for p, s in changed.items()]
        )
    if evicted:
        db.executemany("DELETE FROM meta WHERE key = ?", [(f"producer {p}",) for p in evicted])


class MemoryStore:
    """A store in this process's memory: survives ``Broker.restart()``, not the process."""

    def __init__(self) -> None:
        self.producer_audit = ProducerAudit()
        self.messages: dict[tuple[str, int], Stored] = {}
        self.scheduled: dict[int, Scheduled] = {}
        self.durables: dict[tuple[str, str], DurableSaved] = {}
        #: batches applied (for tests: one per driver call that changed something)
        self.batches = 0
        self._epoch = random_epoch()

    def load(self, page: int | None = None) -> StoredState:
        """Everything, whatever ``page`` says: a memory store pages nothing in later."""
        ordered = sorted(self.messages.items(), key=lambda item: item[0])
        return StoredState(
            tuple(op for _, op in ordered),
            tuple(self.scheduled[j] for j in sorted(self.scheduled)),
            tuple(self.durables[k] for k in sorted(self.durables)),
        )

    def load_page(self, queue: str, after_seq: int, limit: int) -> list[Stored]:
        ordered = sorted((seq, op) for (name, seq), op in self.messages.items() if name == queue and seq > after_seq)
        return [op for _, op in ordered[:limit]]

    def apply(self, ops: Sequence[JournalOp]) -> None:
        self.batches += 1
        for segment in _segments(ops):
            if isinstance(segment, Purged):
                for key in [k for k in self.messages if k[0] == segment.queue]:
                    del self.messages[key]
                continue
            if isinstance(segment, DurableSaved):
                self.durables[(segment.client_id, segment.name)] = segment
                continue
            if isinstance(segment, DurableDropped):
                self.durables.pop((segment.client_id, segment.name), None)
                continue
            if isinstance(segment, LogShared):  # a memory store has no part on disk: the rows are copied
                log, from_seq, to_seq, queue, first = segment
                rows = [op for (name, seq), op in self.messages.items() if name == log and from_seq <= seq < to_seq]
                for op in rows:
                    copy = Stored(queue, op.seq - from_seq + first, op.message, 0)
                    self.messages[(queue, copy.seq)] = copy
                continue
            if isinstance(segment, LogTrimmed):
                for key in [k for k in self.messages if k[0] == segment.log and k[1] < segment.below_seq]:
                    del self.messages[key]
                continue
            self.messages.update(segment.added)
            for key, counter in segment.counters.items():
                if key in self.messages:
                    self.messages[key] = self.messages[key]._replace(redelivery_counter=counter)
            for key in segment.removed:
                self.messages.pop(key, None)
            self.scheduled.update(segment.scheduled)
            for job in segment.unscheduled:
                self.scheduled.pop(job, None)

    def epoch(self) -> str:
        return self._epoch

    def close(self) -> None:
        pass
