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

``AMQ_SCHEDULED_CRON`` is not built yet (refused by :mod:`minibroker.features`).
"""

from __future__ import annotations

import attrs

from ..message import Message

__all__ = ["SCHEDULE_PROPERTIES", "Job", "first_due", "pending_job", "read_job"]

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
    next one (negative: forever), ``deliveries`` made so far."""

    message: Message
    delay: float
    period: float
    repeat: int
    deliveries: int = 0

    @property
    def job_id(self) -> str:
        return self.message.message_id

    @property
    def repeats(self) -> bool:
        """More than one delivery: each gets a message id of its own, as ActiveMQ gives repeated jobs."""
        return self.period > 0 and (self.repeat != 0 or self.deliveries > 0)

    def delivery(self) -> Message:
        """The message this firing delivers: without the scheduling properties, ``scheduledJobId`` naming the job,
        and (a repeating job) a new message id per delivery."""
        properties = {k: v for k, v in self.message.properties.items() if k not in SCHEDULE_PROPERTIES}
        properties["scheduledJobId"] = self.job_id
        message_id = f"{self.job_id}:{self.deliveries + 1}" if self.repeats else self.job_id
        return attrs.evolve(self.message, properties=properties, message_id=message_id)

    def after_firing(self) -> Job | None:
        """The job once this firing is done, or None when it has fired its last."""
        if self.repeat == 0 or self.period <= 0:
            return None
        return attrs.evolve(self, repeat=self.repeat - 1 if self.repeat > 0 else -1, deliveries=self.deliveries + 1)

    def waiting_message(self) -> Message:
        """What waits in the scheduler for the next firing: a job that fires again carries its state (period,
        repeats left, deliveries made) in its properties, so the store keeps it across a restart; a job firing its
        last is simply that delivery."""
        if self.repeat == 0 or self.period <= 0:
            return self.delivery()
        properties = {k: v for k, v in self.message.properties.items() if k != "AMQ_SCHEDULED_DELAY"}
        properties["AMQ_SCHEDULED_PERIOD"] = int(round(self.period * 1000))
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


def read_job(message: Message) -> Job | None:
    """The job a message's properties ask for, or None for a plain send (no positive delay or period)."""
    properties = message.properties
    delay = _number(properties.get("AMQ_SCHEDULED_DELAY")) or 0.0
    period = _number(properties.get("AMQ_SCHEDULED_PERIOD")) or 0.0
    if delay <= 0 and period <= 0:
        return None
    repeat = _number(properties.get("AMQ_SCHEDULED_REPEAT")) or 0.0
    return Job(message, max(delay, 0.0) / 1000.0, max(period, 0.0) / 1000.0, int(repeat))


def pending_job(message: Message) -> Job | None:
    """The repeating job a waiting message carries (see :meth:`Job.waiting_message`), or None for a delivery."""
    properties = message.properties
    if not properties or DELIVERIES not in properties:
        return None
    period = _number(properties.get("AMQ_SCHEDULED_PERIOD")) or 0.0
    repeat = int(_number(properties.get("AMQ_SCHEDULED_REPEAT")) or 0)
    deliveries = int(_number(properties.get(DELIVERIES)) or 0)
    return Job(message, 0.0, period / 1000.0, repeat, deliveries)


def first_due(now: float, job: Job) -> float:
    """When a job sent at ``now`` (seconds) first fires: ActiveMQ's half-second start, plus the delay or period."""
    start_ms = (int(now * 1000) + 500) // 500 * 500
    return start_ms / 1000.0 + (job.delay if job.delay > 0 else job.period)
