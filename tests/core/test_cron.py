"""Cron entries of ``AMQ_SCHEDULED_CRON`` (ActiveMQ's CronParser): the fields, their syntax, and the next time."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest

from minibroker._core.cron import parse_cron
from minibroker.errors import InvalidConfiguration

NEW_YEAR = dt.datetime(2026, 1, 1, tzinfo=dt.UTC).timestamp()  # a Thursday, 00:00 UTC


def nexts(expression: str, count: int = 3, start: float = NEW_YEAR, zone: str = "UTC") -> list[str]:
    out, t = [], start
    cron = parse_cron(expression)
    for _ in range(count):
        t = cron.next_after(t, ZoneInfo(zone))
        out.append(dt.datetime.fromtimestamp(t, ZoneInfo(zone)).strftime("%a %m-%d %H:%M"))
    return out


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("* * * * *", ["Thu 01-01 00:01", "Thu 01-01 00:02", "Thu 01-01 00:03"]),
        ("0 2 * * *", ["Thu 01-01 02:00", "Fri 01-02 02:00", "Sat 01-03 02:00"]),
        ("*/20 9 * * *", ["Thu 01-01 09:00", "Thu 01-01 09:20", "Thu 01-01 09:40"]),
        ("30 8-17/4 * * *", ["Thu 01-01 08:30", "Thu 01-01 12:30", "Thu 01-01 16:30"]),
        ("0 0 * * 1,3", ["Mon 01-05 00:00", "Wed 01-07 00:00", "Mon 01-12 00:00"]),
        ("0 0 * * 7", ["Sun 01-04 00:00", "Sun 01-11 00:00", "Sun 01-18 00:00"]),  # 7 is Sunday, as 0
        ("0 12 15 * 5", ["Fri 01-02 12:00", "Fri 01-09 12:00", "Thu 01-15 12:00"]),  # either day field
        ("0 0 29 2 *", ["Tue 02-29 00:00"]),  # 2028: the next 29 February
    ],
)
def test_next_times(expression: str, expected: list[str]) -> None:
    assert nexts(expression, len(expected)) == expected


def test_a_time_zone() -> None:
    assert nexts("0 2 * * *", 1, zone="Europe/Paris") == ["Thu 01-01 02:00"]
    assert parse_cron("0 2 * * *").next_after(NEW_YEAR, ZoneInfo("Europe/Paris")) == NEW_YEAR + 3600


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("* * * *", "expected 5 fields"),
        ("60 * * * *", "outside 0-59"),
        ("* 24 * * *", "outside 0-23"),
        ("* * 0 * *", "outside 1-31"),
        ("* * * 13 *", "outside 1-12"),
        ("*/0 * * * *", "at least 1"),
        ("a * * * *", "not a number"),
        ("5-2 * * * *", "outside"),
        ("0 0 31 2 *", "never matches"),
    ],
)
def test_mistakes_are_named(expression: str, problem: str) -> None:
    with pytest.raises(InvalidConfiguration, match=problem):
        parse_cron(expression).next_after(NEW_YEAR)
