"""One broker per data directory: an advisory lock on a file inside it, held while the broker's store is open.

Standard library only, and cheap to import: ``minibroker serve`` asks :func:`data_dir_in_use` before it prints its URL
and imports the broker, so that a second broker on the same directory fails before anyone connects to it, or, as
ActiveMQ's shared-storage slave (``--wait-for-lock``), waits in :func:`wait_for_data_dir` before it binds a port.
"""

from __future__ import annotations

import os
import sys

if sys.platform != "win32":  # POSIX flock; Windows has no advisory locks, so there is no check there
    import fcntl

TYPE_CHECKING = False  # not typing's: this module is on the launch path of ``minibroker serve``
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO

#: the lock file inside a data directory
LOCK_NAME = "lock"
#: the store's database inside a data directory (minibroker.store)
DATABASE_NAME = "minibroker.sqlite3"
#: ActiveMQ's ``lockAcquireSleepInterval`` default (AbstractLocker): how often a waiting slave tries the lock
LOCK_RETRY_INTERVAL = 10.0


def in_use_message(directory: str | os.PathLike[str]) -> str:
    return f"the message store in {os.fspath(directory)} is in use by another broker"


def lock_data_dir(directory: str | os.PathLike[str]) -> IO[bytes] | None:
    """Take ``directory``'s lock (it must exist) and return the open lock file: closing it releases the lock.

    :class:`BlockingIOError` when another broker holds it; None where there are no advisory locks (Windows).
    """
    if sys.platform == "win32":  # pragma: no cover
        return None
    lock = open(os.path.join(directory, LOCK_NAME), "ab")  # noqa: SIM115 - the caller holds it open
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise
    return lock


def data_dir_in_use(directory: str | os.PathLike[str]) -> str | None:
    """Why a broker cannot use ``directory`` right now (another one holds it), or None.

    Only a held lock counts: other errors (a missing directory, permissions) are left for the store to report when
    it opens, with its own message."""
    if not os.path.isdir(directory):
        return None
    try:
        lock = lock_data_dir(directory)
    except BlockingIOError:
        return in_use_message(directory)
    except OSError:
        return None
    if lock is not None:
        lock.close()
    return database_problem(directory)


def database_problem(directory: str | os.PathLike[str]) -> str | None:
    """Why the store's database in ``directory`` cannot be read (not a database, another broker holds it although
    its lock file was deleted), or None (no database yet: the store makes one). One read-only query: the store's own
    checks come when it opens, but ``serve`` says what is wrong before it prints a URL."""
    path = os.path.join(directory, DATABASE_NAME)
    if not os.path.isfile(path):
        return None
    import pathlib
    import sqlite3

    try:
        db = sqlite3.connect(pathlib.Path(path).absolute().as_uri() + "?mode=ro", uri=True, timeout=0)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        if "locked" in str(exc):
            return in_use_message(directory)
        return f"cannot open the message store {path}: {exc}"
    return None


def data_dir_problem(directory: str | os.PathLike[str]) -> str | None:
    """Why the store could not open in ``directory`` (the message it would give), or None: a path that cannot be a
    directory (a file in the way, a parent that cannot be made) or a directory another broker holds. The directory is
    made here, as the store would make it: what is left to fail later is only the database file itself."""
    if not os.fspath(directory):
        return "the data directory must be named (an empty path is not one)"
    if os.path.exists(directory) and not os.path.isdir(directory):
        return f"the data directory {os.fspath(directory)} is a file, not a directory: name a directory (it is made)"
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        return f"cannot open the message store in {os.fspath(directory)}: {exc}"
    return data_dir_in_use(directory)


def waiting_message(directory: str | os.PathLike[str], interval: float) -> str:
    """What a waiting slave says once (ActiveMQ's SharedFileLocker logs its like at INFO)."""
    lock = os.path.join(directory, LOCK_NAME)
    return (
        f"the message store {lock} is locked by another broker: this broker is now a slave waiting for the lock "
        f"(trying every {interval:g} s); it starts when the master stops"
    )


def wait_for_data_dir(
    directory: str | os.PathLike[str], interval: float = LOCK_RETRY_INTERVAL, on_wait: Callable[[str], None] = print
) -> None:
    """Return once no other broker holds ``directory``'s lock: ActiveMQ's shared-storage slave (SharedFileLocker
    without ``failIfLocked``), which tries the lock every ``interval`` seconds and says once that it waits.

    The lock is let go again on return, for the store to take (a third broker taking it in between makes that
    store's open fail as in use). The directory is made if missing; an error other than a held lock is left for the
    store to report."""
    import time

    os.makedirs(directory, exist_ok=True)
    said = False
    while True:
        try:
            lock = lock_data_dir(directory)
        except BlockingIOError:
            if not said:
                on_wait(waiting_message(directory, interval))
                said = True
            time.sleep(interval)
            continue
        except OSError:
            return
        if lock is not None:
            lock.close()
        return
