"""Selectors a client cannot abuse: one consumer's selector failing on a message is that consumer's business;
a selector too long for the broker is refused at creation with the limit in the error."""

from __future__ import annotations

import pytest

from minibroker import Broker
from minibroker.client import AckMode, Connection
from minibroker.errors import InvalidSelector
from minibroker.selector import max_selector_length


class TestEvaluationFailures:
    """ActiveMQ: a selector that throws while evaluating a message does not select it; dispatch goes on."""

    @pytest.mark.parametrize(
        ("selector", "properties"),
        [
            ("s * 2 > 1 OR TRUE", {"s": "abc"}),  # Java: "Cannot convert value: abc into a number"
            ("big + 1.0 > 0", {"big": 10**400}),  # no float holds it
        ],
    )
    async def test_the_send_succeeds_and_another_consumer_gets_the_message(
        self, broker: Broker, conn: Connection, selector: str, properties: dict[str, object]
    ) -> None:
        session = await conn.create_session(AckMode.AUTO)
        picky = await session.create_consumer("q", selector=selector)
        plain = await session.create_consumer("q")
        producer = await session.create_producer("q")
        await producer.send("hello", properties=properties)  # type: ignore[arg-type]
        received = await plain.receive(timeout=0)
        assert received is not None and received.body == "hello"
        assert await picky.receive(timeout=0) is None

    async def test_a_failing_selector_alone_leaves_the_message_queued(self, broker: Broker, conn: Connection) -> None:
        """With no other consumer the message waits, as a non-matching one does; a later consumer gets it."""
        session = await conn.create_session(AckMode.AUTO)
        picky = await session.create_consumer("q", selector="s * 2 > 1 OR TRUE")
        await (await session.create_producer("q")).send("hello", properties={"s": "abc"})
        assert await picky.receive(timeout=0) is None
        late = await session.create_consumer("q")
        received = await late.receive(timeout=0)
        assert received is not None and received.body == "hello"


class TestSelectorSize:
    async def test_a_selector_over_the_limit_is_refused_naming_it(self, conn: Connection) -> None:
        session = await conn.create_session()
        limit = max_selector_length()
        text = "a = '" + "x" * limit + "'"
        with pytest.raises(InvalidSelector) as caught:
            await session.create_consumer("q", selector=text)
        assert caught.value.limit == limit
        assert str(limit) in str(caught.value)
