"""Consumers through the public client API: receive timeouts on the virtual clock, listeners, ``async for``,
closing (what goes back to the broker, with which counter), topics, priority, browsing and the broker's history.
"""

from __future__ import annotations

import asyncio

import pytest
from support.clientkit import fill
from support.clientkit import take as drain

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, Connection, ReceivedMessage, RedeliveryPolicy, connect


def view(msgs: list[ReceivedMessage]) -> list[tuple[str | bytes, int]]:
    return [(m.body, m.delivery_count) for m in msgs]


class TestReceiveTimeouts:
    async def test_timeout_zero_does_not_wait(self, conn: Connection) -> None:
        """receive(timeout=0) returns None at once when nothing is there, the message when one is."""
        consumer = await (await conn.create_session()).create_consumer("q")
        assert await consumer.receive(timeout=0) is None
        assert await consumer.receive_immediately() is None
        await fill(conn, 1)
        msg = await consumer.receive(timeout=0)
        assert msg is not None and msg.body == "m1"

    async def test_timeout_follows_the_manual_clock(self, conn: Connection, clock: ManualClock) -> None:
        """receive(5) returns None only once the virtual clock has moved 5 s; nothing happens in between."""
        consumer = await (await conn.create_session()).create_consumer("q")
        task = asyncio.create_task(consumer.receive(timeout=5))
        await clock.advance(4.875)
        assert not task.done()
        await clock.advance(0.125)
        assert task.done() and task.result() is None

    async def test_message_arriving_before_the_timeout(self, conn: Connection, clock: ManualClock) -> None:
        """A message sent while receive(5) waits is returned at once."""
        consumer = await (await conn.create_session()).create_consumer("q")
        task = asyncio.create_task(consumer.receive(timeout=5))
        await clock.advance(2)
        await fill(conn, 1)
        await clock.advance(0)
        assert task.done()
        assert (await task).body == "m1"  # type: ignore[union-attr]

    async def test_receive_none_waits_forever(self, conn: Connection, clock: ManualClock) -> None:
        """receive(None) has no deadline: hours of virtual time pass; it can be cancelled."""
        consumer = await (await conn.create_session()).create_consumer("q")
        task = asyncio.create_task(consumer.receive(None))
        await clock.advance(10 * 3600)
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await fill(conn, 1)
        assert (await consumer.receive(timeout=0)).body == "m1"  # type: ignore[union-attr]

    async def test_receive_none_returns_the_next_message(self, conn: Connection, clock: ManualClock) -> None:
        """receive() (no timeout) returns whenever a message comes, however late."""
        consumer = await (await conn.create_session()).create_consumer("q")
        task = asyncio.create_task(consumer.receive())
        await clock.advance(3600)
        await fill(conn, 1)
        assert (await task).body == "m1"  # type: ignore[union-attr]

    async def test_receive_wakes_up_when_consumer_closes(self, conn: Connection, clock: ManualClock) -> None:
        """A receive waiting forever returns None when its consumer is closed."""
        consumer = await (await conn.create_session()).create_consumer("q")
        task = asyncio.create_task(consumer.receive())
        await clock.advance(1)
        await consumer.close()
        assert await task is None


class TestPullConsumer:
    async def test_prefetch_zero_receive(self, broker: Broker, conn: Connection, clock: ManualClock) -> None:
        """prefetch 0 (prefetch_zero_pull.json): nothing in flight until asked; no-wait null; receive(t) null at t."""
        consumer = await (await conn.create_session()).create_consumer("q", prefetch=0)
        assert await consumer.receive(timeout=0) is None
        await fill(conn, 1)
        assert (broker.queue("q").size, broker.queue("q").inflight) == (1, 0)
        assert (await consumer.receive(timeout=1)).body == "m1"  # type: ignore[union-attr]
        task = asyncio.create_task(consumer.receive(timeout=0.25))
        await clock.advance(0.125)
        assert not task.done() and broker.queue("q").inflight == 0
        await clock.advance(0.125)
        assert task.done() and task.result() is None

    async def test_prefetch_zero_message_during_the_wait(self, conn: Connection, clock: ManualClock) -> None:
        """A message sent while a pull waits answers it."""
        consumer = await (await conn.create_session()).create_consumer("q", prefetch=0)
        task = asyncio.create_task(consumer.receive(timeout=1))
        await clock.advance(0.1)
        await fill(conn, 1)
        await clock.advance(0)
        assert (await task).body == "m1"  # type: ignore[union-attr]

    async def test_two_pull_consumers_share(self, broker: Broker, conn: Connection) -> None:
        """Each pull takes exactly one message: two prefetch-0 consumers alternate without holding extras."""
        await fill(conn, 4)
        session = await conn.create_session()
        c1 = await session.create_consumer("q", prefetch=0)
        c2 = await session.create_consumer("q", prefetch=0)
        got = []
        for c in (c1, c2, c1, c2):
            got.append((await c.receive(timeout=0)).body)  # type: ignore[union-attr]
            assert broker.queue("q").inflight == 0
        assert got == ["m1", "m2", "m3", "m4"]


class TestListeners:
    async def test_sync_listener(self, broker: Broker, conn: Connection) -> None:
        """A plain function listener gets every message, in order."""
        await fill(conn, 3)
        seen: list[str | bytes] = []
        consumer = await (await conn.create_session()).create_consumer("q")
        consumer.set_listener(lambda m: seen.append(m.body))
        await broker.run_ready()
        assert seen == ["m1", "m2", "m3"]
        await fill(conn, 1)
        await broker.run_ready()
        assert seen == ["m1", "m2", "m3", "m1"]
        assert broker.queue("q").size == 0

    async def test_async_listener(self, broker: Broker, conn: Connection, clock: ManualClock) -> None:
        """A coroutine listener is awaited; the next message waits until it finishes (one at a time per session)."""
        await fill(conn, 2)
        events: list[str] = []

        async def listener(msg: ReceivedMessage) -> None:
            events.append(f"start {msg.body}")
            fut = asyncio.get_running_loop().create_future()
            clock.call_at(clock.now() + 1, lambda: fut.set_result(None))
            await fut
            events.append(f"end {msg.body}")

        consumer = await (await conn.create_session()).create_consumer("q")
        consumer.set_listener(listener)
        await broker.run_ready()
        assert events == ["start m1"]
        assert broker.queue("q").size == 2
        await clock.advance(1)
        assert events == ["start m1", "end m1", "start m2"]
        assert broker.queue("q").size == 1
        await clock.advance(1)
        assert events[-1] == "end m2"
        assert broker.queue("q").size == 0

    async def test_listener_removed_allows_receive(self, conn: Connection) -> None:
        """set_listener(None) takes the listener away; receive works again."""
        consumer = await (await conn.create_session()).create_consumer("q")
        consumer.set_listener(lambda m: None)
        consumer.set_listener(None)
        assert await consumer.receive(timeout=0) is None

    async def test_listener_exception_in_auto_redelivers_then_dlq(self, broker: Broker, clock: ManualClock) -> None:
        """AUTO listener that raises: redelivered after the delay; past the maximum, to the DLQ with the cause
        (listener_exception_auto_ack.json)."""
        policy = RedeliveryPolicy(maximum_redeliveries=2, initial_redelivery_delay=0.1, redelivery_delay=0.1)
        async with await connect(broker, redelivery_policy=policy) as conn:
            await fill(conn, 1)
            counts: list[int] = []

            def listener(msg: ReceivedMessage) -> None:
                counts.append(msg.delivery_count)
                raise RuntimeError("boom")

            consumer = await (await conn.create_session()).create_consumer("q")
            consumer.set_listener(listener)
            await broker.run_ready()
            assert counts == [1]
            await clock.advance(0.1)
            assert counts == [1, 2]
            await clock.advance(0.1)
            assert counts == [1, 2, 3]
            await clock.advance(10)
            assert counts == [1, 2, 3]
            [dead] = broker.queue("ActiveMQ.DLQ").browse()
            assert dead.properties["dlqDeliveryFailureCause"] == (
                f"java.lang.Throwable: Delivery[3] exceeds redelivery policy limit:{policy.activemq_string()}, "
                "cause:RuntimeError: boom"
            )
            assert [e.error.args for e in conn.listener_errors] == [("boom",)] * 3
            assert (broker.queue("q").size, broker.queue("q").dequeued) == (0, 1)

    async def test_listener_exception_in_client_mode_counts_as_consumed(
        self, broker: Broker, conn: Connection, clock: ManualClock
    ) -> None:
        """CLIENT listener that raises: no redelivery; the message is acked by the next acknowledge()."""
        await fill(conn, 2)
        seen: list[ReceivedMessage] = []

        def listener(msg: ReceivedMessage) -> None:
            seen.append(msg)
            if msg.body == "m1":
                raise ValueError("nope")

        session = await conn.create_session(AckMode.CLIENT)
        consumer = await session.create_consumer("q")
        consumer.set_listener(listener)
        await broker.run_ready()
        await clock.advance(5)
        assert [m.body for m in seen] == ["m1", "m2"]
        await seen[1].acknowledge()
        assert broker.queue("q").size == 0

    async def test_listener_waits_for_connection_start(self, broker: Broker) -> None:
        """Listeners get nothing until the connection is started."""
        async with await connect(broker, start=False) as conn:
            await fill(conn, 1)
            seen: list[str | bytes] = []
            consumer = await (await conn.create_session()).create_consumer("q")
            consumer.set_listener(lambda m: seen.append(m.body))
            await broker.run_ready()
            assert seen == []
            await conn.start()
            await broker.run_ready()
            assert seen == ["m1"]


class TestAsyncIteration:
    async def test_async_for(self, broker: Broker, conn: Connection) -> None:
        """``async for`` yields messages (acked in AUTO) and ends when the consumer is closed."""
        await fill(conn, 3)
        consumer = await (await conn.create_session()).create_consumer("q")
        bodies = []
        async for msg in consumer:
            bodies.append(msg.body)
            if len(bodies) == 3:
                await consumer.close()
        assert bodies == ["m1", "m2", "m3"]
        assert broker.queue("q").size == 0


class TestClose:
    async def _deliver_two_of_three(self, conn: Connection, mode: AckMode = AckMode.CLIENT) -> tuple[object, object]:
        await fill(conn, 3)
        session = await conn.create_session(mode)
        consumer = await session.create_consumer("q")
        assert await consumer.receive(timeout=0) is not None
        assert await consumer.receive(timeout=0) is not None
        return session, consumer

    async def _next_view(self, broker: Broker) -> list[tuple[str | bytes, int]]:
        async with await connect(broker) as other:
            consumer = await (await other.create_session(AckMode.CLIENT)).create_consumer("q")
            return view(await drain(consumer))

    async def test_consumer_close(self, broker: Broker, conn: Connection) -> None:
        """Closing a CLIENT consumer: delivered m1,m2 come back redelivered, prefetched m3 not
        (consumer_close_unacked_client_ack.json)."""
        _, consumer = await self._deliver_two_of_three(conn)
        assert (broker.queue("q").size, broker.queue("q").inflight) == (3, 3)
        await consumer.close()  # type: ignore[attr-defined]
        assert (broker.queue("q").size, broker.queue("q").inflight, broker.queue("q").consumers) == (3, 0, 0)
        assert await self._next_view(broker) == [("m1", 2), ("m2", 2), ("m3", 1)]

    async def test_session_close(self, broker: Broker, conn: Connection) -> None:
        """Closing the session gives back the same way."""
        session, _ = await self._deliver_two_of_three(conn)
        await session.close()  # type: ignore[attr-defined]
        assert await self._next_view(broker) == [("m1", 2), ("m2", 2), ("m3", 1)]

    async def test_connection_close(self, broker: Broker) -> None:
        """Closing the connection gives back the same way."""
        conn = await connect(broker)
        await self._deliver_two_of_three(conn)
        await conn.close()
        assert broker.statistics().connections == 0
        assert await self._next_view(broker) == [("m1", 2), ("m2", 2), ("m3", 1)]

    async def test_close_after_acking_the_last_delivered(self, broker: Broker, conn: Connection) -> None:
        """INDIVIDUAL: when the last delivered message was acked, the unacked earlier one keeps its counter."""
        _, consumer = await self._deliver_two_of_three(conn, AckMode.INDIVIDUAL)
        await consumer.close()  # type: ignore[attr-defined]
        msgs = await self._next_view(broker)
        assert msgs == [("m1", 2), ("m2", 2), ("m3", 1)]

    async def test_auto_consumer_close_gives_back_only_prefetched(self, broker: Broker, conn: Connection) -> None:
        """AUTO: received messages are acked; closing gives back prefetched ones without raising their counter."""
        _, consumer = await self._deliver_two_of_three(conn, AckMode.AUTO)
        await consumer.close()  # type: ignore[attr-defined]
        assert await self._next_view(broker) == [("m3", 1)]

    async def test_repeated_close_counts_each_time(self, broker: Broker, clock: ManualClock) -> None:
        """Close-redelivery raises the broker counter each time and is not limited by the client policy in a
        non-transacted session (consumer_close_redelivery_count_exceeded.json)."""
        policy = RedeliveryPolicy(maximum_redeliveries=2, initial_redelivery_delay=0.1, redelivery_delay=0.1)
        async with await connect(broker, redelivery_policy=policy) as conn:
            await fill(conn, 1)
            counts = []
            for _ in range(5):
                session = await conn.create_session(AckMode.CLIENT)
                consumer = await session.create_consumer("q")
                msg = await consumer.receive(timeout=0)
                assert msg is not None
                counts.append(msg.redelivery_counter)
                await session.close()
            assert counts == [0, 1, 2, 3, 4]
            assert (broker.queue("q").size, broker.queue("q").consumers) == (1, 0)
            assert not broker.queue("ActiveMQ.DLQ").exists

    async def test_connection_close_uses_the_highest_last_delivered(self, broker: Broker) -> None:
        """connection.close() sends one last-delivered id for all sessions (the highest): a consumer whose own last
        delivery is below it gets no counter raised, unlike closing its session (§1 "Close")."""
        conn = await connect(broker)
        s1 = await conn.create_session(AckMode.CLIENT)
        s2 = await conn.create_session(AckMode.CLIENT)
        c1 = await s1.create_consumer("q", prefetch=1)
        c2 = await s2.create_consumer("q", prefetch=1)
        await fill(conn, 2)
        assert (await c1.receive(timeout=0)).body == "m1"  # type: ignore[union-attr]
        assert (await c2.receive(timeout=0)).body == "m2"  # type: ignore[union-attr]
        await conn.close()
        assert sorted(await self._next_view(broker)) == [("m1", 1), ("m2", 2)]

    async def test_session_closes_use_their_own_last_delivered(self, broker: Broker, conn: Connection) -> None:
        """The same deliveries, sessions closed one by one: both messages come back redelivered."""
        s1 = await conn.create_session(AckMode.CLIENT)
        s2 = await conn.create_session(AckMode.CLIENT)
        c1 = await s1.create_consumer("q", prefetch=1)
        c2 = await s2.create_consumer("q", prefetch=1)
        await fill(conn, 2)
        assert (await c1.receive(timeout=0)).body == "m1"  # type: ignore[union-attr]
        assert (await c2.receive(timeout=0)).body == "m2"  # type: ignore[union-attr]
        await s1.close()
        await s2.close()
        assert sorted(await self._next_view(broker)) == [("m1", 2), ("m2", 2)]

    async def test_transport_failure_counts_everything(self, broker: Broker) -> None:
        """A dropped transport (last delivered unknown): delivered and merely prefetched messages all get +1."""
        conn = await connect(broker)
        await self._deliver_two_of_three(conn)
        conn._link.drop()  # type: ignore[attr-defined]
        assert conn.closed
        assert await self._next_view(broker) == [("m1", 2), ("m2", 2), ("m3", 2)]

    async def test_closed_consumer_refuses_receive(self, conn: Connection) -> None:
        """receive() on a closed consumer raises ConsumerClosed."""
        from minibroker.errors import ConsumerClosed

        consumer = await (await conn.create_session()).create_consumer("q")
        await consumer.close()
        with pytest.raises(ConsumerClosed):
            await consumer.receive(timeout=0)


class TestConsumerOptions:
    async def test_consumer_priority(self, conn: Connection) -> None:
        """A higher-priority consumer is served first, the other gets what does not fit its window."""
        session = await conn.create_session()
        low = await session.create_consumer("q", prefetch=10)
        high = await session.create_consumer("q", prefetch=2, priority=9)
        await fill(conn, 4)
        assert [m.body for m in await drain(high)] == ["m1", "m2"]
        assert [m.body for m in await drain(low)] == ["m3", "m4"]

    async def test_exclusive_consumer(self, conn: Connection) -> None:
        """An exclusive consumer receives everything; when it closes, the next exclusive one takes over."""
        session = await conn.create_session(AckMode.CLIENT)
        plain = await session.create_consumer("q")
        first = await session.create_consumer("q", exclusive=True)
        second = await session.create_consumer("q", exclusive=True)
        await fill(conn, 2)
        assert [m.body for m in await drain(first)] == ["m1", "m2"]
        assert await plain.receive(timeout=0) is None and await second.receive(timeout=0) is None
        await first.close()
        assert view(await drain(second)) == [("m1", 2), ("m2", 2)]

    async def test_selector(self, broker: Broker, conn: Connection) -> None:
        """A selector consumer gets matching messages only; the others stay queued."""
        session = await conn.create_session()
        producer = await session.create_producer("q")
        await producer.send("blue", properties={"color": "blue"})
        await producer.send("red", properties={"color": "red"}, priority=7)
        consumer = await session.create_consumer("q", selector="color = 'red' AND JMSPriority > 5")
        assert [m.body for m in await drain(consumer)] == ["red"]
        assert [m.body for m in broker.queue("q").browse()] == ["blue"]

    async def test_invalid_selector(self, broker: Broker, conn: Connection) -> None:
        """A selector that does not parse is refused at creation (InvalidSelector); no subscription is left."""
        from minibroker.errors import InvalidSelector

        session = await conn.create_session()
        with pytest.raises(InvalidSelector):
            await session.create_consumer("q", selector="color = = 'red'")
        assert broker.statistics().consumers == 0 and session.consumers == []

    async def test_message_groups(self, conn: Connection) -> None:
        """message_groups.json: groups stick to a consumer; the first of each is flagged JMSXGroupFirstForConsumer."""
        session = await conn.create_session()
        a = await session.create_consumer("q", prefetch=10)
        b = await session.create_consumer("q", prefetch=10)
        producer = await session.create_producer("q")
        for i in (1, 2, 3):
            await producer.send(f"G1-{i}", group_id="G1")
            await producer.send(f"G2-{i}", group_id="G2")
        got_a = await drain(a)
        got_b = await drain(b)
        assert [m.body for m in got_a] == ["G1-1", "G1-2", "G1-3"]
        assert [m.body for m in got_b] == ["G2-1", "G2-2", "G2-3"]
        for got, group in ((got_a, "G1"), (got_b, "G2")):
            assert [m.get_property("JMSXGroupFirstForConsumer", False) for m in got] == [True, False, False]
            assert {m.get_property("JMSXGroupID") for m in got} == {group}


class TestTopics:
    async def test_subscribers_get_what_is_published_while_subscribed(self, conn: Connection) -> None:
        """topic_basic.json: t0 published before subscribing is lost; both subscribers get t1 and t2."""
        session = await conn.create_session()
        producer = await session.create_producer("topic://T")
        await producer.send("t0")
        a = await session.create_consumer("topic://T")
        b = await session.create_consumer("topic://T")
        await producer.send("t1")
        await producer.send("t2")
        assert [m.body for m in await drain(a)] == ["t1", "t2"]
        assert [m.body for m in await drain(b)] == ["t1", "t2"]

    async def test_topic_default_prefetch(self, broker: Broker, conn: Connection) -> None:
        """Topic consumers default to prefetch 32767, queue consumers to 1000 (ActiveMQPrefetchPolicy)."""
        session = await conn.create_session()
        t = await session.create_consumer("topic://T")
        q = await session.create_consumer("q")
        assert (t.prefetch, q.prefetch) == (32767, 1000)
        assert broker.core.subscriptions[t.consumer_id].prefetch == 32767


class TestPriority:
    async def test_client_side_priority_reordering(self, broker: Broker) -> None:
        """message_priority_supported: the prefetch buffer is reordered by priority (priority.json, NOPRIO.C)."""
        async with await connect(broker, message_priority_supported=True) as conn:
            producer = await (await conn.create_session()).create_producer("q")
            for body, prio in (("p1", 1), ("p9", 9), ("p4", 4)):
                await producer.send(body, priority=prio)
            consumer = await (await conn.create_session()).create_consumer("q")
            assert [m.body for m in await drain(consumer)] == ["p9", "p4", "p1"]

    async def test_fifo_by_default(self, broker: Broker, conn: Connection) -> None:
        """By default neither broker nor client reorders by priority (priority.json, NOPRIO.A)."""
        producer = await (await conn.create_session()).create_producer("q")
        for body, prio in (("p1", 1), ("p9", 9), ("p4", 4)):
            await producer.send(body, priority=prio)
        consumer = await (await conn.create_session()).create_consumer("q")
        assert [m.body for m in await drain(consumer)] == ["p1", "p9", "p4"]


class TestBrowse:
    async def test_browser_sees_queued_and_in_flight(self, broker: Broker, conn: Connection) -> None:
        """queue_browser.json: a browser sees every unacked message, in flight included, without consuming."""
        await fill(conn, 3)
        session = await conn.create_session(AckMode.CLIENT)
        browser = await session.create_browser("q")
        assert [m.body for m in await browser.messages()] == ["m1", "m2", "m3"]
        assert broker.queue("q").size == 3
        consumer = await session.create_consumer("q", prefetch=1)
        msg = await consumer.receive(timeout=0)
        assert msg is not None
        assert [m.body for m in await browser.messages()] == ["m1", "m2", "m3"]
        assert [m.body for m in broker.queue("q").browse()] == ["m1", "m2", "m3"]
        await msg.acknowledge()
        assert [m.body for m in await browser.messages()] == ["m2", "m3"]
        assert [m.body for m in broker.queue("q").browse()] == ["m2", "m3"]

    async def test_browser_on_stopped_connection_is_empty(self, broker: Broker) -> None:
        """A browser on a connection that is not started sees nothing (§9)."""
        async with await connect(broker, start=False) as conn:
            await fill(conn, 2)
            browser = await (await conn.create_session()).create_browser("q")
            assert await browser.messages() == []
            await conn.start()
            assert len(await browser.messages()) == 2

    async def test_browse_unknown_queue(self, broker: Broker) -> None:
        """Browsing a queue that does not exist gives an empty list."""
        assert broker.queue("nope").browse() == []
        assert not broker.queue("nope").exists


class TestHistory:
    async def test_history_shows_dispatches_and_ack_types(
        self, broker: Broker, conn: Connection, clock: ManualClock
    ) -> None:
        """broker.history(id): sent, dispatched, the DELIVERED/REDELIVERED/STANDARD acks and the counters."""
        [mid] = await fill(conn, 1)
        session = await conn.create_session(AckMode.CLIENT)
        consumer = await session.create_consumer("q", prefetch=1)
        msg = await consumer.receive(timeout=0)
        assert msg is not None and msg.message_id == mid
        await session.recover()
        await clock.advance(1)
        msg = await consumer.receive(timeout=0)
        assert msg is not None
        await msg.acknowledge()
        records = broker.history(mid)
        assert [r.event for r in records][:2] == ["sent", "dispatched"]
        assert [r.ack_type for r in records if r.event == "ack"] == ["DELIVERED", "REDELIVERED", "STANDARD"]
        assert {r.consumer_id for r in records if r.event in ("dispatched", "ack")} == {consumer.consumer_id}
        assert records[-1].time == clock.now()

    async def test_history_of_a_dead_letter(self, broker: Broker, clock: ManualClock) -> None:
        """A poisoned message's history ends with a POISON ack and "dead-lettered" to ActiveMQ.DLQ."""
        policy = RedeliveryPolicy(maximum_redeliveries=0)
        async with await connect(broker, redelivery_policy=policy) as conn:
            [mid] = await fill(conn, 1)
            session = await conn.create_session(AckMode.TRANSACTED)
            consumer = await session.create_consumer("q")
            assert await consumer.receive(timeout=0) is not None
            await session.rollback()
            records = broker.history(mid)
            assert [r.ack_type for r in records if r.event == "ack"][-1] == "POISON"
            assert records[-1].event == "dead-lettered"
            assert records[-1].destination == "queue://ActiveMQ.DLQ"


@pytest.mark.parametrize("error", ["CancelledError", "GeneratorExit"])
async def test_a_listener_raising_a_base_exception_does_not_stop_delivery(error: str) -> None:
    """A listener that lets a CancelledError escape (a timeout inside it, a cancelled helper), or GeneratorExit,
    failed on that message like any exception: the message is redelivered and the session keeps delivering (issues
    15 and 31; before, GeneratorExit ended the session's delivery and left its messages in flight forever)."""
    import asyncio

    from minibroker import Broker, ManualClock
    from minibroker.client import AckMode, connect

    async with Broker(clock=ManualClock(autojump=True)) as broker, await connect(broker) as conn:
        session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
        seen: list[tuple[str, bool]] = []
        done = asyncio.Event()

        async def listener(msg: object) -> None:
            body, redelivered = msg.body, msg.redelivered  # type: ignore[attr-defined]
            seen.append((body, redelivered))
            if body == "first" and not redelivered:
                raise asyncio.CancelledError if error == "CancelledError" else GeneratorExit
            if body == "second":
                done.set()

        consumer = await session.create_consumer("q")
        consumer.set_listener(listener)
        producer = await session.create_producer("q")
        await producer.send("first")
        await producer.send("second")
        await asyncio.wait_for(done.wait(), timeout=10)
        assert seen[0] == ("first", False) and ("first", True) in seen and seen[-1] == ("second", False)
