"""Scheduled delivery (ActiveMQ's ``schedulerSupport``): ``AMQ_SCHEDULED_DELAY``, ``AMQ_SCHEDULED_PERIOD`` and
``AMQ_SCHEDULED_REPEAT`` on a sent message make it a *job* that the broker delivers later, once or several times.

The rules are ActiveMQ 5.17's job scheduler's (``JobSchedulerImpl.doSchedule``, ``InMemoryJobScheduler``), checked
against its recordings (``scheduler_*``):

* a job starts at the send time rounded up to the next half second (``((now + 500) / 500) * 500`` ms: "so we can
  schedule more jobs at the same time"), and first fires at start + delay, or start + period without a delay;
* it then fires ``repeat`` more times, ``period`` apart (a negative repeat: forever); a repeat without a period,
  or a period of 0, is one delivery;
* each delivery is a new message (a fresh message id, the job's id in ``scheduledJobId``) without the scheduling
  properties, so a consumer sees what a plain send would have given it.

``AMQ_SCHEDULED_CRON`` (cron.py, the scheduler's time zone) makes a job fire at each matching minute: alone it
delivers each time; with a repeat each firing starts a job of its own with the delay, period and repeat (ActiveMQ's
rule), so ``0 2 * * *`` with ``AMQ_SCHEDULED_REPEAT=2`` delivers three messages every night at 02:00.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import tzinfo

import attrs

from ..message import Destination, Message
from .cron import UTC, parse_cron

__all__ = [
    "SCHEDULE_PROPERTIES",
    "Job",
    "browse_copy",
    "first_due",
    "job_start",
    "next_cron",
    "pending_job",
    "read_job",
]

#: how many times a repeating job has fired, kept on its waiting message so a restart resumes it (never delivered)
DELIVERIES = "AMQ_SCHEDULED_DELIVERIES"
#: the properties a job is made of (removed from each delivery)
SCHEDULE_PROPERTIES = (
    "AMQ_SCHEDULED_DELAY",
    "AMQ_SCHEDULED_PERIOD",
    "AMQ_SCHEDULED_REPEAT",
    "AMQ_SCHEDULED_CRON",
    DELIVERIES,
)


@attrs.frozen(slots=True)
class Job:
    """One scheduled message: ``delay`` and ``period`` in seconds, ``repeat`` deliveries still to come after the
    next one (negative: forever), ``deliveries`` made so far, and a ``cron`` entry for jobs that fire on a calendar
    (each cron firing then delivers once, or, with a repeat, starts a job of its own with the delay, period and
    repeat: ActiveMQ's ``InMemoryJobScheduler``)."""

    message: Message
    delay: float
    period: float
    repeat: int
    deliveries: int = 0
    cron: str | None = None

    @property
    def job_id(self) -> str:
        return self.message.message_id

    @property
    def repeats(self) -> bool:
        """More than one delivery: each gets a message id of its own, as ActiveMQ gives repeated and cron jobs."""
        return self.cron is not None or self.repeat != 0 or self.deliveries > 0

    def delivery(self) -> Message:
        """The message this firing delivers: without the scheduling properties, ``scheduledJobId`` naming the job,
        and (a repeating job) a new message id per delivery."""
        properties = {k: v for k, v in self.message.properties.items() if k not in SCHEDULE_PROPERTIES}
        properties["scheduledJobId"] = self.job_id
        message_id = f"{self.job_id}:{self.deliveries + 1}" if self.repeats else self.job_id
        return attrs.evolve(self.message, properties=properties, message_id=message_id)

    def after_firing(self) -> Job | None:
        """The job once this (non-cron) firing is done, or None when it has fired its last."""
        if self.repeat == 0:
            return None
        return attrs.evolve(self, repeat=self.repeat - 1 if self.repeat > 0 else -1, deliveries=self.deliveries + 1)

    def next_period(self) -> float:
        """The time to the next firing; a job repeating forever without a period fires once a second (ActiveMQ
        would fire it without pause, which nothing can consume)."""
        return self.period if self.period > 0 or self.repeat >= 0 else 1.0

    def cron_run(self) -> Job:
        """The job a cron firing with a repeat starts: the delay, period and repeat, without the cron entry."""
        properties = {k: v for k, v in self.message.properties.items() if k not in (DELIVERIES, "AMQ_SCHEDULED_CRON")}
        message = attrs.evolve(
            self.message, properties=properties, message_id=f"{self.job_id}:run{self.deliveries + 1}"
        )
        return Job(message, self.delay, self.period, self.repeat)

    def waiting_message(self) -> Message:
        """What waits in the scheduler for the next firing: the job's message with its state (cron entry, delay,
        period, repeats left, deliveries made) in its properties, so the store keeps it across a restart and the
        management topic's BROWSE shows it as sent."""
        properties = dict(self.message.properties)
        if self.cron is not None:
            properties["AMQ_SCHEDULED_CRON"] = self.cron
        if self.deliveries and self.cron is None:
            properties.pop("AMQ_SCHEDULED_DELAY", None)  # a repeat waits a period, not the delay again
        if self.period > 0 or "AMQ_SCHEDULED_PERIOD" in properties:
            properties["AMQ_SCHEDULED_PERIOD"] = int(round(self.period * 1000))
        if self.repeat != 0 or "AMQ_SCHEDULED_REPEAT" in properties:
            properties["AMQ_SCHEDULED_REPEAT"] = self.repeat
        properties[DELIVERIES] = self.deliveries
        return attrs.evolve(self.message, properties=properties)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _cron(properties: Mapping[str, object]) -> str | None:
    cron = properties.get("AMQ_SCHEDULED_CRON")
    return cron if isinstance(cron, str) and cron.strip() else None


def read_job(message: Message) -> Job | None:
    """The job a message's properties ask for, or None for a plain send (no cron entry, no positive delay or
    period: as ActiveMQ's ``SchedulerBroker``, a repeat alone schedules nothing)."""
    properties = message.properties
    delay = _number(properties.get("AMQ_SCHEDULED_DELAY")) or 0.0
    period = _number(properties.get("AMQ_SCHEDULED_PERIOD")) or 0.0
    cron = _cron(properties)
    if cron is None and delay <= 0 and period <= 0:
        return None
    if cron is not None:
        parse_cron(cron)  # refused at the send, as ActiveMQ refuses a cron entry it cannot parse
    repeat = _number(properties.get("AMQ_SCHEDULED_REPEAT")) or 0.0
    return Job(message, max(delay, 0.0) / 1000.0, max(period, 0.0) / 1000.0, int(repeat), cron=cron)


def pending_job(message: Message) -> Job | None:
    """The job a waiting message carries (see :meth:`Job.waiting_message`), or None for a delivery."""
    properties = message.properties
    if not properties or DELIVERIES not in properties:
        return None
    delay = _number(properties.get("AMQ_SCHEDULED_DELAY")) or 0.0
    period = _number(properties.get("AMQ_SCHEDULED_PERIOD")) or 0.0
    repeat = int(_number(properties.get("AMQ_SCHEDULED_REPEAT")) or 0)
    deliveries = int(_number(properties.get(DELIVERIES)) or 0)
    return Job(message, delay / 1000.0, period / 1000.0, repeat, deliveries, _cron(properties))


def browse_copy(message: Message, job_id: str, reply_to: Destination, n: int) -> Message:
    """What the management topic's BROWSE sends for one scheduled message: the message as it waits (its
    ``AMQ_SCHEDULED_*`` properties included) with ``scheduledJobId``, to the request's reply_to."""
    properties = {k: v for k, v in message.properties.items() if k != DELIVERIES}
    properties["scheduledJobId"] = job_id
    return attrs.evolve(
        message, properties=properties, destination=reply_to, message_id=f"{message.message_id}:browse{n}"
    )


def job_start(now: float) -> float:
    """ActiveMQ's start of a job scheduled at ``now``: the next half second (``((ms + 500) / 500) * 500``)."""
    return (int(now * 1000) + 500) // 500 * 500 / 1000.0


def first_due(now: float, job: Job, zone: tzinfo | None = None) -> float:
    """When a job sent at ``now`` (seconds) first fires: its start (or its cron entry's next time after it), plus
    the delay or else the period."""
    start = job_start(now)
    if job.cron is not None:
        start = parse_cron(job.cron).next_after(start, zone or UTC)
    return start + (job.delay if job.delay > 0 else job.period)


def next_cron(due: float, job: Job, zone: tzinfo | None = None) -> float:
    """A cron job's next firing after the one at ``due``."""
    assert job.cron is not None
    return parse_cron(job.cron).next_after(due, zone or UTC)
