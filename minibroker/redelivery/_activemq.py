"""ActiveMQ Classic's formula-based ``RedeliveryPolicy``, its URI/XML option names, and the per-destination map."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from minibroker._java.values import JAVA_LONG_MAX, is_number, java_bool, java_double, java_long
from minibroker.destination_map import DESTINATION_PREFIXES, DestinationMap
from minibroker.errors import InvalidConfiguration

from ._plan import PlanStep, RetryPolicy

#: ActiveMQ's shared dead-letter queue (``SharedDeadLetterStrategy``).
DEFAULT_DEAD_LETTER_QUEUE = "ActiveMQ.DLQ"


def _fail(option: str, value: object, reason: str) -> InvalidConfiguration:
    return InvalidConfiguration(f"redelivery policy {option}={value!r}: {reason}", option=option, value=value)


def _seconds_to_ms(option: str, seconds: object) -> int:
    """ActiveMQ keeps delays as whole milliseconds (Java ``long``); refuse anything it could not represent."""
    if not is_number(seconds):
        raise _fail(option, seconds, "expected a number of seconds")
    assert isinstance(seconds, int | float)
    if not math.isfinite(seconds):
        raise _fail(option, seconds, "expected a finite number of seconds")
    if seconds < 0:
        raise _fail(option, seconds, "a delay cannot be negative")
    millis = round(seconds * 1000)
    if abs(millis - seconds * 1000) > 1e-6 * max(1.0, abs(seconds * 1000)):
        raise _fail(option, seconds, "ActiveMQ counts delays in whole milliseconds")
    if millis > JAVA_LONG_MAX:
        raise _fail(option, seconds, "too large for ActiveMQ (a Java long of milliseconds)")
    return millis


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
        if not is_number(multiplier) or not math.isfinite(multiplier) or multiplier < 0:
            raise _fail("backoff_multiplier", multiplier, "expected a finite number >= 0")
        factor = self.collision_avoidance_factor
        if not is_number(factor) or not 0 <= factor <= 1:
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
            delay = java_long(previous * self.backoff_multiplier)
            cap = self._cap_ms()
            if cap is not None and delay > cap:
                delay = max(cap, base)
        if self.use_collision_avoidance and rng is not None:
            # First draw picks the direction, the second how far (as ActiveMQ does).
            factor = self.collision_avoidance_factor
            variance = (factor if rng.random() < 0.5 else -factor) * rng.random()
            delay = java_long(delay + delay * variance)
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
        if not is_number(previous) or not math.isfinite(previous):
            raise ValueError(f"previous must be a finite number of seconds, got {previous!r}")
        return self._next_ms(java_long(round(previous * 1000)), rng) / 1000

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
            ("collisionAvoidanceFactor", java_double(self.collision_avoidance_factor)),
            ("maximumRedeliveries", str(self.maximum_redeliveries)),
            ("maximumRedeliveryDelay", str(-1 if cap is None else cap)),
            ("initialRedeliveryDelay", str(self._initial_ms())),
            ("useCollisionAvoidance", java_bool(self.use_collision_avoidance)),
            ("useExponentialBackOff", java_bool(self.use_exponential_backoff)),
            ("backOffMultiplier", java_double(self.backoff_multiplier)),
            ("redeliveryDelay", str(self._redelivery_ms())),
            ("preDispatchCheck", java_bool(self.pre_dispatch_check)),
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
    if is_number(raw):
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
