"""The pytest plugin, tested as its users run it: inner pytest sessions built with ``pytester``."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ()

LOOP_SCOPE = ("-o", "asyncio_default_fixture_loop_scope=function")
STRICT = ("-o", "asyncio_mode=strict", "-W", "error", "-p", "no:cacheprovider", *LOOP_SCOPE)

BASIC = """
import pytest
from minibroker.client import AckMode

@pytest.mark.asyncio
async def test_round_trip(minibroker, minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
    producer = await session.create_producer("orders")
    await producer.send("hello")
    consumer = await session.create_consumer("orders")
    msg = await consumer.receive(timeout=1)
    assert msg.body == "hello"
    assert minibroker.queue("orders").size == 0
"""


class TestFixtures:
    def test_strict_mode_and_warnings_as_errors(self, pytester: pytest.Pytester) -> None:
        """The fixtures work in pytest-asyncio's strict mode with warnings turned into errors."""
        pytester.makepyfile(BASIC)
        pytester.runpytest(*STRICT).assert_outcomes(passed=1)

    def test_the_connection_comes_with_the_broker_fixture(self, pytester: pytest.Pytester) -> None:
        """``minibroker_connection`` is made by the ``minibroker`` fixture when the test names it, directly or
        through a fixture of its own, and is closed before the broker's teardown checks; asked for only later, with
        ``getfixturevalue``, it is a usage error that says what to do instead (issue 45: one async fixture, not
        two)."""
        pytester.makepyfile("""
import pytest
import pytest_asyncio
from minibroker.client import AckMode

@pytest_asyncio.fixture
async def producer(minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
    yield await session.create_producer("orders")

@pytest.mark.asyncio
async def test_through_a_fixture(minibroker, producer):
    await producer.send("hello")
    assert minibroker.queue("orders").size == 1
    assert minibroker.statistics().connections == 1

@pytest.mark.asyncio
async def test_named_directly(minibroker, minibroker_connection):
    assert not minibroker_connection.closed
    assert minibroker.statistics().connections == 1

@pytest.mark.asyncio
async def test_without_it(minibroker):
    assert minibroker.statistics().connections == 0

@pytest.mark.asyncio
async def test_asked_for_late(request, minibroker):
    request.getfixturevalue("minibroker_connection")
""")
        result = pytester.runpytest(*STRICT)
        result.assert_outcomes(passed=3, failed=1)
        result.stdout.fnmatch_lines(["*minibroker_connection is made with the minibroker fixture*"])

    def test_auto_mode(self, pytester: pytest.Pytester) -> None:
        """... and in auto mode, without asyncio marks."""
        pytester.makepyfile(BASIC.replace("@pytest.mark.asyncio\n", ""))
        pytester.runpytest("-o", "asyncio_mode=auto", "-W", "error", *LOOP_SCOPE).assert_outcomes(passed=1)

    def test_virtual_time(self, pytester: pytest.Pytester) -> None:
        """manual_clock is the broker's clock: a rollback's 1 s redelivery delay passes with advance()."""
        pytester.makepyfile("""
import pytest
from minibroker.client import AckMode

@pytest.mark.asyncio
@pytest.mark.minibroker(autojump=False)
async def test_rollback(minibroker, manual_clock, minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.SESSION_TRANSACTED)
    producer = await session.create_producer("q")
    await producer.send("m")
    await session.commit()
    consumer = await session.create_consumer("q")
    assert (await consumer.receive(timeout=0)).body == "m"
    await session.rollback()
    assert await consumer.receive(timeout=0) is None
    await manual_clock.advance(1.0)
    again = await consumer.receive(timeout=0)
    assert again.redelivered and again.delivery_count == 2
    await session.commit()
""")
        pytester.runpytest(*STRICT).assert_outcomes(passed=1)

    def test_marker_configures_redelivery_policy(self, pytester: pytest.Pytester) -> None:
        """The marker's redelivery policy reaches minibroker_connection; autojump makes timeouts pass at once."""
        pytester.makepyfile("""
import pytest
from minibroker.client import AckMode, RedeliveryPolicy

@pytest.mark.asyncio
@pytest.mark.minibroker(redelivery_policy=RedeliveryPolicy(maximum_redeliveries=1), allow_dead_letters=True)
async def test_dlq_after_two(minibroker, minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.SESSION_TRANSACTED)
    producer = await session.create_producer("q")
    await producer.send("m")
    await session.commit()
    consumer = await session.create_consumer("q")
    deliveries = 0
    while (msg := await consumer.receive(timeout=10)) is not None:
        deliveries += 1
        await session.rollback()
    assert deliveries == 2
    assert minibroker.queue("ActiveMQ.DLQ").size == 1
""")
        pytester.runpytest(*STRICT).assert_outcomes(passed=1)

    def test_autojump_waits_for_a_slow_sender_and_takes_a_threshold(self, pytester: pytest.Pytester) -> None:
        """With the default fixture, receive(timeout=10) gets a message sent after a real 0.2 s sleep (issue 16);
        the marker's autojump_threshold reaches the clock."""
        pytester.makepyfile("""
import asyncio
import pytest
from minibroker.client import AckMode

@pytest.mark.asyncio
@pytest.mark.minibroker(autojump_threshold=0.02)
async def test_slow_sender(minibroker, manual_clock, minibroker_connection):
    assert manual_clock.autojump_threshold == 0.02
    session = await minibroker_connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
    consumer = await session.create_consumer("q")
    producer = await session.create_producer("q")

    async def send_later():
        await asyncio.sleep(0.2)
        await producer.send("late")

    sender = asyncio.ensure_future(send_later())
    assert (await consumer.receive(timeout=10)).body == "late"
    await sender
""")
        pytester.runpytest(*STRICT).assert_outcomes(passed=1)

    def test_manual_clock_needs_virtual_time(self, pytester: pytest.Pytester) -> None:
        """Asking for manual_clock on a real-time broker is a usage error that says how to fix it."""
        pytester.makepyfile("""
import pytest

@pytest.mark.asyncio
@pytest.mark.minibroker(virtual_time=False)
async def test_clock(manual_clock):
    pass
""")
        result = pytester.runpytest(*STRICT)
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*manual_clock needs virtual time*"])

    def test_factory(self, pytester: pytest.Pytester) -> None:
        """minibroker_factory builds extra brokers with custom settings."""
        pytester.makepyfile("""
import pytest
from minibroker import DestinationPolicy

@pytest.mark.asyncio
async def test_two_brokers(minibroker_factory):
    first = await minibroker_factory()
    second = await minibroker_factory(policies={">": DestinationPolicy(prioritized_messages=True)})
    assert first is not second
    assert second.core.queue("q").policy.prioritized_messages
""")
        pytester.runpytest(*STRICT).assert_outcomes(passed=1)


def test_a_marker_keyword_typo_lists_the_keywords(pytester: pytest.Pytester) -> None:
    """issue 32, item 7: a misspelt marker keyword names the keyword it probably is, and all of them."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.minibroker(alow_dead_letters=True)
        async def test_typo(minibroker):
            pass
        """
    )
    result = pytester.runpytest("-o", "asyncio_mode=auto", *LOOP_SCOPE)
    result.stdout.fnmatch_lines(
        ["*unknown keyword 'alow_dead_letters' (did you mean 'allow_dead_letters'?); the keywords are virtual_time*"]
    )


class TestTeardownReport:
    DEAD_LETTER = """
import pytest
from minibroker.client import AckMode, RedeliveryPolicy

@pytest.mark.asyncio
{marker}
async def test_poison(minibroker, minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.SESSION_TRANSACTED)
    producer = await session.create_producer("orders")
    await producer.send("bad order")
    await session.commit()
    consumer = await session.create_consumer("orders")
    while await consumer.receive(timeout=5) is not None:
        await session.rollback()
"""

    def test_unexpected_dead_letters_fail_the_test(self, pytester: pytest.Pytester) -> None:
        """A message dead-lettered during the test fails it, with the cause and the message's history."""
        pytester.makepyfile(self.DEAD_LETTER.format(marker=""))
        result = pytester.runpytest(*STRICT)
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines(
            [
                "*messages were dead-lettered or dropped*",
                "*-> ActiveMQ.DLQ: 'bad order'*",
                "*Delivery[[]7] exceeds redelivery policy limit*",
                "*history of*",
            ]
        )

    def test_dead_letters_can_be_allowed(self, pytester: pytest.Pytester) -> None:
        """allow_dead_letters=True keeps the test green."""
        pytester.makepyfile(self.DEAD_LETTER.format(marker="@pytest.mark.minibroker(allow_dead_letters=True)"))
        pytester.runpytest(*STRICT).assert_outcomes(passed=1)

    def test_listener_exceptions_fail_the_test(self, pytester: pytest.Pytester) -> None:
        """An exception raised by a message listener fails the test on teardown, naming the message."""
        pytester.makepyfile("""
import pytest
from minibroker.client import AckMode

@pytest.mark.asyncio
@pytest.mark.minibroker(allow_dead_letters=True)
async def test_listener(minibroker, minibroker_connection):
    session = await minibroker_connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
    producer = await session.create_producer("q")
    await producer.send("boom")
    consumer = await session.create_consumer("q")
    def listener(msg):
        raise ValueError("cannot parse " + msg.body)
    consumer.set_listener(listener)
    await minibroker.settled()
""")
        result = pytester.runpytest(*STRICT)
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines(["*message listeners raised*", "*ValueError: cannot parse boom*"])


class TestIsolation:
    ISOLATED = """
import pytest
from minibroker.client import AckMode

@pytest.mark.asyncio
@pytest.mark.parametrize("n", range(6))
async def test_fresh_broker(minibroker, minibroker_connection, n):
    session = await minibroker_connection.create_session(AckMode.AUTO_ACKNOWLEDGE)
    producer = await session.create_producer("shared-name")
    await producer.send(f"m{n}")
    assert minibroker.queue("shared-name").size == 1
    assert minibroker.queue("shared-name").enqueued == 1
"""

    def test_nothing_is_shared_between_tests(self, pytester: pytest.Pytester) -> None:
        """Every test gets its own broker: the same queue name starts empty each time."""
        pytester.makepyfile(self.ISOLATED)
        pytester.runpytest(*STRICT).assert_outcomes(passed=6)

    def test_nothing_is_shared_between_xdist_workers(self, pytester: pytest.Pytester) -> None:
        """Under pytest-xdist with two workers, likewise."""
        pytester.makepyfile(self.ISOLATED)
        result = pytester.runpytest_subprocess(*STRICT, "-p", "xdist", "-n", "2")
        result.assert_outcomes(passed=6)


class TestObservedDeadLetters:
    """Issue 20: dead letters the test looked at are expected; only unobserved ones fail the teardown."""

    BODY = """
        from minibroker.client import AckMode, RedeliveryPolicy, connect
        from minibroker.testing import assert_dead_lettered

        async def poison(broker):
            async with await connect(broker, redelivery_policy=RedeliveryPolicy(maximum_redeliveries=0)) as conn:
                session = await conn.create_session(AckMode.TRANSACTED)
                producer = await session.create_producer("orders")
                await producer.send("bad")
                await session.commit()
                consumer = await session.create_consumer("orders")
                msg = await consumer.receive(timeout=1)
                await session.rollback()
                return msg.message_id

        async def test_browsed(minibroker):
            await poison(minibroker)
            assert [m.body for m in minibroker.queue("ActiveMQ.DLQ").browse()] == ["bad"]

        async def test_asserted(minibroker):
            assert_dead_lettered(minibroker, await poison(minibroker), cause_contains="exceeds redelivery")

        async def test_unobserved(minibroker):
            await poison(minibroker)
    """

    def test_browsing_or_asserting_makes_them_expected(self, pytester: pytest.Pytester) -> None:
        pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
        pytester.makepyfile(textwrap.dedent(self.BODY))
        result = pytester.runpytest("-p", "no:cacheprovider")
        result.assert_outcomes(passed=3, errors=1)
        result.stdout.fnmatch_lines(["*test_unobserved*", "*the test never looked at them (0 it looked at*"])


def test_the_missing_pytest_asyncio_error_names_installs_that_work_from_a_checkout() -> None:
    """minibroker is installed from a checkout (no index has it): ``pip install 'minibroker[pytest]'`` would fail."""
    from minibroker.plugins.pytest_plugin import MISSING_ASYNCIO

    assert "pip install pytest-asyncio" in MISSING_ASYNCIO
    assert "pip install '.[pytest]'" in MISSING_ASYNCIO
    assert "minibroker[pytest]" not in MISSING_ASYNCIO
