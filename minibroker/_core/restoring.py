"""A fresh core loaded with what a store kept (journal.py), and the pages of a big queue read later (paging.py).
A part of :class:`~minibroker._core.broker.BrokerCore` (state.py says how the parts share the core)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from .durable import DURABLE_PREFIX
from .journal import DurableSaved, Scheduled, Stored
from .state import CoreState

__all__ = ["Restoring"]


class Restoring(CoreState):
    """Restarts: the store's messages, scheduled jobs and durable subscriptions put back without journaling them."""

    def restore(
        self,
        messages: Iterable[Stored],
        scheduled: Iterable[Scheduled] = (),
        durables: Iterable[DurableSaved] = (),
        paged: Iterable[tuple[str, int, int, int]] = (),
        log_seqs: Iterable[tuple[str, Sequence[int]]] = (),
        shares: Iterable[tuple[str, int, str, int, int, int]] = (),
    ) -> None:
        """Load what a store kept into this fresh core, without journaling it again.

        ``messages`` must come in sequence order per queue: each goes back to its queue's store cursor with its
        sequence number and redelivery counter, so dispatch order is the original order. Scheduled jobs are re-armed
        under their job ids at their due time (already due ones fire at the next tick). ``paged``: the queues and
        topic logs loaded only in part (paging.py), with ``log_seqs`` the sequence numbers a log left on disk, and
        ``shares`` the parts of logs durable subscription queues still read there (``LogShare``'s fields, the
        queue's first with the log's name).
        """
        from .topic_log import LOG_PREFIX  # topic logs load with the first durable subscriber or restart (issue 45)

        durables = list(durables)
        for saved in durables:  # not journaled again: the store has them
            self._new_durable(saved.client_id, saved.name, saved.topic, saved.selector, saved.no_local, False)
        for record in messages:
            if record.queue.startswith(LOG_PREFIX):
                self._restore_logged(record)
                if record.message.expiration:
                    self._arm_sweep()
                continue
            q = self.queues.get(record.queue) if record.queue.startswith(DURABLE_PREFIX) else self.queue(record.queue)
            if q is None:  # the messages of a durable subscription that is gone
                continue
            q.restore(record.message, record.seq, record.redelivery_counter)
            if record.message.expiration:
                self._arm_sweep()
        for name, seqs in log_seqs:  # before the positions: trimming below them reaches the part on disk
            self._restore_log_on_disk(name, seqs)
        self._restore_shares(shares)  # before the positions too: the trim keeps what a share reads
        self._restore_positions(durables)
        for job in scheduled:
            self._scheduled_seq = max(self._scheduled_seq, job.job)
            heapq.heappush(self._scheduled, (job.due, job.job, job.message, job.redelivery_counter))
            self.timers_set += 1
        for name, left, after, last in paged:  # big queues: the rest of their messages is paged in later
            if name.startswith(LOG_PREFIX):  # a log is not paged in (topic_log.py): log_seqs says what is on disk
                continue
            q = self.queues.get(name) if name.startswith(DURABLE_PREFIX) else self.queue(name)
            if q is None or self.journal is None:
                continue
            q.on_disk, q.disk_after = left, after
            q.next_seq = max(q.next_seq, last + 1)
            self.journal.paged[name] = q

    def page_in(self, name: str, messages: Sequence[Stored]) -> None:
        """The next page of a paged queue's messages, read from the store (paging.py), in sequence order."""
        q = self.queues.get(name)
        if q is None or not q.on_disk:
            return
        for record in messages:
            q.restore(record.message, record.seq, record.redelivery_counter)
            if record.message.expiration:
                self._arm_sweep()
        q.on_disk = max(0, q.on_disk - len(messages)) if messages else 0  # nothing read: nothing more there
        if messages:
            q.disk_after = messages[-1].seq
            if name.startswith(DURABLE_PREFIX):
                self._shares_handed(name, [record.seq for record in messages])
        if q.consumers and q.dispatchable():
            self._dispatch_queue(q)
