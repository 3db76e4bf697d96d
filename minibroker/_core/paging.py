"""Big queues after a restart: their messages are loaded a page at a time, as ActiveMQ's store cursor pages them in.

A restart loads at most :data:`PAGE` persistent messages of each queue (the oldest); the rest stays on disk
(``Queue.on_disk``, after ``Queue.disk_after`` in sequence order), counted in the queue's size. New persistent sends to
such a queue are written and wait on disk behind them, so the original order holds. When fewer than
:data:`LOW_WATER` persistent messages wait in memory, the driver reads the next page from the store
(:meth:`~minibroker.store.SqliteStore.load_page`) and gives it to the core (``BrokerCore.page_in``), which
dispatches it.
A read that needs the whole queue (a range read, a cursor ack) pages the rest in first. The queues being paged are
``Journal.paged`` (paging needs a store, hence a journal); the list empties as they drain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .journal import Journal

__all__ = ["LOW_WATER", "PAGE", "pages_wanted"]

#: persistent messages of one queue a restart keeps in memory at most, and reads from the store at a time
PAGE = 10_000
#: fewer persistent messages than this waiting in memory: the next page is read
LOW_WATER = 2_000


def pages_wanted(journal: Journal) -> Iterator[tuple[str, int]]:
    """``(queue, disk_after)`` for each paged queue whose memory runs low; queues with nothing left on disk leave
    the list."""
    paged = journal.paged
    for name, queue in list(paged.items()):
        if queue.on_disk <= 0:
            del paged[name]
        elif len(queue.persistent) < LOW_WATER:
            yield name, queue.disk_after
