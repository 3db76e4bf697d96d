"""Cron expressions for ``AMQ_SCHEDULED_CRON`` (ActiveMQ's ``CronParser``): five fields, minute hour day-of-month
month day-of-week, each ``*``, a number, a range ``a-b``, a step ``*/n`` or ``a-b/n``, or a comma list of those;
day-of-week 0-7 with 0 and 7 both Sunday. As in cron, when both day fields are restricted a day matching either
is taken. Times are whole minutes in the scheduler's time zone (UTC unless the broker says otherwise).

Table-driven: each field is parsed against its row of :data:`FIELDS` into the set of values it allows, and the next
time is found minute by minute over those sets (skipping whole days, hours that cannot match).
"""

from __future__ import annotations

import datetime as _dt
from zoneinfo import ZoneInfo

import attrs

from ..errors import InvalidConfiguration

__all__ = ["CronSchedule", "parse_cron"]

#: name, lowest, highest value of each field, in order
FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7))

UTC = ZoneInfo("UTC")


def _field(text: str, name: str, low: int, high: int, expression: str) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        step = 1
        if "/" in part:
            part, _, step_text = part.partition("/")
            step = _number(step_text, name, expression)
            if step < 1:
                raise _error(expression, f"{name}: a step must be at least 1")
        if part == "*":
            first, last = low, high
        elif "-" in part:
            a, _, b = part.partition("-")
            first, last = _number(a, name, expression), _number(b, name, expression)
        else:
            first = _number(part, name, expression)
            last = high if step > 1 else first
        if not low <= first <= last <= high:
            raise _error(expression, f"{name}: {part!r} is outside {low}-{high}")
        values.update(range(first, last + 1, step))
    return frozenset(values)


def _number(text: str, name: str, expression: str) -> int:
    if not text.isdigit():
        raise _error(expression, f"{name}: {text!r} is not a number")
    return int(text)


def _error(expression: str, problem: str) -> InvalidConfiguration:
    return InvalidConfiguration(f"invalid cron entry {expression!r}: {problem}", option="AMQ_SCHEDULED_CRON")


@attrs.frozen(slots=True)
class CronSchedule:
    """A parsed cron entry: the allowed values of each field."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday ... 6 = Saturday
    any_day: bool
    any_weekday: bool

    def _day_matches(self, day: _dt.datetime) -> bool:
        if day.month not in self.months:
            return False
        by_date = day.day in self.days
        by_weekday = (day.isoweekday() % 7) in self.weekdays
        if self.any_day and self.any_weekday:
            return True
        if self.any_day:
            return by_weekday
        if self.any_weekday:
            return by_date
        return by_date or by_weekday

    def next_after(self, when: float, zone: _dt.tzinfo = UTC) -> float:
        """The first matching whole minute strictly after ``when`` (seconds since the epoch)."""
        t = _dt.datetime.fromtimestamp(when, zone).replace(second=0, microsecond=0) + _dt.timedelta(minutes=1)
        for _ in range(5 * 366 * 24):  # at most a few years of hours: a 31 February never matches
            if not self._day_matches(t):
                t = (t + _dt.timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if t.hour not in self.hours:
                t = (t + _dt.timedelta(hours=1)).replace(minute=0)
                continue
            later = [m for m in sorted(self.minutes) if m >= t.minute]
            if not later:
                t = (t + _dt.timedelta(hours=1)).replace(minute=0)
                continue
            return t.replace(minute=later[0]).timestamp()
        raise _error(self.expression, "it never matches a date")


def parse_cron(expression: str) -> CronSchedule:
    """A :class:`CronSchedule`, or :class:`~minibroker.errors.InvalidConfiguration` naming what is wrong."""
    parts = expression.split()
    if len(parts) != 5:
        raise _error(expression, f"expected 5 fields (minute hour day-of-month month day-of-week), not {len(parts)}")
    sets = [_field(text, *row, expression) for text, row in zip(parts, FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in sets[4])
    return CronSchedule(expression, sets[0], sets[1], sets[2], sets[3], weekdays, parts[2] == "*", parts[4] == "*")
