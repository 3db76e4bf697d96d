"""The core's scheduler (ActiveMQ's ``schedulerSupport``): delayed, repeated and cron deliveries, broker-side
redeliveries, and the ``ActiveMQ.Scheduler.Management`` requests that browse and remove waiting jobs. What a job is,
and when it fires next, is in scheduler.py and cron.py."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from ..message import Destination, Message
from .journal import SCHEDULED, UNSCHEDULED, Scheduled, Unscheduled
from .state import CoreState

if TYPE_CHECKING:
    from .queue import Queue

__all__ = ["BROWSE_PAGE", "BrowseFeed", "Scheduling"]


#: how many replies a scheduler BROWSE keeps waiting in its reply queue at most: the next come as those are consumed
BROWSE_PAGE = 500


@attrs.define(slots=True, eq=False)
class BrowseFeed:
    """What is left of one scheduler BROWSE: the jobs as they were (sorted by due time) and where the next one is."""

    entries: list[tuple[float, int, Message, int]]
    reply_to: Destination
    in_range: Callable[[float], bool] | None
    next: int = 0


class Scheduling(CoreState):
    """Jobs wait in a heap of ``(due, job number, message, redelivery counter)`` on the broker's clock."""

    @property
    def scheduled(self) -> int:
        """Messages waiting in the scheduler (delayed, repeating jobs, broker redeliveries)."""
        return len(self._scheduled)

    def next_scheduled(self) -> float | None:
        """When the scheduler next delivers something (None: nothing waits)."""
        return self._scheduled[0][0] if self._scheduled else None

    def schedule(self, when: float, message: Message, redelivery_counter: int = 0) -> None:
        """Deliver ``message`` to its destination's tail at ``when`` (delayed delivery, broker redelivery)."""
        self._scheduled_seq += 1
        item = (when, self._scheduled_seq, message, redelivery_counter)
        heapq.heappush(self._scheduled, item)
        self.timers_set += 1
        if self.journal is not None and message.persistent:
            self.journal.append(Scheduled(self._scheduled_seq, when, message, redelivery_counter))
            self.journal.undo.append((SCHEDULED, self, item, None))

    def schedule_redelivery(self, when: float, message: Message, redelivery_counter: int, cause: str | None) -> None:
        """The broker redelivery plugin's path: the message comes back to its queue's tail at ``when``."""
        now = self.clock.now()
        self.history.add(
            message.message_id,
            now,
            "redelivery-scheduled",
            redelivery_counter=redelivery_counter,
            detail=cause,
            destination=str(message.destination),
            delay=when - now,
        )
        self.schedule(when, message, redelivery_counter)

    def _manage_scheduler(self, request: Message) -> None:
        """A request to ``topic://ActiveMQ.Scheduler.Management`` (ActiveMQ's ``AMQ_SCHEDULER_ACTION``)."""
        from .scheduler import browse_copy  # jobs and cron (zoneinfo) load with the first scheduled job (issue 45)

        props = request.properties
        action = str(props.get("AMQ_SCHEDULER_ACTION", "")).upper()
        start, end = props.get("ACTION_START_TIME"), props.get("ACTION_END_TIME")
        in_range = None
        if isinstance(start, (int, float)) and isinstance(end, (int, float)):
            low, high = float(start) / 1000.0, float(end) / 1000.0

            def in_range(due: float) -> bool:
                return low <= due <= high

        if action == "BROWSE":
            reply_to = request.reply_to
            if reply_to is None:
                return
            entries = sorted(self._scheduled)
            if reply_to.is_queue:  # replied a page at a time as the reply queue drains (issue 31)
                q = self.queue(reply_to.name)
                if q.browse_feeds is None:
                    q.browse_feeds = deque()
                q.browse_feeds.append(BrowseFeed(entries, reply_to, in_range))
                self._feed_browse(q)
                return
            for n, (due, _job, message, _counter) in enumerate(entries):
                if in_range is None or in_range(due):
                    self._enqueue(browse_copy(message, message.message_id, reply_to, n))
        elif action in ("REMOVE", "REMOVEALL"):
            job_id = props.get("scheduledJobId")

            def doomed(entry: tuple[float, int, Message, int]) -> bool:
                if action == "REMOVEALL":
                    return True
                if job_id is not None:
                    return entry[2].message_id == job_id
                return in_range is not None and in_range(entry[0])

            kept = []
            for entry in self._scheduled:
                if doomed(entry):
                    if self.journal is not None and entry[2].persistent:
                        self.journal.append(Unscheduled(entry[1]))
                        self.journal.undo.append((UNSCHEDULED, self, entry, None))
                else:
                    kept.append(entry)
            heapq.heapify(kept)
            self._scheduled = kept

    def _feed_browse(self, q: Queue) -> None:
        """Reply the next page of the BROWSEs waiting on reply queue ``q`` while it holds fewer than a page, so a
        BROWSE of 100,000 jobs neither holds the broker for seconds nor fills the queue at once (the consumer's
        acks call this again, through ``_dispatch_destination``)."""
        from .scheduler import browse_copy

        feeds = q.browse_feeds
        while feeds and q.size < BROWSE_PAGE:
            feed = feeds[0]
            room = BROWSE_PAGE - q.size
            while room > 0 and feed.next < len(feed.entries):
                due, _job, message, _counter = feed.entries[feed.next]
                if feed.in_range is None or feed.in_range(due):
                    self._enqueue(browse_copy(message, message.message_id, feed.reply_to, feed.next))
                    room -= 1
                feed.next += 1
            if feed.next >= len(feed.entries):
                feeds.popleft()
        if not feeds:
            q.browse_feeds = None

    def _schedule_delayed(self, message: Message) -> bool:
        """``AMQ_SCHEDULED_DELAY``/``_PERIOD``/``_REPEAT`` make the message a job of the scheduler (scheduler.py),
        when the broker has scheduler support."""
        properties = message.properties
        if not properties or not (
            "AMQ_SCHEDULED_DELAY" in properties
            or "AMQ_SCHEDULED_PERIOD" in properties
            or "AMQ_SCHEDULED_CRON" in properties
        ):  # none of what makes a job (read_job): a send with other properties skips the import statement
            return False
        from .scheduler import first_due, read_job

        job = read_job(message)
        if job is None:
            return False
        self.schedule(first_due(self.clock.now(), job, self.scheduler_time_zone), job.waiting_message())
        return True

    def _fire_due_jobs(self, now: float) -> None:
        """Deliver every job due by ``now``; a repeating or cron job is scheduled again."""
        from .scheduler import first_due, next_cron, pending_job

        while self._scheduled and self._scheduled[0][0] <= now:
            item = heapq.heappop(self._scheduled)
            due, job_number, message, counter = item
            if self.journal is not None and message.persistent:
                self.journal.append(Unscheduled(job_number))
                self.journal.undo.append((UNSCHEDULED, self, item, None))
            job = pending_job(message)
            if job is None:
                self._enqueue(message, 0, counter)
                continue
            if job.cron is not None:
                # a cron firing delivers, or with a repeat starts a job of its own (ActiveMQ's job scheduler)
                if job.repeat == 0:
                    self._enqueue(job.delivery(), 0, counter)
                else:
                    run = job.cron_run()
                    self.schedule(first_due(due, run, self.scheduler_time_zone), run.waiting_message())
                again = attrs.evolve(job, deliveries=job.deliveries + 1)
                self.schedule(next_cron(due, job, self.scheduler_time_zone), again.waiting_message())
                continue
            self._enqueue(job.delivery(), 0, counter)
            following = job.after_firing()
            if following is not None:
                self.schedule(due + following.next_period(), following.waiting_message())
