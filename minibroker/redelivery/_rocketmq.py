"""RocketMQ's table-based consumer retry: delays come from ``messageDelayLevel``, not a formula."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable

import attrs

from minibroker._java.values import is_number
from minibroker.errors import InvalidConfiguration

from ._plan import PlanStep

#: RocketMQ's default ``messageDelayLevel`` table: level 1 = 1 s … level 18 = 2 h.
ROCKETMQ_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

# RocketMQ's consumer retry starts at level 3 (10 s) and moves one level per earlier retry.
_ROCKETMQ_FIRST_RETRY_LEVEL = 3

_LEVEL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_LEVEL_TOKEN = re.compile(r"([0-9]+)([smhd])")


def parse_delay_levels(text: str) -> tuple[float, ...]:
    """Parse RocketMQ's ``messageDelayLevel`` string ("1s 5s … 2h") into seconds per level (level 1 first)."""
    levels: list[float] = []
    for token in text.split():
        match = _LEVEL_TOKEN.fullmatch(token)
        if match is None:
            raise InvalidConfiguration(
                f"delay level {token!r} in {text!r}: expected a whole number and a unit s, m, h or d",
                option="messageDelayLevel",
                value=text,
            )
        levels.append(float(int(match.group(1)) * _LEVEL_UNITS[match.group(2)]))
    if not levels:
        raise InvalidConfiguration("the delay level table is empty", option="messageDelayLevel", value=text)
    return tuple(levels)


def _to_levels(value: str | Iterable[float]) -> tuple[float, ...]:
    if isinstance(value, str):
        return parse_delay_levels(value)
    levels = tuple(value)
    for level in levels:
        if not is_number(level) or not math.isfinite(level) or level < 0:
            raise InvalidConfiguration(
                f"delay level {level!r}: expected a number of seconds >= 0", option="levels", value=level
            )
    if not levels:
        raise InvalidConfiguration("the delay level table is empty", option="levels", value=levels)
    return tuple(float(level) for level in levels)


@attrs.frozen
class DelayLevelPolicy:
    """RocketMQ-style consumer retry: delays come from a level table, not a formula.

    Retry number k (k ≥ 1, so ``reconsume_times = k - 1``) waits for level ``3 + reconsume_times``; levels
    past the table use its last entry, as RocketMQ's scheduler does. After ``max_reconsume_times`` retries the
    message goes to ``%DLQ%<group>``. ``levels`` accepts RocketMQ's string form or seconds per level.
    """

    levels: tuple[float, ...] = attrs.field(default=ROCKETMQ_DELAY_LEVELS, converter=_to_levels)
    max_reconsume_times: int = 16

    def __attrs_post_init__(self) -> None:
        maximum = self.max_reconsume_times
        if isinstance(maximum, bool) or not isinstance(maximum, int) or maximum < 0:
            raise InvalidConfiguration(
                f"max_reconsume_times={maximum!r}: expected an integer >= 0",
                option="max_reconsume_times",
                value=maximum,
            )

    @staticmethod
    def retry_destination(group: str) -> str:
        """The per-consumer-group destination retried messages wait in."""
        return f"%RETRY%{group}"

    @staticmethod
    def dead_letter_destination(group: str) -> str:
        """The per-consumer-group dead-letter destination."""
        return f"%DLQ%{group}"

    @staticmethod
    def level_for(reconsume_times: int) -> int:
        """The delay level RocketMQ picks for a message that has been retried ``reconsume_times`` times."""
        return _ROCKETMQ_FIRST_RETRY_LEVEL + reconsume_times

    def delay_of_level(self, level: int) -> float:
        """Seconds for a delay level (1-based); levels past the table clamp to the last one."""
        if level < 1:
            raise ValueError(f"delay level must be >= 1, got {level} (-1 means: straight to the DLQ)")
        return self.levels[min(level, len(self.levels)) - 1]

    def delay_for(self, redelivery_counter: int, rng: random.Random | None = None) -> float:
        """Seconds before retry number ``redelivery_counter`` (≥ 1); ``rng`` is unused (levels are fixed)."""
        if redelivery_counter < 1:
            raise ValueError(f"redelivery_counter must be >= 1, got {redelivery_counter}")
        return self.delay_of_level(self.level_for(redelivery_counter - 1))

    def exceeded(self, redelivery_counter: int) -> bool:
        """True once more retries than ``max_reconsume_times`` would be needed: dead-letter instead."""
        return redelivery_counter > self.max_reconsume_times

    def explain(
        self,
        rng: random.Random | None = None,
        dead_letter_queue: str | None = None,
        limit: int = 20,
        *,
        group: str = "<group>",
    ) -> tuple[PlanStep, ...]:
        """The whole schedule, one row per delivery, ending in ``%DLQ%<group>`` (or ``dead_letter_queue``).

        The schedule is always finite, so ``limit`` is accepted for interface compatibility only.
        """
        del rng, limit
        dead_letter = self.dead_letter_destination(group) if dead_letter_queue is None else dead_letter_queue
        attempts = self.max_reconsume_times + 1
        first_dead_letter = dead_letter if attempts == 1 else None
        steps = [PlanStep(attempt=1, delay=0.0, elapsed=0.0, dead_letter=first_dead_letter)]
        elapsed_micros = 0
        for retry in range(1, attempts):
            level = self.level_for(retry - 1)
            delay = self.delay_of_level(level)
            elapsed_micros += round(delay * 1_000_000)
            steps.append(
                PlanStep(
                    attempt=retry + 1,
                    delay=delay,
                    elapsed=elapsed_micros / 1_000_000,
                    dead_letter=dead_letter if retry + 1 == attempts else None,
                    note=f"level {level} via {self.retry_destination(group)}",
                )
            )
        return tuple(steps)

    def retry_properties(
        self,
        original_destination: str,
        original_message_id: str,
        reconsume_times: int,
        level: int | None = None,
        *,
        group: str,
    ) -> dict[str, str | int]:
        """Properties of the copy sent back for retry, as RocketMQ's broker sets them.

        ``reconsume_times`` counts earlier retries (0 for the first failure); the copy carries it incremented.
        ``level`` None or 0 lets the broker choose ``3 + reconsume_times``. ``REAL_TOPIC`` is where the copy
        lands after its delay: the group's retry destination.
        """
        if level is None or level == 0:
            level = self.level_for(reconsume_times)
        if level < 0:
            raise ValueError(f"delay level {level} sends the message to the DLQ; it has no retry properties")
        return {
            "RETRY_TOPIC": original_destination,
            "ORIGIN_MESSAGE_ID": original_message_id,
            "REAL_TOPIC": self.retry_destination(group),
            "REAL_QID": 0,
            "DELAY": level,
            "reconsumeTimes": reconsume_times + 1,
        }
