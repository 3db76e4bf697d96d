"""Retry policies: ActiveMQ's RedeliveryPolicy against measured schedules, RocketMQ delay levels, maps."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minibroker.errors import InvalidConfiguration
from minibroker.redelivery import (
    DEFAULT_DEAD_LETTER_QUEUE,
    DelayLevelPolicy,
    PlanStep,
    RedeliveryPolicy,
    RedeliveryPolicyMap,
    RetryPolicy,
    format_duration,
    format_plan,
    parse_delay_levels,
)

SCENARIOS = Path(__file__).resolve().parent / "conformance" / "recordings"


def schedule(policy: RedeliveryPolicy | DelayLevelPolicy, count: int) -> list[float]:
    return [policy.delay_for(k) for k in range(1, count + 1)]


class TestMeasuredSchedules:
    """Delays before each redelivery, as measured on ActiveMQ 5.17 (retry-policies.md, recordings)."""

    def test_initial_delay_alone(self) -> None:
        """initialRedeliveryDelay=100 only: the later redeliveries use redeliveryDelay (1000 ms)."""
        assert schedule(RedeliveryPolicy(initial_redelivery_delay=0.1), 3) == [0.1, 1.0, 1.0]

    def test_exponential_backoff_times_two(self) -> None:
        """Back-off x2 from 100 ms doubles the previous delay: 100, 200, 400, 800 ms."""
        policy = RedeliveryPolicy(initial_redelivery_delay=0.1, use_exponential_backoff=True, backoff_multiplier=2)
        assert schedule(policy, 4) == [0.1, 0.2, 0.4, 0.8]

    def test_cap_below_redelivery_delay(self) -> None:
        """A 250 ms cap, redeliveryDelay left at 1000 ms: the cap in effect is max(cap, redeliveryDelay)."""
        policy = RedeliveryPolicy(
            initial_redelivery_delay=0.1,
            use_exponential_backoff=True,
            backoff_multiplier=2,
            maximum_redelivery_delay=0.25,
        )
        assert schedule(policy, 4) == [0.1, 0.2, 1.0, 1.0]

    def test_cap_with_short_redelivery_delay(self) -> None:
        """The exponential_backoff_max_delay_rd100 recording: gaps 100, 200, 250, 250 ms."""
        policy = RedeliveryPolicy(
            initial_redelivery_delay=0.1,
            redelivery_delay=0.1,
            use_exponential_backoff=True,
            backoff_multiplier=2,
            maximum_redelivery_delay=0.25,
        )
        assert schedule(policy, 4) == [0.1, 0.2, 0.25, 0.25]

    def test_defaults(self) -> None:
        """ActiveMQ's defaults wait one second before every redelivery."""
        assert schedule(RedeliveryPolicy(), 6) == [1.0] * 6

    def test_exponential_defaults(self) -> None:
        """Exponential back-off with the default multiplier 5: 1, 5, 25 s."""
        assert schedule(RedeliveryPolicy(use_exponential_backoff=True), 3) == [1.0, 5.0, 25.0]

    def test_zero_initial_delay(self) -> None:
        """initial=0, redeliveryDelay=1000 gives 0, 1000, 1000 ms; with back-off 0, 1000, 5000 ms (spec 5)."""
        assert schedule(RedeliveryPolicy(initial_redelivery_delay=0), 3) == [0.0, 1.0, 1.0]
        policy = RedeliveryPolicy(initial_redelivery_delay=0, use_exponential_backoff=True)
        assert schedule(policy, 3) == [0.0, 1.0, 5.0]

    def test_millisecond_misconfiguration(self) -> None:
        """initialRedeliveryDelay=1 is one millisecond: ten doubling retries are spent in about a second."""
        policy = RedeliveryPolicy(
            maximum_redeliveries=10,
            initial_redelivery_delay=0.001,
            use_exponential_backoff=True,
            backoff_multiplier=2,
        )
        steps = policy.explain()
        assert [step.delay for step in steps[1:]] == [2**i / 1000 for i in range(10)]
        assert steps[-1].elapsed == 1.023
        assert steps[-1].dead_letter == DEFAULT_DEAD_LETTER_QUEUE


class TestNextDelay:
    """``next_delay`` is ActiveMQ's getNextRedeliveryDelay in Java long milliseconds."""

    def test_exact_millisecond_results(self) -> None:
        """0.1 s doubled is exactly 0.2 (integer milliseconds inside, no float drift)."""
        policy = RedeliveryPolicy(use_exponential_backoff=True, backoff_multiplier=2)
        assert policy.next_delay(0.1, random.Random(0)) == 0.2
        assert policy.next_delay(0.3) == 0.6

    def test_zero_previous_gives_redelivery_delay(self) -> None:
        """Back-off needs a positive previous delay; otherwise the base redeliveryDelay applies."""
        policy = RedeliveryPolicy(redelivery_delay=0.3, use_exponential_backoff=True)
        assert policy.next_delay(0) == 0.3

    def test_multiplier_not_above_one_is_ignored(self) -> None:
        """A multiplier <= 1 switches back-off off, as in ActiveMQ."""
        policy = RedeliveryPolicy(redelivery_delay=0.3, use_exponential_backoff=True, backoff_multiplier=1.0)
        assert policy.next_delay(2.0) == 0.3

    def test_java_truncation(self) -> None:
        """(long)(1 ms x 1.5) is 1 ms: the product is truncated like a Java cast."""
        policy = RedeliveryPolicy(use_exponential_backoff=True, backoff_multiplier=1.5)
        assert policy.next_delay(0.001) == 0.001
        assert policy.next_delay(0.003) == 0.004

    def test_unbounded_growth_saturates(self) -> None:
        """Delays stop at Java's Long.MAX_VALUE milliseconds instead of overflowing."""
        policy = RedeliveryPolicy(maximum_redeliveries=-1, use_exponential_backoff=True)
        assert policy.delay_for(10_000) == (2**63 - 1) / 1000

    def test_counter_must_be_positive(self) -> None:
        """Redelivery counters start at 1; 0 is the first delivery, which has no delay."""
        with pytest.raises(ValueError):
            RedeliveryPolicy().delay_for(0)


class TestExceeded:
    """The poison rule: the counter after incrementing is compared with maximumRedeliveries."""

    def test_default_allows_six_redeliveries(self) -> None:
        """Default 6: the 7th redelivery is refused, so a message is delivered 7 times in all."""
        policy = RedeliveryPolicy()
        assert not policy.exceeded(6)
        assert policy.exceeded(7)

    def test_zero_dead_letters_on_first_failure(self) -> None:
        """maximumRedeliveries=0: the first rollback already exceeds the policy."""
        assert RedeliveryPolicy(maximum_redeliveries=0).exceeded(1)

    def test_unlimited_never_exceeds(self) -> None:
        """-1 means never give up."""
        assert not RedeliveryPolicy(maximum_redeliveries=-1).exceeded(10**9)


class TestCollisionAvoidance:
    """Jitter of +/- factor x U(0,1), drawn from the injected rng only."""

    policy = RedeliveryPolicy(maximum_redeliveries=-1, use_collision_avoidance=True)

    def test_bounds_and_whole_milliseconds(self) -> None:
        """Every jittered delay stays within 15% of the nominal second and is a whole number of ms."""
        rng = random.Random(7)
        delays = [self.policy.delay_for(2, rng) for _ in range(2000)]
        assert all(0.85 <= delay <= 1.15 for delay in delays)
        assert all(round(delay * 1000) / 1000 == delay for delay in delays)
        assert min(delays) < 0.9 and max(delays) > 1.1  # both directions are drawn

    def test_replay_with_seed(self) -> None:
        """The same seed gives the same delays; another seed gives others."""
        first = [self.policy.delay_for(k, random.Random(42)) for k in range(2, 12)]
        again = [self.policy.delay_for(k, random.Random(42)) for k in range(2, 12)]
        other = [self.policy.delay_for(k, random.Random(43)) for k in range(2, 12)]
        assert first == again
        assert first != other

    def test_initial_delay_is_not_jittered(self) -> None:
        """The first redelivery uses initialRedeliveryDelay as is; only ``next`` applies jitter."""
        rng = random.Random(1)
        assert {self.policy.delay_for(1, rng) for _ in range(50)} == {1.0}

    def test_without_rng_gives_nominal_delay(self) -> None:
        """No rng, no jitter: useful for showing the plan."""
        assert self.policy.delay_for(3) == 1.0

    def test_factor_from_percent(self) -> None:
        """A 50% spread stays within 0.5 .. 1.5 of the nominal delay."""
        policy = RedeliveryPolicy.from_activemq({"useCollisionAvoidance": "true", "collisionAvoidancePercent": 50})
        rng = random.Random(3)
        assert all(0.5 <= policy.delay_for(2, rng) <= 1.5 for _ in range(500))


class TestExplain:
    """The whole schedule as rows, and its rendering for the CLI."""

    def test_rows_for_bounded_policy(self) -> None:
        """One row per delivery (1 + maximumRedeliveries) with cumulative time and the DLQ on the last row."""
        policy = RedeliveryPolicy(maximum_redeliveries=2, initial_redelivery_delay=0.1, redelivery_delay=0.1)
        assert policy.explain(dead_letter_queue="ActiveMQ.DLQ.Queue.Q") == (
            PlanStep(1, 0.0, 0.0),
            PlanStep(2, 0.1, 0.1),
            PlanStep(3, 0.1, 0.2, dead_letter="ActiveMQ.DLQ.Queue.Q"),
        )

    def test_zero_redeliveries(self) -> None:
        """maximumRedeliveries=0: the only delivery is also the last."""
        assert RedeliveryPolicy(maximum_redeliveries=0).explain() == (
            PlanStep(1, 0.0, 0.0, dead_letter="ActiveMQ.DLQ"),
        )

    def test_unlimited_is_bounded_by_limit(self) -> None:
        """With -1 only ``limit`` rows are listed and the last one says the schedule continues."""
        steps = RedeliveryPolicy(maximum_redeliveries=-1).explain(limit=5)
        assert len(steps) == 5
        assert steps[-1].continues and steps[-1].dead_letter is None
        assert "redelivered forever" in format_plan(steps)

    def test_format_plan(self) -> None:
        """The table shows units and a closing summary of where the message ends."""
        policy = RedeliveryPolicy(
            maximum_redeliveries=4,
            initial_redelivery_delay=0.1,
            use_exponential_backoff=True,
            backoff_multiplier=2,
        )
        text = format_plan(policy.explain())
        lines = text.splitlines()
        assert lines[0].split() == ["attempt", "delay", "elapsed", "if", "it", "fails"]
        assert lines[2].split() == ["2", "100", "ms", "100", "ms", "redeliver"]
        assert lines[5].split()[:5] == ["5", "800", "ms", "1.5", "s"]
        assert "dead-letter to ActiveMQ.DLQ" in lines[5]
        assert lines[-1] == "5 deliveries within 1.5 s, then ActiveMQ.DLQ"

    @pytest.mark.parametrize(
        ("seconds", "text"),
        [
            (0.0, "0 ms"),
            (0.001, "1 ms"),
            (0.0005, "0.5 ms"),
            (1.0, "1.0 s"),
            (1.5, "1.5 s"),
            (59.999, "59.999 s"),
            (60.0, "1 min"),
            (125.0, "2 min 5 s"),
            (7200.0, "2 h"),
            (90061.5, "1 d 1 h 1 min 1.5 s"),
        ],
    )
    def test_format_duration(self, seconds: float, text: str) -> None:
        """Durations always carry a unit so milliseconds cannot be mistaken for seconds."""
        assert format_duration(seconds) == text


RECORDED = [
    (
        {"maximumRedeliveries": 0, "initialRedeliveryDelay": 100, "redeliveryDelay": 100},
        "RedeliveryPolicy {destination = null, collisionAvoidanceFactor = 0.15, maximumRedeliveries = 0, "
        "maximumRedeliveryDelay = -1, initialRedeliveryDelay = 100, useCollisionAvoidance = false, "
        "useExponentialBackOff = false, backOffMultiplier = 5.0, redeliveryDelay = 100, "
        "preDispatchCheck = true}",
    ),
    (
        {"maximumRedeliveries": 2, "initialRedeliveryDelay": 100, "redeliveryDelay": 100},
        "RedeliveryPolicy {destination = null, collisionAvoidanceFactor = 0.15, maximumRedeliveries = 2, "
        "maximumRedeliveryDelay = -1, initialRedeliveryDelay = 100, useCollisionAvoidance = false, "
        "useExponentialBackOff = false, backOffMultiplier = 5.0, redeliveryDelay = 100, "
        "preDispatchCheck = true}",
    ),
    (
        {
            "maximumRedeliveries": 4,
            "initialRedeliveryDelay": 100,
            "redeliveryDelay": 1000,
            "useExponentialBackOff": True,
            "backOffMultiplier": 2.0,
            "maximumRedeliveryDelay": -1,
        },
        "RedeliveryPolicy {destination = null, collisionAvoidanceFactor = 0.15, maximumRedeliveries = 4, "
        "maximumRedeliveryDelay = -1, initialRedeliveryDelay = 100, useCollisionAvoidance = false, "
        "useExponentialBackOff = true, backOffMultiplier = 2.0, redeliveryDelay = 1000, "
        "preDispatchCheck = true}",
    ),
    (
        {
            "maximumRedeliveries": 4,
            "initialRedeliveryDelay": 100,
            "redeliveryDelay": 100,
            "useExponentialBackOff": True,
            "backOffMultiplier": 2.0,
            "maximumRedeliveryDelay": 250,
        },
        "RedeliveryPolicy {destination = null, collisionAvoidanceFactor = 0.15, maximumRedeliveries = 4, "
        "maximumRedeliveryDelay = 250, initialRedeliveryDelay = 100, useCollisionAvoidance = false, "
        "useExponentialBackOff = true, backOffMultiplier = 2.0, redeliveryDelay = 100, "
        "preDispatchCheck = true}",
    ),
]


class TestActiveMQString:
    """``activemq_string`` reproduces RedeliveryPolicy.toString() as seen in dlqDeliveryFailureCause."""

    @pytest.mark.parametrize(("options", "expected"), RECORDED)
    def test_recorded_strings(self, options: dict[str, object], expected: str) -> None:
        """Byte for byte the text the real broker put in the DLQ cause."""
        assert RedeliveryPolicy.from_activemq(options).activemq_string() == expected

    def test_every_recording(self) -> None:
        """Each scenario's policy string matches the policy built from its recorded config."""
        checked = 0
        for path in sorted(SCENARIOS.glob("*.json")):
            scenario = json.loads(path.read_text())
            options = scenario.get("config", {}).get("redeliveryPolicy")
            found = set(re.findall(r"RedeliveryPolicy \{[^}]*\}", path.read_text()))
            if options is None or not found:
                continue
            assert found == {RedeliveryPolicy.from_activemq(options).activemq_string()}, path.name
            checked += 1
        assert checked >= 5

    def test_destination_and_java_doubles(self) -> None:
        """Destinations print qualified; doubles print like Java (0.2, 1.0E7)."""
        policy = RedeliveryPolicy(destination="FOO.>", collision_avoidance_factor=0.2, backoff_multiplier=1e7)
        text = policy.activemq_string()
        assert text.startswith("RedeliveryPolicy {destination = queue://FOO.>, collisionAvoidanceFactor = 0.2,")
        assert "backOffMultiplier = 1.0E7," in text
        assert "destination = topic://T," in RedeliveryPolicy(destination="topic://T").activemq_string()

    def test_small_double(self) -> None:
        """Java switches to scientific notation below 10^-3."""
        assert "collisionAvoidanceFactor = 5.0E-4," in (
            RedeliveryPolicy(collision_avoidance_factor=0.0005).activemq_string()
        )


class TestActiveMQOptions:
    """Reading and writing ActiveMQ's property names (milliseconds), from configs and URIs."""

    def test_uri_style_strings(self) -> None:
        """String values as URIs carry them, with both prefixes."""
        policy = RedeliveryPolicy.from_activemq(
            {
                "jms.redeliveryPolicy.maximumRedeliveries": "3",
                "redeliveryPolicy.initialRedeliveryDelay": "250",
                "useExponentialBackOff": "TRUE",
                "backOffMultiplier": "2.5",
                "maximumRedeliveryDelay": "-1",
                "preDispatchCheck": "false",
            }
        )
        assert policy == RedeliveryPolicy(
            maximum_redeliveries=3,
            initial_redelivery_delay=0.25,
            use_exponential_backoff=True,
            backoff_multiplier=2.5,
            maximum_redelivery_delay=None,
            pre_dispatch_check=False,
        )

    def test_collision_percent(self) -> None:
        """Spring's collisionAvoidancePercent=15 is the factor 0.15."""
        policy = RedeliveryPolicy.from_activemq({"collisionAvoidancePercent": "20"})
        assert policy.collision_avoidance_factor == 0.2

    def test_from_uri(self) -> None:
        """Only redelivery options of a broker URL are read, URL-decoded; others are left to their owners."""
        policy = RedeliveryPolicy.from_uri_options(
            "failover:(tcp://a:61616?wireFormat.maxInactivityDuration=0)?jms.prefetchPolicy.all=1"
            "&jms.redeliveryPolicy.maximumRedeliveries=3&jms.redeliveryPolicy.redeliveryDelay=%32000"
            "&jms.redeliveryPolicy.destination=queue%3A%2F%2FQ"
        )
        assert policy == RedeliveryPolicy(maximum_redeliveries=3, redelivery_delay=2.0, destination="queue://Q")

    def test_bare_query(self) -> None:
        """A query without the URI in front works too."""
        policy = RedeliveryPolicy.from_uri_options("jms.redeliveryPolicy.useCollisionAvoidance=true")
        assert policy.use_collision_avoidance

    def test_to_activemq(self) -> None:
        """The inverse mapping uses milliseconds and -1 for no cap."""
        assert RedeliveryPolicy(initial_redelivery_delay=0.1).to_activemq() == {
            "maximumRedeliveries": 6,
            "initialRedeliveryDelay": 100,
            "redeliveryDelay": 1000,
            "useExponentialBackOff": False,
            "backOffMultiplier": 5.0,
            "maximumRedeliveryDelay": -1,
            "useCollisionAvoidance": False,
            "collisionAvoidanceFactor": 0.15,
            "preDispatchCheck": True,
        }

    @given(
        maximum=st.integers(-1, 1000),
        initial=st.integers(0, 10**9),
        base=st.integers(0, 10**9),
        cap=st.none() | st.integers(0, 10**9),
        exponential=st.booleans(),
        multiplier=st.floats(0, 100, allow_nan=False),
        jitter=st.booleans(),
        factor=st.floats(0, 1),
        check=st.booleans(),
        destination=st.none() | st.sampled_from(["Q", "topic://T.>", "queue://A.*"]),
    )
    def test_round_trip(
        self,
        maximum: int,
        initial: int,
        base: int,
        cap: int | None,
        exponential: bool,
        multiplier: float,
        jitter: bool,
        factor: float,
        check: bool,
        destination: str | None,
    ) -> None:
        """from_activemq(to_activemq(p)) == p, also through the URI form."""
        policy = RedeliveryPolicy(
            maximum_redeliveries=maximum,
            initial_redelivery_delay=initial / 1000,
            redelivery_delay=base / 1000,
            use_exponential_backoff=exponential,
            backoff_multiplier=multiplier,
            maximum_redelivery_delay=None if cap is None else cap / 1000,
            use_collision_avoidance=jitter,
            collision_avoidance_factor=factor,
            pre_dispatch_check=check,
            destination=destination,
        )
        options = policy.to_activemq()
        assert RedeliveryPolicy.from_activemq(options) == policy
        query = "&".join(
            f"jms.redeliveryPolicy.{key}={str(value).lower() if isinstance(value, bool) else repr(value)}"
            if not isinstance(value, str)
            else f"jms.redeliveryPolicy.{key}={value}"
            for key, value in options.items()
        )
        assert RedeliveryPolicy.from_uri_options(query) == policy

    def test_unknown_option(self) -> None:
        """An unknown name is refused and named, not silently ignored."""
        with pytest.raises(InvalidConfiguration, match="maximumRedelivery") as caught:
            RedeliveryPolicy.from_activemq({"redeliveryPolicy.maximumRedelivery": 3})
        assert caught.value.option == "redeliveryPolicy.maximumRedelivery"  # type: ignore[attr-defined]

    def test_unknown_uri_option(self) -> None:
        """A misspelt option under the redelivery prefix of a URI is refused too."""
        with pytest.raises(InvalidConfiguration, match="initialDelay"):
            RedeliveryPolicy.from_uri_options("tcp://h:1?jms.redeliveryPolicy.initialDelay=5")

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("useExponentialBackOff", "yes"),
            ("initialRedeliveryDelay", "1.5"),
            ("initialRedeliveryDelay", -5),
            ("maximumRedeliveries", True),
            ("maximumRedeliveries", "-2"),
            ("maximumRedeliveryDelay", "-2"),
            ("backOffMultiplier", "fast"),
            ("backOffMultiplier", "nan"),
            ("collisionAvoidanceFactor", "1.5"),
            ("collisionAvoidancePercent", 150),
            ("backOffMultiplier", -2),
            ("destination", ""),
        ],
    )
    def test_bad_values(self, key: str, value: object) -> None:
        """Values ActiveMQ could not use are refused with the offending value."""
        with pytest.raises(InvalidConfiguration) as caught:
            RedeliveryPolicy.from_activemq({key: value})
        assert caught.value.value == value  # type: ignore[attr-defined]
        assert caught.value.option == key  # type: ignore[attr-defined]


class TestValidation:
    """Constructing a policy with seconds checks every value."""

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("initial_redelivery_delay", -1.0),
            ("redelivery_delay", -0.5),
            ("maximum_redelivery_delay", -0.001),
            ("initial_redelivery_delay", 0.0005),
            ("redelivery_delay", float("inf")),
            ("maximum_redeliveries", -2),
            ("backoff_multiplier", -1.0),
            ("collision_avoidance_factor", 1.2),
            ("use_exponential_backoff", 1),
        ],
    )
    def test_invalid(self, field: str, value: object) -> None:
        """The error names the field and carries the offending value."""
        with pytest.raises(InvalidConfiguration, match=field) as caught:
            RedeliveryPolicy(**{field: value})  # type: ignore[arg-type]
        assert caught.value.value == value  # type: ignore[attr-defined]

    def test_millisecond_inputs_are_accepted(self) -> None:
        """Float seconds that are whole milliseconds (1.1 s) are fine despite binary rounding."""
        assert RedeliveryPolicy(redelivery_delay=1.1).to_activemq()["redeliveryDelay"] == 1100


class TestDelayLevelPolicy:
    """RocketMQ-style retry: level 3 + reconsumeTimes of the table, 16 retries, then %DLQ%group."""

    def test_default_schedule(self) -> None:
        """10 s, 30 s, 1 m, 2 m, ... up to 2 h for the 16th retry."""
        policy = DelayLevelPolicy()
        minutes = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 60, 120]
        assert schedule(policy, 16) == [10, 30] + [60 * m for m in minutes]

    def test_dead_letter_after_sixteen(self) -> None:
        """The 16th retry still happens; a 17th would exceed maxReconsumeTimes."""
        policy = DelayLevelPolicy()
        assert not policy.exceeded(16)
        assert policy.exceeded(17)

    def test_levels_clamp_to_last(self) -> None:
        """Levels past the table use its last entry."""
        policy = DelayLevelPolicy(max_reconsume_times=20)
        assert policy.delay_for(20) == 7200
        assert policy.delay_of_level(99) == 7200

    def test_custom_levels(self) -> None:
        """A configured messageDelayLevel string changes the table."""
        policy = DelayLevelPolicy(levels="1s 2s 3s 1m 1h 1d", max_reconsume_times=3)
        assert schedule(policy, 4) == [3, 60, 3600, 86400]
        assert DelayLevelPolicy(levels=[0.5, 1.5, 2.5]).delay_for(1) == 2.5

    def test_parse_levels(self) -> None:
        """The default table has 18 levels from 1 s to 2 h."""
        levels = parse_delay_levels("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")
        assert len(levels) == 18
        assert (levels[0], levels[-1]) == (1, 7200)

    @pytest.mark.parametrize("text", ["", "1s 5x", "1.5s", "s"])
    def test_bad_levels(self, text: str) -> None:
        """Malformed tables are refused."""
        with pytest.raises(InvalidConfiguration):
            DelayLevelPolicy(levels=text)

    def test_destinations(self) -> None:
        """Retry and dead-letter destinations are per consumer group."""
        assert DelayLevelPolicy.retry_destination("g1") == "%RETRY%g1"
        assert DelayLevelPolicy.dead_letter_destination("g1") == "%DLQ%g1"
        assert DelayLevelPolicy.level_for(0) == 3

    def test_retry_properties(self) -> None:
        """The retried copy remembers its origin and carries the incremented reconsumeTimes."""
        properties = DelayLevelPolicy().retry_properties("orders", "MSG-1", 2, group="g1")
        assert properties == {
            "RETRY_TOPIC": "orders",
            "ORIGIN_MESSAGE_ID": "MSG-1",
            "REAL_TOPIC": "%RETRY%g1",
            "REAL_QID": 0,
            "DELAY": 5,
            "reconsumeTimes": 3,
        }
        assert DelayLevelPolicy().retry_properties("orders", "MSG-1", 0, 7, group="g1")["DELAY"] == 7
        with pytest.raises(ValueError):
            DelayLevelPolicy().retry_properties("orders", "MSG-1", 0, -1, group="g1")

    def test_explain(self) -> None:
        """17 deliveries over 4 h 45 min 40 s, then the group's DLQ."""
        steps = DelayLevelPolicy().explain(group="g1")
        assert len(steps) == 17
        assert steps[1].note == "level 3 via %RETRY%g1"
        assert steps[-1].dead_letter == "%DLQ%g1"
        assert steps[-1].elapsed == 4 * 3600 + 45 * 60 + 40
        assert format_plan(steps).splitlines()[-1] == "17 deliveries within 4 h 45 min 40 s, then %DLQ%g1"

    def test_invalid_maximum(self) -> None:
        """A negative maximum is refused."""
        with pytest.raises(InvalidConfiguration):
            DelayLevelPolicy(max_reconsume_times=-1)

    def test_both_satisfy_protocol(self) -> None:
        """Either policy can stand where a RetryPolicy is expected."""
        policies: list[RetryPolicy] = [RedeliveryPolicy(), DelayLevelPolicy()]
        assert all(isinstance(policy, RetryPolicy) for policy in policies)
        assert [policy.delay_for(1) for policy in policies] == [1.0, 10.0]


class TestRedeliveryPolicyMap:
    """Per-destination policies keyed by ActiveMQ wildcards; the most specific entry wins."""

    fast = RedeliveryPolicy(redelivery_delay=0.1)
    slow = RedeliveryPolicy(redelivery_delay=5.0)
    never = RedeliveryPolicy(maximum_redeliveries=0)
    other = RedeliveryPolicy(maximum_redeliveries=1)

    def test_default(self) -> None:
        """No matching entry: the default policy."""
        policies = RedeliveryPolicyMap(self.fast, {"ORDERS.>": self.slow})
        assert policies.get("PAYMENTS") is self.fast
        assert RedeliveryPolicyMap().get("X") == RedeliveryPolicy()

    def test_exact_beats_wildcard(self) -> None:
        """An entry naming the destination wins over every wildcard."""
        policies = RedeliveryPolicyMap(self.fast, {"ORDERS.>": self.slow, "ORDERS.EU": self.never, "*.EU": self.other})
        assert policies.get("ORDERS.EU") is self.never
        assert policies.get("ORDERS.US") is self.slow
        assert policies.get("queue://SHIPPING.EU") is self.other

    def test_longer_beats_shorter(self) -> None:
        """The closer parent wins: ORDERS.EU.> over ORDERS.>."""
        policies = RedeliveryPolicyMap(self.fast, {"ORDERS.>": self.slow, "ORDERS.EU.>": self.never})
        assert policies.get("ORDERS.EU.DE") is self.never
        assert policies.get("ORDERS.US.NY") is self.slow

    def test_star_matches_one_segment(self) -> None:
        """``*`` is exactly one segment; a trailing ``>`` is any number, even none."""
        policies = RedeliveryPolicyMap(self.fast, {"A.*": self.slow, "B.>": self.never})
        assert policies.get("A.X") is self.slow
        assert policies.get("A.X.Y") is self.fast
        assert policies.get("A") is self.fast
        assert policies.get("B") is self.never
        assert policies.get("B.X.Y") is self.never
        assert RedeliveryPolicyMap(self.fast, {">": self.slow}).get("anything.at.all") is self.slow

    def test_star_beats_descendant_of_same_length(self) -> None:
        """For A.X both A.* and A.> match; the one-segment wildcard is more specific."""
        policies = RedeliveryPolicyMap(self.fast, [("A.>", self.slow), ("A.*", self.never)])
        assert policies.get("A.X") is self.never

    def test_queue_and_topic_domains(self) -> None:
        """A plain key is a queue; topic:// keys only match topics."""
        policies = RedeliveryPolicyMap(self.fast, {"EVENTS.>": self.slow, "topic://EVENTS.>": self.never})
        assert policies.get("EVENTS.A") is self.slow
        assert policies.get("queue://EVENTS.A") is self.slow
        assert policies.get("topic://EVENTS.A") is self.never

    def test_composite_key(self) -> None:
        """A comma-separated key applies the policy to each destination."""
        policies = RedeliveryPolicyMap(self.fast, {"A,topic://B": self.slow})
        assert policies.get("A") is self.slow
        assert policies.get("topic://B") is self.slow
        assert policies.get("B") is self.fast

    def test_from_policies(self) -> None:
        """Policies that name their destination can build the map, as ActiveMQ's entries do."""
        keyed = RedeliveryPolicy(maximum_redeliveries=2, destination="Q.>")
        assert RedeliveryPolicyMap.from_policies([keyed]).get("Q.1") is keyed
        with pytest.raises(InvalidConfiguration):
            RedeliveryPolicyMap.from_policies([RedeliveryPolicy()])

    def test_mixed_policy_kinds(self) -> None:
        """Delay-level policies can sit in the map next to ActiveMQ ones."""
        levels = DelayLevelPolicy()
        assert RedeliveryPolicyMap(self.fast, {"R.>": levels}).get("R.1") is levels

    @pytest.mark.parametrize("key", ["A.>.B", "A..B", "", "queue://"])
    def test_invalid_keys(self, key: str) -> None:
        """Keys that are not destination patterns are refused."""
        with pytest.raises(InvalidConfiguration):
            RedeliveryPolicyMap(self.fast, {key: self.slow})
