"""Composite destinations (``a,b``, ``queue://a,topic://b``) for sends, through the driver for every edge: a copy to
each part, with the part as its destination, and all or nothing (issue 15: "a composite send is partly applied after
an error"). The recordings ``composite_send_*`` replay the visible behaviour; these tests the refusals."""

from __future__ import annotations

import pytest

from minibroker import Broker, Destination, DestinationPolicy, ManualClock
from minibroker.client import connect
from minibroker.errors import AccessDenied, InvalidDestination, LimitExceeded
from minibroker.message import composite_parts
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User


class TestParts:
    @pytest.mark.parametrize(
        ("text", "parts"),
        [
            ("a,b", ["queue://a", "queue://b"]),
            ("queue://a,topic://b", ["queue://a", "topic://b"]),
            ("topic://a,b,queue://c", ["topic://a", "topic://b", "queue://c"]),
            ("a,a", ["queue://a"]),
            ("orders", ["queue://orders"]),
        ],
    )
    def test_parts_take_the_composites_kind_unless_prefixed(self, text: str, parts: list[str]) -> None:
        assert [str(p) for p in composite_parts(Destination.parse(text))] == parts

    @pytest.mark.parametrize("text", ["a,", ",b", "a,queue://", "a, b"])
    def test_an_empty_or_padded_part_is_refused(self, text: str) -> None:
        with pytest.raises(InvalidDestination):
            Destination.parse(text)


async def test_a_copy_to_each_part_with_its_own_destination() -> None:
    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        topic = await session.create_consumer("topic://TB")
        producer = await session.create_producer("QA,topic://TB")
        message_id = await producer.send("m1")
        copy = await topic.receive(timeout=5)
        assert copy is not None and copy.message_id == message_id and copy.destination == Destination.topic("TB")
        [queued] = broker.queue("QA").browse()
        assert queued.message_id == message_id and queued.destination == Destination.queue("QA")
        assert not broker.queue("QA,topic://TB").exists


async def test_a_part_the_user_may_not_write_refuses_the_whole_send() -> None:
    users = {"app": User("pw", {"apps"})}
    entries = [AuthorizationEntry("QA", read="apps", write="apps", admin="apps")]
    async with Broker(plugins=[AuthPlugin(users, entries)]) as broker:
        async with await connect(broker, user="app", password="pw") as conn:
            producer = await (await conn.create_session()).create_producer("QA,QB")
            with pytest.raises(AccessDenied, match="QB"):
                await producer.send("m1")
        assert broker.queue("QA").size == 0


async def test_a_full_part_failing_fast_refuses_the_whole_send() -> None:
    policies = {"QB": DestinationPolicy(memory_limit=1, send_fail_if_no_space=True)}
    async with Broker(clock=ManualClock(autojump=True), policies=policies) as broker:
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer()
            await producer.send("fills QB", destination="QB")
            with pytest.raises(LimitExceeded, match="QB"):
                await producer.send("m1", destination="QA,QB")
        assert broker.queue("QA").size == 0 and broker.queue("QB").size == 1
