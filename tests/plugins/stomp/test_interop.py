"""STOMP and the native client on one broker: what one sends, the other receives, headers and properties mapped.

ActiveMQ's mapping (the project's STOMP notes, §4 and §7): a STOMP SEND with ``content-length`` is a BytesMessage
(without, a TextMessage), every unknown header is a String property, ``persistent:true`` is the only way to a
persistent message; a JMS message's properties come out as headers in Java's string form.
"""

from __future__ import annotations

import pytest
from support.stomp_helpers import RawStompClient

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, connect
from minibroker.clock import settle
from minibroker.message import Destination
from minibroker.plugins.stomp import StompServer

pytestmark = pytest.mark.usefixtures("loop_errors")


class TestNativeToStomp:
    async def test_text_message_headers_and_properties(
        self, server: StompServer, broker: Broker, clock: ManualClock
    ) -> None:
        stomp = await RawStompClient.open(server.port)
        await stomp.request("SUBSCRIBE", {"id": "s", "destination": "/queue/N2S"})
        async with await connect(broker) as conn:
            session = await conn.create_session()
            producer = await session.create_producer("N2S")
            message_id = await producer.send(
                "héllo",
                properties={"i": 42, "b": True, "s": "x", "f": 1.5, "big": 2**40, "tiny": 1e-5},
                priority=6,
                correlation_id="corr",
                type="kind",
                reply_to="queue://R",
                ttl=60.0,
                group_id="g",
            )
        msg = await stomp.message()
        h = msg.headers
        assert msg.body == "héllo".encode()
        assert "content-length" not in h  # a TextMessage
        assert h["message-id"] == message_id and h["destination"] == "/queue/N2S"
        assert h["i"] == "42" and h["b"] == "true" and h["s"] == "x" and h["f"] == "1.5"
        assert h["big"] == str(2**40) and h["tiny"] == "1.0E-5"
        assert h["priority"] == "6" and h["correlation-id"] == "corr" and h["type"] == "kind"
        assert h["reply-to"] == "/queue/R" and h["persistent"] == "true"
        assert h["expires"] == str(int(round((clock.now() + 60.0) * 1000)))
        assert h["timestamp"] == str(int(round(clock.now() * 1000)))
        assert "JMSXGroupID" not in h and "JMSXDeliveryCount" not in h and "redelivered" not in h
        await stomp.close()

    async def test_bytes_and_non_persistent(self, server: StompServer, broker: Broker) -> None:
        stomp = await RawStompClient.open(server.port)
        await stomp.request("SUBSCRIBE", {"id": "s", "destination": "/queue/NB"})
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("NB")
            await producer.send(b"\x00\x01bin", persistent=False)
        msg = await stomp.message()
        assert msg.body == b"\x00\x01bin" and msg.headers["content-length"] == "5"
        assert "persistent" not in msg.headers
        await stomp.close()

    async def test_transacted_native_send_is_visible_to_stomp_after_commit(
        self, server: StompServer, broker: Broker
    ) -> None:
        stomp = await RawStompClient.open(server.port)
        await stomp.request("SUBSCRIBE", {"id": "s", "destination": "/queue/NT"})
        async with await connect(broker) as conn:
            session = await conn.create_session(AckMode.SESSION_TRANSACTED)
            producer = await session.create_producer("NT")
            await producer.send("in-tx")
            await stomp.no_message()
            await session.commit()
        assert (await stomp.message()).body == b"in-tx"
        await stomp.close()

    async def test_stomp_selector_on_native_typed_property(self, server: StompServer, broker: Broker) -> None:
        stomp = await RawStompClient.open(server.port)
        await stomp.request("SUBSCRIBE", {"id": "s", "destination": "/queue/NS", "selector": "i > 40"})
        async with await connect(broker) as conn:
            producer = await (await conn.create_session()).create_producer("NS")
            await producer.send("low", properties={"i": 1})
            await producer.send("high", properties={"i": 41})
        assert (await stomp.message()).body == b"high"
        await stomp.no_message()
        await stomp.close()


class TestStompToNative:
    async def test_send_maps_to_a_native_message(self, server: StompServer, broker: Broker, clock: ManualClock) -> None:
        stomp = await RawStompClient.open(server.port)
        expires = int((clock.now() + 30) * 1000)
        await stomp.send(
            "/queue/S2N",
            "bytes-body",
            x_num="5",
            persistent="true",
            priority="8",
            correlation_id="c",
            type="t",
            reply_to="/topic/answers",
            expires=str(expires),
            JMSXGroupID="grp",
        )
        await stomp.request("SEND", {"destination": "/queue/S2N", "x": "y"}, "texte à".encode())
        async with await connect(broker) as conn:
            consumer = await (await conn.create_session()).create_consumer("S2N")
            await settle()
            first = await consumer.receive(timeout=0)
            second = await consumer.receive(timeout=0)
        assert first is not None and second is not None
        assert first.body == b"bytes-body"  # content-length: a BytesMessage
        assert first.properties["x-num"] == "5"  # a String property
        assert first.message.persistent and first.message.priority == 8
        assert first.message.correlation_id == "c" and first.message.type == "t"
        assert first.message.reply_to == Destination.topic("answers")
        assert first.message.expiration == pytest.approx(expires / 1000)
        assert first.message.group_id == "grp" and "JMSXGroupID" in first.properties
        assert second.body == "texte à"  # no content-length: a TextMessage
        assert not second.message.persistent  # STOMP's default
        assert second.properties == {"x": "y"}
        await stomp.close()

    async def test_unparsable_reply_to_is_kept_as_a_property(self, server: StompServer, broker: Broker) -> None:
        stomp = await RawStompClient.open(server.port)
        await stomp.send("/queue/RT", "x", reply_to="somewhere")
        message = broker.queue("RT").browse()[0]
        assert message.reply_to is None and message.properties["reply-to"] == "somewhere"
        await stomp.close()

    async def test_stomp_released_message_reaches_native_consumer_redelivered(
        self, server: StompServer, broker: Broker
    ) -> None:
        stomp = await RawStompClient.open(server.port)
        await stomp.send("/queue/R2N", "m1", persistent="true")
        await stomp.request("SUBSCRIBE", {"id": "s", "destination": "/queue/R2N", "ack": "client"})
        await stomp.message()
        await stomp.disconnect()
        async with await connect(broker) as conn:
            consumer = await (await conn.create_session()).create_consumer("R2N")
            await settle()
            msg = await consumer.receive(timeout=0)
        assert msg is not None and msg.redelivered and msg.delivery_count == 2

    async def test_nack_dead_letter_seen_by_both(self, server: StompServer, broker: Broker) -> None:
        stomp = await RawStompClient.open(server.port)
        await stomp.send("/queue/DL", "poison", persistent="true")
        await stomp.request("SUBSCRIBE", {"id": "s", "destination": "/queue/DL", "ack": "client-individual"})
        msg = await stomp.message()
        await stomp.request("NACK", {"id": msg.headers["ack"]})
        await stomp.request(
            "SUBSCRIBE",
            {"id": "dlq", "destination": "/queue/ActiveMQ.DLQ", "activemq.prefetchSize": "1", "ack": "client"},
        )
        copy = await stomp.message()
        assert copy.headers["original-destination"] == "/queue/DL"
        assert copy.headers["message-id"] == msg.headers["message-id"]
        await stomp.request("UNSUBSCRIBE", {"id": "dlq"})
        async with await connect(broker) as conn:
            consumer = await (await conn.create_session()).create_consumer("ActiveMQ.DLQ")
            await settle()
            native = await consumer.receive(timeout=0)
        assert native is not None and native.body == b"poison"
        assert native.message.original_destination == Destination.queue("DL")
        await stomp.close()

    async def test_native_and_stomp_consumers_share_a_queue(self, server: StompServer, broker: Broker) -> None:
        """Round robin between a STOMP and a native consumer; every message consumed once."""
        stomp = await RawStompClient.open(server.port)
        await stomp.request(
            "SUBSCRIBE",
            {"id": "s", "destination": "/queue/RR", "activemq.prefetchSize": "1", "ack": "client-individual"},
        )
        async with await connect(broker, prefetch=1) as conn:
            session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            consumer = await session.create_consumer("RR")
            producer = await (await conn.create_session()).create_producer("RR")
            for i in range(4):
                await producer.send(f"m{i}")
            got = []
            frame = await stomp.message()
            got.append(frame.body.decode())
            await stomp.request("ACK", {"id": frame.headers["ack"]})
            await settle()
            native = await consumer.receive(timeout=0)
            assert native is not None
            got.append(native.text)
            await native.acknowledge()
            frame = await stomp.message()
            got.append(frame.body.decode())
            await stomp.request("ACK", {"id": frame.headers["ack"]})
            await settle()
            native = await consumer.receive(timeout=0)
            assert native is not None
            got.append(native.text)
            await native.acknowledge()
        assert sorted(got) == ["m0", "m1", "m2", "m3"]
        assert broker.queue("RR").size == 0
        await stomp.close()


class TestTemporaryQueuesAcrossProtocols:
    async def test_a_native_requester_gets_a_stomp_services_reply_on_its_temporary_queue(
        self, server: StompServer, broker: Broker
    ) -> None:
        """The native client's temporary queue reaches a STOMP service as ``reply-to:/remote-temp-queue/...``, and
        the reply sent there lands on the requester's temporary queue."""
        service = await RawStompClient.open(server.port)
        await service.request("SUBSCRIBE", {"id": "s", "destination": "/queue/REQ"})
        async with await connect(broker) as conn:
            session = await conn.create_session()
            reply_queue = await session.create_temporary_queue()
            replies = await session.create_consumer(reply_queue)
            await (await session.create_producer("REQ")).send("ping", reply_to=reply_queue, correlation_id="c1")
            request = await service.message()
            reply_to = request.headers["reply-to"]
            assert reply_to == f"/remote-temp-queue/{reply_queue.name}"
            await service.send(reply_to, "pong", **{"correlation-id": "c1"})
            reply = await replies.receive(timeout=5)
            assert reply is not None and reply.body == b"pong" and reply.correlation_id == "c1"
        await service.close()

    async def test_a_stomp_requester_gets_a_native_services_reply_on_its_temporary_queue(
        self, server: StompServer, broker: Broker
    ) -> None:
        requester = await RawStompClient.open(server.port)
        await requester.request("SUBSCRIBE", {"id": "r", "destination": "/temp-queue/replies"})
        async with await connect(broker) as conn:
            session = await conn.create_session()
            requests = await session.create_consumer("REQ2")
            await requester.send("/queue/REQ2", "ping", **{"reply-to": "/temp-queue/replies"})
            request = await requests.receive(timeout=5)
            assert request is not None and request.reply_to is not None
            assert broker.temporary_owner(request.reply_to) is not None  # the STOMP connection's own
            await (await session.create_producer(request.reply_to)).send("pong")
        reply = await requester.message()
        assert reply.body == b"pong" and reply.headers["destination"] == "/temp-queue/replies"
        await requester.close()


async def test_a_stomp_service_reads_its_virtual_topic_queue(server: StompServer, broker: Broker) -> None:
    """A STOMP client on ``/queue/Consumer.S.VirtualTopic.X`` gets the native client's publishes to topic
    ``VirtualTopic.X``, and a STOMP SEND to ``/topic/VirtualTopic.X`` reaches a native consumer queue."""
    stomp = await RawStompClient.open(server.port)
    await stomp.request("SUBSCRIBE", {"id": "s", "destination": "/queue/Consumer.S.VirtualTopic.X"})
    async with await connect(broker) as conn:
        session = await conn.create_session()
        native = await session.create_consumer("Consumer.N.VirtualTopic.X")
        await (await session.create_producer("topic://VirtualTopic.X")).send("from native")
        assert (await stomp.message()).body == b"from native"
        await stomp.send("/topic/VirtualTopic.X", "from stomp")
        got = [await native.receive(timeout=5) for _ in range(2)]
        assert [m.body for m in got if m is not None] == ["from native", b"from stomp"]
    await stomp.close()


async def test_a_stomp_durable_subscription(server: StompServer, broker: Broker) -> None:
    """``client-id`` on CONNECT and ``activemq.subscriptionName`` on SUBSCRIBE make a durable subscription that keeps
    native publishes while the STOMP subscriber is away; UNSUBSCRIBE with the name removes it once its subscriber is
    gone (ActiveMQ's headers)."""
    durable = {"id": "s1", "destination": "/topic/prices", "activemq.subscriptionName": "watcher"}
    stomp = await RawStompClient.open(server.port, client_id="stomp-app")
    await stomp.request("SUBSCRIBE", durable)
    await stomp.request("UNSUBSCRIBE", {"id": "s1"})  # the subscriber goes; the subscription stays
    async with await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer("topic://prices")
        await producer.send("p1")
        await producer.send("p2")
    [view] = broker.durable_subscriptions("prices")
    assert (view.client_id, view.name, view.active, view.pending) == ("stomp-app", "watcher", False, 2)
    await stomp.request("SUBSCRIBE", durable)
    assert [(await stomp.message()).body for _ in range(2)] == [b"p1", b"p2"]
    # removing it needs its subscriber gone first, as on ActiveMQ (the UNSUBSCRIBE with the name alone is refused)
    refused = await stomp.request("UNSUBSCRIBE", {"id": "s1", "activemq.subscriptionName": "watcher"})
    assert refused.command == "ERROR" and refused.headers["message"] == "Durable consumer is in use"
    await stomp.request("UNSUBSCRIBE", {"id": "s1"})
    await stomp.request("UNSUBSCRIBE", {"id": "s1", "activemq.subscriptionName": "watcher"})
    assert broker.durable_subscriptions() == []
    await stomp.close()
