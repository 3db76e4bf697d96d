"""Retry policies: when a failed message is tried again, and when it is given up to a dead-letter destination.

Two families exist (see ``spec/retry-policies.md``): ActiveMQ's formula-based :class:`RedeliveryPolicy` and
RocketMQ's table-based :class:`DelayLevelPolicy`. Both satisfy :class:`RetryPolicy`, so the broker core, the
tests and the ``redelivery-plan`` CLI can use either one without knowing which.

Everything here is pure: no clock, no global random. Randomness (collision avoidance) comes from a
``random.Random`` the caller passes in, so a seeded run replays exactly.
"""

from __future__ import annotations

from ._activemq import DEFAULT_DEAD_LETTER_QUEUE, RedeliveryPolicy, RedeliveryPolicyMap
from ._plan import PlanStep, RetryPolicy, format_duration, format_plan
from ._rocketmq import ROCKETMQ_DELAY_LEVELS, DelayLevelPolicy, parse_delay_levels

__all__ = [  # the public names of the retry policies, whichever module holds them
    "DEFAULT_DEAD_LETTER_QUEUE",
    "ROCKETMQ_DELAY_LEVELS",
    "DelayLevelPolicy",
    "PlanStep",
    "RedeliveryPolicy",
    "RedeliveryPolicyMap",
    "RetryPolicy",
    "format_duration",
    "format_plan",
    "parse_delay_levels",
]
