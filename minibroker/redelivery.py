"""Retry policies: when a failed message is tried again, and when it is given up to a dead-letter destination.

Two families exist (see ``spec/retry-policies.md``): ActiveMQ's formula-based :class:`RedeliveryPolicy` and
RocketMQ's table-based :class:`DelayLevelPolicy`. Both satisfy :class:`RetryPolicy`, so the broker core, the
tests and the ``redelivery-plan`` CLI can use either one without knowing which.

Everything here is pure: no clock, no global random. Randomness (collision avoidance) comes from a
``random.Random`` the caller passes in, so a seeded run replays exactly.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from minibroker.destination_map import DESTINATION_PREFIXES, DestinationMap
from minibroker.errors import InvalidConfiguration

__all__ = [
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

#: ActiveMQ's shared dead-letter queue (``SharedDeadLetterStrategy``).
DEFAULT_DEAD_LETTER_QUEUE = "ActiveMQ.DLQ"

#: RocketMQ's default ``messageDelayLevel`` table: level 1 = 1 s … level 18 = 2 h.
ROCKETMQ_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_JAVA_LONG_MAX = 2**63 - 1
_JAVA_LONG_MIN = -(2**63)

# RocketMQ's consumer retry starts at level 3 (10 s) and moves one level per earlier retry.
_ROCKETMQ_FIRST_RETRY_LEVEL = 3


# ----------------------------------------------------------------------------------------------------
# The schedule a policy produces, and how it is shown to people
# ----------------------------------------------------------------------------------------------------


@attrs.frozen
class PlanStep:
    """One delivery attempt in a policy's schedule; the whole tuple shows when and where a message gives up.

    ``attempt`` 1 is the first delivery; ``delay`` is the wait before this attempt and ``elapsed`` the time
    since the first delivery, both in seconds. ``dead_letter`` is set on the last row only: where the message
    goes if that attempt fails too. ``continues`` marks a last row that is not the end (a policy that never
    gives up). ``note`` adds policy-specific detail (the delay level).
    """

    attempt: int
    delay: float
    elapsed: float
    dead_letter: str | None = None
    continues: bool = False
    note: str = ""


def format_duration(seconds: float) -> str:
    """Render a delay with its unit ("1 ms", "1.5 s", "2 min 5 s", "2 h"): 1 ms must not pass for 1 s."""
    if not math.isfinite(seconds):
        return str(seconds)
    if seconds < 0:
        return "-" + format_duration(-seconds)
    micros = round(seconds * 1_000_000)
    if micros < 1_000_000:
        if micros % 1000 == 0:
            return f"{micros // 1000} ms"
        return f"{micros / 1000:.3f}".rstrip("0") + " ms"
    if micros < 60_000_000:
        text = f"{micros / 1_000_000:.6f}".rstrip("0")
        return (text + "0" if text.endswith(".") else text) + " s"
    whole, micro_rest = divmod(micros, 1_000_000)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{value} {unit}" for value, unit in ((days, "d"), (hours, "h"), (minutes, "min")) if value]
    if micro_rest:
        parts.append(f"{secs}.{micro_rest:06d}".rstrip("0") + " s")
    elif secs:
        parts.append(f"{secs} s")
    return " ".join(parts)


def format_plan(steps: Iterable[PlanStep]) -> str:
    """Render a schedule from ``explain()`` as a table, ending with a one-line summary of the outcome."""
    rows = list(steps)
    if not rows:
        return "(no deliveries)\n"
    with_notes = any(step.note for step in rows)
    header = ["attempt", "delay", "elapsed", "if it fails"] + (["note"] if with_notes else [])
    table: list[list[str]] = [header]
    for index, step in enumerate(rows):
        if step.dead_letter is not None:
            outcome = f"dead-letter to {step.dead_letter}"
        elif step.continues or index < len(rows) - 1:
            outcome = "redeliver"
        else:
            outcome = "(end of listing)"
        cells = [
            str(step.attempt),
            "-" if step.attempt == 1 else format_duration(step.delay),
            format_duration(step.elapsed),
            outcome,
        ]
        table.append([*cells, step.note] if with_notes else cells)
    widths = [max(len(row[col]) for row in table) for col in range(len(header))]
    lines = []
    for row in table:
        cells = [row[0].rjust(widths[0])]
        cells += [cell.ljust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells).rstrip())
    last = rows[-1]
    if last.dead_letter is not None:
        lines.append(
            f"{last.attempt} deliveries within {format_duration(last.elapsed)}, then {last.dead_letter}"
        )
    elif last.continues:
        lines.append(f"no maximum: redelivered forever (first {len(rows)} attempts shown)")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------------
# The common interface
# ----------------------------------------------------------------------------------------------------


@runtime_checkable
class RetryPolicy(Protocol):
    """What the broker asks of any retry policy: how long to wait, whether to give up, and the whole plan."""

    def delay_for(self, redelivery_counter: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before redelivery number ``redelivery_counter`` (1 = the first redelivery)."""
        ...

    def exceeded(self, redelivery_counter: int) -> bool:
        """True when a message whose counter has reached ``redelivery_counter`` must be dead-lettered."""
        ...

    def explain(
        self, rng: random.Random | None = None, dead_letter_queue: str = ..., limit: int = 20
    ) -> tuple[PlanStep, ...]:
        """One row per delivery attempt, ending where the message goes."""
        ...


# ----------------------------------------------------------------------------------------------------
# ActiveMQ RedeliveryPolicy
# ----------------------------------------------------------------------------------------------------


def _fail(option: str, value: object, reason: str) -> InvalidConfiguration:
    return InvalidConfiguration(f"redelivery policy {option}={value!r}: {reason}", option=option, value=value)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _seconds_to_ms(option: str, seconds: object) -> int:
    """ActiveMQ keeps delays as whole milliseconds (Java ``long``); refuse anything it could not represent."""
    if not _is_number(seconds):
        raise _fail(option, seconds, "expected a number of seconds")
    assert isinstance(seconds, int | float)
    if not math.isfinite(seconds):
        raise _fail(option, seconds, "expected a finite number of seconds")
    if seconds < 0:
        raise _fail(option, seconds, "a delay cannot be negative")
    millis = round(seconds * 1000)
    if abs(millis - seconds * 1000) > 1e-6 * max(1.0, abs(seconds * 1000)):
        raise _fail(option, seconds, "ActiveMQ counts delays in whole milliseconds")
    if millis > _JAVA_LONG_MAX:
        raise _fail(option, seconds, "too large for ActiveMQ (a Java long of milliseconds)")
    return millis


def _java_long(value: float) -> int:
    """Java's ``(long) double`` cast: truncate toward zero, saturate at the long range, NaN becomes 0."""
    if math.isnan(value):
        return 0
    if value >= _JAVA_LONG_MAX:
        return _JAVA_LONG_MAX
    if value <= _JAVA_LONG_MIN:
        return _JAVA_LONG_MIN
    return int(value)


def _java_double(value: float) -> str:
    """Java's ``Double.toString``: shortest digits, plain between 1e-3 and 1e7, else ``d.dddE±n``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    from decimal import Decimal  # here, not at import: only ActiveMQ-style policy strings need it

    _, digit_tuple, exponent = Decimal(repr(magnitude)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    point = len(digits) + exponent  # digits before the decimal point
    if 1e-3 <= magnitude < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole = digits[:point].ljust(point, "0")
        return f"{sign}{whole}.{digits[point:] or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def _qualified_destination(name: str) -> str:
    """The name as ActiveMQ prints a destination (``queue://X``); plain names are queues."""
    if any(name.startswith(prefix) for prefix in DESTINATION_PREFIXES):
        return name
    return "queue://" + name


@attrs.frozen
class RedeliveryPolicy:
    """ActiveMQ Classic's client ``RedeliveryPolicy``, with seconds instead of milliseconds.

    Defaults are ActiveMQ's. ``maximum_redeliveries = -1`` never gives up; ``maximum_redelivery_delay = None``
    is ActiveMQ's -1 (no cap). Delays must be whole milliseconds because ActiveMQ computes in Java ``long``
    milliseconds, truncating after each multiplication; keeping that arithmetic makes schedules match a real
    broker to the millisecond (0.1 s x 2 is exactly 0.2 s).
    """

    maximum_redeliveries: int = 6
    initial_redelivery_delay: float = 1.0
    redelivery_delay: float = 1.0
    use_exponential_backoff: bool = False
    backoff_multiplier: float = 5.0
    maximum_redelivery_delay: float | None = None
    use_collision_avoidance: bool = False
    collision_avoidance_factor: float = 0.15
    pre_dispatch_check: bool = True
    destination: str | None = None

    def __attrs_post_init__(self) -> None:
        maximum = self.maximum_redeliveries
        if not isinstance(maximum, int) or isinstance(maximum, bool):
            raise _fail("maximum_redeliveries", maximum, "expected an integer")
        if maximum < -1:
            raise _fail("maximum_redeliveries", maximum, "must be -1 (unlimited) or >= 0")
        self._initial_ms()
        self._redelivery_ms()
        self._cap_ms()
        for flag in ("use_exponential_backoff", "use_collision_avoidance", "pre_dispatch_check"):
            if not isinstance(getattr(self, flag), bool):
                raise _fail(flag, getattr(self, flag), "expected True or False")
        multiplier = self.backoff_multiplier
        if not _is_number(multiplier) or not math.isfinite(multiplier) or multiplier < 0:
            raise _fail("backoff_multiplier", multiplier, "expected a finite number >= 0")
        factor = self.collision_avoidance_factor
        if not _is_number(factor) or not 0 <= factor <= 1:
            raise _fail("collision_avoidance_factor", factor, "expected a number between 0 and 1")
        if self.destination is not None and (not isinstance(self.destination, str) or not self.destination):
            raise _fail("destination", self.destination, "expected a destination name or None")

    # -- millisecond views (what ActiveMQ computes with) --------------------------------------------

    def _initial_ms(self) -> int:
        return _seconds_to_ms("initial_redelivery_delay", self.initial_redelivery_delay)

    def _redelivery_ms(self) -> int:
        return _seconds_to_ms("redelivery_delay", self.redelivery_delay)

    def _cap_ms(self) -> int | None:
        if self.maximum_redelivery_delay is None:
            return None
        return _seconds_to_ms("maximum_redelivery_delay", self.maximum_redelivery_delay)

    def _next_ms(self, previous: int, rng: random.Random | None) -> int:
        """``getNextRedeliveryDelay`` of ActiveMQ 5.10+, in Java long arithmetic."""
        base = self._redelivery_ms()
        delay = base
        if previous > 0 and self.use_exponential_backoff and self.backoff_multiplier > 1:
            delay = _java_long(previous * self.backoff_multiplier)
            cap = self._cap_ms()
            if cap is not None and delay > cap:
                delay = max(cap, base)
        if self.use_collision_avoidance and rng is not None:
            # First draw picks the direction, the second how far (as ActiveMQ does).
            factor = self.collision_avoidance_factor
            variance = (factor if rng.random() < 0.5 else -factor) * rng.random()
            delay = _java_long(delay + delay * variance)
        return delay

    def _delay_ms(self, redelivery_counter: int, rng: random.Random | None) -> int:
        if isinstance(redelivery_counter, bool) or not isinstance(redelivery_counter, int):
            raise TypeError(f"redelivery_counter must be an int, got {redelivery_counter!r}")
        if redelivery_counter < 1:
            raise ValueError(f"redelivery_counter must be >= 1 (1 = first redelivery): {redelivery_counter}")
        jitter = self.use_collision_avoidance and rng is not None
        delay = self._initial_ms()
        for _ in range(redelivery_counter - 1):
            following = self._next_ms(delay, rng)
            if following == delay and not jitter:
                break  # a fixed point: every later step gives the same value
            delay = following
        return delay

    # -- RetryPolicy --------------------------------------------------------------------------------

    def next_delay(self, previous: float, rng: random.Random | None = None) -> float:
        """The delay after one of ``previous`` seconds (ActiveMQ ``getNextRedeliveryDelay``).

        ``rng`` drives collision avoidance; without one the nominal (un-jittered) delay is returned.
        """
        if not _is_number(previous) or not math.isfinite(previous):
            raise ValueError(f"previous must be a finite number of seconds, got {previous!r}")
        return self._next_ms(_java_long(round(previous * 1000)), rng) / 1000

    def delay_for(self, redelivery_counter: int, rng: random.Random | None = None) -> float:
        """Seconds before redelivery k = ``redelivery_counter`` (≥ 1): the initial delay, then k-1 ``next``.

        This is what ActiveMQ 5.17.3+ clients compute on each rollback, so each call draws its own jitter.
        """
        return self._delay_ms(redelivery_counter, rng) / 1000

    def exceeded(self, redelivery_counter: int) -> bool:
        """True when the counter (after incrementing) is past the maximum: the message is poison."""
        return self.maximum_redeliveries != -1 and redelivery_counter > self.maximum_redeliveries

    def explain(
        self,
        rng: random.Random | None = None,
        dead_letter_queue: str = DEFAULT_DEAD_LETTER_QUEUE,
        limit: int = 20,
    ) -> tuple[PlanStep, ...]:
        """The whole schedule, one row per delivery; ``limit`` rows when the policy never gives up.

        Without ``rng`` the nominal delays are listed; with one, each row is jittered once in turn.
        """
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        unlimited = self.maximum_redeliveries == -1
        attempts = limit if unlimited else self.maximum_redeliveries + 1
        steps: list[PlanStep] = []
        delay = 0
        elapsed = 0
        for attempt in range(1, attempts + 1):
            if attempt == 2:
                delay = self._initial_ms()
            elif attempt > 2:
                delay = self._next_ms(delay, rng)
            elapsed += delay
            last = attempt == attempts
            steps.append(
                PlanStep(
                    attempt=attempt,
                    delay=delay / 1000,
                    elapsed=elapsed / 1000,
                    dead_letter=dead_letter_queue if last and not unlimited else None,
                    continues=last and unlimited,
                )
            )
        return tuple(steps)

    # -- ActiveMQ names and strings -----------------------------------------------------------------

    def activemq_string(self) -> str:
        """``RedeliveryPolicy.toString()`` as it appears in a DLQ message's ``dlqDeliveryFailureCause``."""
        cap = self._cap_ms()
        destination = "null" if self.destination is None else _qualified_destination(self.destination)
        fields = [
            ("destination", destination),
            ("collisionAvoidanceFactor", _java_double(self.collision_avoidance_factor)),
            ("maximumRedeliveries", str(self.maximum_redeliveries)),
            ("maximumRedeliveryDelay", str(-1 if cap is None else cap)),
            ("initialRedeliveryDelay", str(self._initial_ms())),
            ("useCollisionAvoidance", _java_bool(self.use_collision_avoidance)),
            ("useExponentialBackOff", _java_bool(self.use_exponential_backoff)),
            ("backOffMultiplier", _java_double(self.backoff_multiplier)),
            ("redeliveryDelay", str(self._redelivery_ms())),
            ("preDispatchCheck", _java_bool(self.pre_dispatch_check)),
        ]
        return "RedeliveryPolicy {" + ", ".join(f"{name} = {value}" for name, value in fields) + "}"

    def to_activemq(self) -> dict[str, object]:
        """The policy under ActiveMQ's names, delays in milliseconds (``from_activemq`` inverts it)."""
        cap = self._cap_ms()
        options: dict[str, object] = {
            "maximumRedeliveries": self.maximum_redeliveries,
            "initialRedeliveryDelay": self._initial_ms(),
            "redeliveryDelay": self._redelivery_ms(),
            "useExponentialBackOff": self.use_exponential_backoff,
            "backOffMultiplier": float(self.backoff_multiplier),
            "maximumRedeliveryDelay": -1 if cap is None else cap,
            "useCollisionAvoidance": self.use_collision_avoidance,
            "collisionAvoidanceFactor": float(self.collision_avoidance_factor),
            "preDispatchCheck": self.pre_dispatch_check,
        }
        if self.destination is not None:
            options["destination"] = self.destination
        return options

    @classmethod
    def from_activemq(cls, options: Mapping[str, object]) -> RedeliveryPolicy:
        """Build from ActiveMQ property names (milliseconds), as found in configs and connection URIs.

        Names may carry a ``redeliveryPolicy.`` or ``jms.redeliveryPolicy.`` prefix; values may be strings
        (``"true"``, ``"1000"``) or numbers. An unknown name raises :class:`InvalidConfiguration` naming it.
        """
        changes: dict[str, Any] = {}
        for key, raw in options.items():
            name = _strip_policy_prefix(key)
            option = _ACTIVEMQ_OPTIONS.get(name)
            if option is None:
                known = ", ".join(sorted(_ACTIVEMQ_OPTIONS))
                raise InvalidConfiguration(
                    f"unknown redelivery policy option {key!r} (known: {known})",
                    option=key,
                    value=raw,
                )
            attribute, parse = option
            changes[attribute] = parse(key, raw)
        return attrs.evolve(cls(), **changes)

    @classmethod
    def from_uri_options(cls, query: str) -> RedeliveryPolicy:
        """Build from a connection URI or its query (``jms.redeliveryPolicy.maximumRedeliveries=3&…``).

        Only ``jms.redeliveryPolicy.*`` and ``redeliveryPolicy.*`` options are read: a URI carries others too.
        """
        from urllib.parse import unquote_plus  # only URI options need it

        _, _, tail = query.rpartition("?")
        tail = tail.partition("#")[0]
        options: dict[str, object] = {}
        for part in tail.split("&"):
            if not part:
                continue
            raw_key, has_value, raw_value = part.partition("=")
            key = unquote_plus(raw_key)
            if _strip_policy_prefix(key) == key:
                continue
            if not has_value:
                raise InvalidConfiguration(f"URI option {key!r} has no value", option=key, value=None)
            options[key] = unquote_plus(raw_value)
        return cls.from_activemq(options)


def _java_bool(value: bool) -> str:
    return "true" if value else "false"


_POLICY_PREFIXES = ("jms.redeliveryPolicy.", "redeliveryPolicy.")


def _strip_policy_prefix(key: str) -> str:
    for prefix in _POLICY_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _parse_int(key: str, raw: object) -> int:
    if isinstance(raw, bool):
        raise _fail(key, raw, "expected an integer")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and _INTEGER.fullmatch(raw.strip()):
        return int(raw.strip())
    raise _fail(key, raw, "expected an integer")


def _parse_millis(key: str, raw: object) -> float:
    millis = _parse_int(key, raw)
    if millis < 0:
        raise _fail(key, raw, "a delay cannot be negative")
    return millis / 1000


def _parse_cap(key: str, raw: object) -> float | None:
    millis = _parse_int(key, raw)
    if millis == -1:
        return None
    if millis < 0:
        raise _fail(key, raw, "expected -1 (no cap) or a delay >= 0")
    return millis / 1000


def _parse_bool(key: str, raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise _fail(key, raw, "expected true or false")


def _parse_double(key: str, raw: object) -> float:
    value: float | None = None
    if _is_number(raw):
        assert isinstance(raw, int | float)
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            value = None
    if value is None or not math.isfinite(value):
        raise _fail(key, raw, "expected a number")
    return value


def _parse_maximum(key: str, raw: object) -> int:
    maximum = _parse_int(key, raw)
    if maximum < -1:
        raise _fail(key, raw, "expected -1 (unlimited) or a count >= 0")
    return maximum


def _parse_multiplier(key: str, raw: object) -> float:
    multiplier = _parse_double(key, raw)
    if multiplier < 0:
        raise _fail(key, raw, "expected a multiplier >= 0")
    return multiplier


def _parse_factor(key: str, raw: object) -> float:
    factor = _parse_double(key, raw)
    if not 0 <= factor <= 1:
        raise _fail(key, raw, "expected a factor between 0 and 1")
    return factor


def _parse_percent(key: str, raw: object) -> float:
    percent = _parse_int(key, raw)
    if percent not in range(101):
        raise _fail(key, raw, "expected a percentage between 0 and 100")
    return percent * 0.01


def _parse_destination(key: str, raw: object) -> str:
    if not isinstance(raw, str) or not raw:
        raise _fail(key, raw, "expected a destination name")
    return raw


_ACTIVEMQ_OPTIONS: dict[str, tuple[str, Any]] = {
    "maximumRedeliveries": ("maximum_redeliveries", _parse_maximum),
    "initialRedeliveryDelay": ("initial_redelivery_delay", _parse_millis),
    "redeliveryDelay": ("redelivery_delay", _parse_millis),
    "useExponentialBackOff": ("use_exponential_backoff", _parse_bool),
    "backOffMultiplier": ("backoff_multiplier", _parse_multiplier),
    "maximumRedeliveryDelay": ("maximum_redelivery_delay", _parse_cap),
    "useCollisionAvoidance": ("use_collision_avoidance", _parse_bool),
    "collisionAvoidanceFactor": ("collision_avoidance_factor", _parse_factor),
    "collisionAvoidancePercent": ("collision_avoidance_factor", _parse_percent),
    "preDispatchCheck": ("pre_dispatch_check", _parse_bool),
    "destination": ("destination", _parse_destination),
}


# ----------------------------------------------------------------------------------------------------
# RocketMQ delay levels
# ----------------------------------------------------------------------------------------------------

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
        if not _is_number(level) or not math.isfinite(level) or level < 0:
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


# ----------------------------------------------------------------------------------------------------
# Per-destination policies
# ----------------------------------------------------------------------------------------------------

def _to_entries(
    value: Mapping[str, RetryPolicy] | Iterable[tuple[str, RetryPolicy]],
) -> tuple[tuple[str, RetryPolicy], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    return tuple((pattern, policy) for pattern, policy in items)


@attrs.frozen
class RedeliveryPolicyMap:
    """ActiveMQ's ``RedeliveryPolicyMap``: a default policy plus policies keyed by destination wildcards.

    Keys use ActiveMQ's syntax: segments split by ``.``, ``*`` for one segment, a trailing ``>`` for the rest;
    a ``queue://``/``topic://`` prefix picks the domain (plain means queue); ``,`` lists several destinations.
    When several keys match, the most specific wins: the exact name, then the one with more literal segments,
    then the longer one; remaining ties go to the alphabetically first key, as ActiveMQ's sort does.
    """

    default: RetryPolicy = attrs.field(factory=RedeliveryPolicy)
    entries: tuple[tuple[str, RetryPolicy], ...] = attrs.field(default=(), converter=_to_entries)
    _map: DestinationMap[RetryPolicy] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_map", DestinationMap(self.default, self.entries))

    @classmethod
    def from_policies(
        cls, policies: Iterable[RedeliveryPolicy], default: RetryPolicy | None = None
    ) -> RedeliveryPolicyMap:
        """Key each policy by its own ``destination``, as ActiveMQ's ``redeliveryPolicyEntries`` does."""
        entries: list[tuple[str, RetryPolicy]] = []
        for policy in policies:
            if policy.destination is None:
                raise InvalidConfiguration("a redelivery policy map entry needs a destination", policy=policy)
            entries.append((policy.destination, policy))
        return cls(default if default is not None else RedeliveryPolicy(), entries)

    def get(self, destination: str) -> RetryPolicy:
        """The policy for a destination (``queue://``/``topic://`` or a plain queue name)."""
        return self._map.get(destination)
