"""The transport conformance kit: every scenario runs over the in-process link, the native TCP server and STOMP (and
the topic scenarios over MQTT too), each on an open broker and on one behind the security plugins.

An edge that answers differently from the others re-implements something the driver owns; the flow-control
scenarios were written for the STOMP connector, which refused a SEND to a full queue at once instead of making it
wait as the other edges do (and as ActiveMQ does).
"""

from __future__ import annotations

import asyncio

import pytest
from support.edges import TIMEOUT, Edge, EdgeFactory, Refused, TopicEdgeFactory
from support.waiting import until

from minibroker import Broker, ManualClock


async def receive_bodies(edge: Edge, queue: str, count: int) -> list[str]:
    sub = await edge.subscribe(queue)
    return [(await sub.receive()).body for _ in range(count)]


class TestSendReceive:
    async def test_messages_arrive_in_order(self, edges: EdgeFactory) -> None:
        edge = await edges.open()
        for body in ("m1", "m2", "m3"):
            await edge.send("orders", body)
        assert await receive_bodies(edge, "orders", 3) == ["m1", "m2", "m3"]

    async def test_between_two_connections(self, edges: EdgeFactory, broker: Broker) -> None:
        producer, consumer = await edges.open(), await edges.open()
        sub = await consumer.subscribe("orders")
        await producer.send("orders", "hello")
        assert (await sub.receive()).body == "hello"
        assert await sub.nothing_waiting()
        assert broker.queue("orders").size == 0  # auto ack


class TestAckModes:
    async def test_client_ack_settles_everything_up_to_the_message(self, edges: EdgeFactory, broker: Broker) -> None:
        edge = await edges.open()
        for body in ("m1", "m2", "m3"):
            await edge.send("orders", body)
        sub = await edge.subscribe("orders", ack="client")
        got = [await sub.receive() for _ in range(2)]  # m3 stays prefetched: JMS acks what was delivered
        await sub.ack(got[1])
        await edge.barrier()
        assert [m.body for m in broker.queue("orders").browse()] == ["m3"]

    async def test_individual_ack_settles_one_message(self, edges: EdgeFactory, broker: Broker) -> None:
        edge = await edges.open()
        for body in ("m1", "m2", "m3"):
            await edge.send("orders", body)
        sub = await edge.subscribe("orders", ack="individual")
        got = [await sub.receive() for _ in range(3)]
        await sub.ack(got[1])
        await edge.barrier()
        assert [m.body for m in broker.queue("orders").browse()] == ["m1", "m3"]

    async def test_unacked_messages_come_back_redelivered(self, edges: EdgeFactory) -> None:
        edge = await edges.open()
        await edge.send("orders", "m1")
        sub = await edge.subscribe("orders", ack="client")
        first = await sub.receive()
        assert not first.redelivered
        await sub.close()
        again = await (await edge.subscribe("orders", ack="client")).receive()
        assert again.body == "m1" and again.redelivered


class TestTransactions:
    async def test_a_committed_send_arrives(self, edges: EdgeFactory, broker: Broker) -> None:
        edge = await edges.open()
        tx = await edge.begin()
        await edge.send("orders", "in-tx", transaction=tx)
        await edge.barrier()
        assert broker.queue("orders").size == 0
        await edge.commit(tx)
        assert await receive_bodies(edge, "orders", 1) == ["in-tx"]

    async def test_a_rolled_back_send_never_arrives(self, edges: EdgeFactory, broker: Broker) -> None:
        edge = await edges.open()
        tx = await edge.begin()
        await edge.send("orders", "dropped", transaction=tx)
        await edge.rollback(tx)
        await edge.send("orders", "kept")
        assert await receive_bodies(edge, "orders", 1) == ["kept"]
        await edge.barrier()
        assert broker.queue("orders").size == 0

    async def test_an_ack_in_a_transaction_settles_at_commit(self, edges: EdgeFactory, broker: Broker) -> None:
        edge = await edges.open()
        await edge.send("orders", "m1")
        tx = await edge.begin()
        sub = await edge.subscribe("orders", ack="individual", transaction=tx)
        await sub.ack(await sub.receive())
        await edge.barrier()
        assert broker.queue("orders").size == 1
        await edge.commit(tx)
        await edge.barrier()
        assert broker.queue("orders").size == 0


class TestBrowse:
    async def test_a_browser_sees_without_consuming(self, edges: EdgeFactory, broker: Broker) -> None:
        edge = await edges.open()
        for body in ("m1", "m2"):
            await edge.send("orders", body)
        assert await edge.browse("orders") == ["m1", "m2"]
        assert await edge.browse("nowhere") == []
        assert broker.queue("orders").size == 2


class TestExpiry:
    async def test_an_expired_message_is_never_delivered(
        self, edges: EdgeFactory, broker: Broker, clock: ManualClock
    ) -> None:
        edge = await edges.open()
        await edge.send("orders", "stale", ttl=10.0)
        await edge.send("orders", "fresh")
        await clock.advance(11.0)
        sub = await edge.subscribe("orders")
        assert (await sub.receive()).body == "fresh"
        assert await sub.nothing_waiting()
        assert broker.queue("orders").expired == 1


class TestDeadLetters:
    async def test_a_rejected_message_goes_to_the_dlq(self, edges: EdgeFactory, broker: Broker) -> None:
        edge = await edges.open()
        await edge.send("orders", "poison")
        sub = await edge.subscribe("orders", ack="client")
        await sub.reject(await sub.receive())
        await until(lambda: broker.queue("ActiveMQ.DLQ").size == 1)
        [letter] = broker.queue("ActiveMQ.DLQ").browse()
        assert letter.body in ("poison", b"poison") and broker.queue("orders").size == 0


class TestBadInput:
    async def test_an_invalid_selector_is_refused_and_the_connection_goes_on(self, edges: EdgeFactory) -> None:
        edge = await edges.open()
        with pytest.raises(Refused):
            await edge.subscribe("orders", selector="color = = 'red'")
        await edge.send("orders", "still-works")
        assert await receive_bodies(edge, "orders", 1) == ["still-works"]


class TestFlowControl:
    """A queue over its memory limit (one byte here: one message fills it) makes producers wait, on every edge."""

    async def test_a_send_waits_until_a_consumer_frees_room(self, edges: EdgeFactory, broker: Broker) -> None:
        producer, consumer = await edges.open(), await edges.open()
        await producer.send("waiting.q", "first")
        blocked = asyncio.create_task(producer.send("waiting.q", "second"))
        await until(lambda: broker.waiting_producers == 1)
        assert not blocked.done() and broker.queue("waiting.q").size == 1
        sub = await consumer.subscribe("waiting.q")
        assert (await sub.receive()).body == "first"  # auto ack: room again
        await asyncio.wait_for(blocked, TIMEOUT)
        assert broker.waiting_producers == 0
        assert (await sub.receive()).body == "second"

    async def test_a_waiting_send_fails_after_the_policy_timeout(
        self, edges: EdgeFactory, broker: Broker, clock: ManualClock
    ) -> None:
        producer = await edges.open()
        await producer.send("timing.q", "first")
        blocked = asyncio.create_task(producer.send("timing.q", "second"))
        await until(lambda: broker.waiting_producers == 1)
        await clock.advance(29.0)
        assert not blocked.done()
        await clock.advance(1.0)
        with pytest.raises(Refused, match=r"no space freed within 30\.0 s"):
            await asyncio.wait_for(blocked, TIMEOUT)
        assert broker.queue("timing.q").size == 1
        await producer.send("other", "the connection still works")

    async def test_fail_fast_refuses_at_once(self, edges: EdgeFactory, broker: Broker) -> None:
        producer = await edges.open()
        await producer.send("failing.q", "first")
        with pytest.raises(Refused, match=r"Memory Limit reached on queue://failing\.q"):
            await producer.send("failing.q", "second")
        assert broker.waiting_producers == 0 and broker.queue("failing.q").size == 1
        await producer.send("other", "the connection still works")


class TestAuthorization:
    """On the secured broker, every edge gives the same answer, with ActiveMQ's text, because every edge asks the
    same connection object (issue 29)."""

    async def test_what_a_user_may_not_touch_is_refused_alike(
        self, edges: EdgeFactory, broker: Broker, security: str
    ) -> None:
        if security == "open":
            edge = await edges.open()
            await edge.send("secret.plans", "anyone may, without security")
            assert broker.queue("secret.plans").size == 1
            return
        app = await edges.open()
        await app.send("orders", "for guests")
        await app.send("secret.plans", "for apps")
        guest = await edges.open(("guest", "guest-pw"))
        with pytest.raises(Refused, match=r"^User guest is not authorized to write to: queue://orders$"):
            await guest.send("orders", "x")
        with pytest.raises(Refused, match=r"^User guest is not authorized to read from: orders,queue://secret\.plans$"):
            await guest.subscribe("orders,queue://secret.plans")
        with pytest.raises(Refused, match=r"^User guest is not authorized to read from: queue://secret\.plans$"):
            await guest.browse("secret.plans")
        assert await receive_bodies(guest, "orders", 1) == ["for guests"]
        with pytest.raises(Refused, match=r"or password is invalid"):
            await edges.open(("guest", "wrong"))
        assert [m.body for m in broker.browse_all("secret.plans")] == ["for apps"]


class TestTopics:
    """What every edge, MQTT included, can say of topics: a subscriber gets what is published after it subscribed,
    in order; a wildcard subscriber reads the topics under it; on the secured broker, what a user may not read is
    refused, or (a wildcard) left out."""

    async def test_a_subscriber_gets_what_is_published_in_order(self, topic_edges: TopicEdgeFactory) -> None:
        subscriber = await (await topic_edges.open()).subscribe_topic("news.sport")
        publisher = await topic_edges.open()
        for body in ("n1", "n2", "n3"):
            await publisher.publish("news.sport", body)
        assert [await subscriber.receive() for _ in range(3)] == ["n1", "n2", "n3"]
        assert await subscriber.nothing_waiting()

    async def test_a_wildcard_subscriber_reads_the_topics_under_it(self, topic_edges: TopicEdgeFactory) -> None:
        subscriber = await (await topic_edges.open()).subscribe_topic("news.*")
        publisher = await topic_edges.open()
        await publisher.publish("news.sport", "s")
        await publisher.publish("weather.today", "not news")
        await publisher.publish("news.tech", "t")
        assert [await subscriber.receive() for _ in range(2)] == ["s", "t"]
        assert await subscriber.nothing_waiting()

    async def test_what_a_user_may_not_read_is_refused_or_left_out(
        self, topic_edges: TopicEdgeFactory, security: str
    ) -> None:
        guest = await topic_edges.open(("guest", "guest-pw"))
        if security == "open":  # without security the same subscription is anyone's
            weather = await guest.subscribe_topic("weather.today")
            await (await topic_edges.open()).publish("weather.today", "for anyone")
            assert await weather.receive() == "for anyone"
            return
        with pytest.raises(Refused):
            await guest.subscribe_topic("weather.today")
        wide = await guest.subscribe_topic("*.*")  # allowed: news.* under it grants read
        app = await topic_edges.open()
        await app.publish("weather.today", "not for guests")
        await app.publish("news.sport", "for guests")
        assert await wide.receive() == "for guests"
        assert await wide.nothing_waiting()
