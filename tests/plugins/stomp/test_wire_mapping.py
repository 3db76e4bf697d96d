"""What a STOMP client sees where ActiveMQ 5.17's mapping differs from a JMS client's view (issue 42): headers the
broker stamps on copies it makes, and the answers to frames ActiveMQ refuses or takes differently. Each test names
the ActiveMQ source it follows; the wire corpus (tests/wire_oracle) checks the same against recordings.
"""

from __future__ import annotations

import pytest
from support.stomp_helpers import RawStompClient

from minibroker import Broker, ManualClock
from minibroker.plugins.stomp import StompServer

pytestmark = pytest.mark.usefixtures("loop_errors")


async def connected(server: StompServer, **headers: str) -> RawStompClient:
    client = await RawStompClient.open(server.port, **headers)
    assert client.connected is not None, client.inbox
    return client


class TestOriginalDestination:
    """``original-destination`` (FrameTranslator): set when the broker made the copy for another destination."""

    async def test_a_virtual_topic_consumer_queue_names_the_topic(self, server: StompServer) -> None:
        client = await connected(server)
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/Consumer.A.VirtualTopic.x"})
        await client.send("/topic/VirtualTopic.x", "v")
        frame = await client.message()
        assert frame.headers["destination"] == "/queue/Consumer.A.VirtualTopic.x"
        assert frame.headers["original-destination"] == "/topic/VirtualTopic.x"
        await client.close()

    async def test_each_part_of_a_composite_send_names_the_composite(self, server: StompServer) -> None:
        client = await connected(server)
        await client.request("SUBSCRIBE", {"id": "a", "destination": "/queue/part.a"})
        await client.request("SUBSCRIBE", {"id": "b", "destination": "/queue/part.b"})
        await client.send("/queue/part.a,/queue/part.b", "c")
        frames = [await client.message(), await client.message()]
        assert sorted(f.headers["destination"] for f in frames) == ["/queue/part.a", "/queue/part.b"]
        names = {f.headers["original-destination"] for f in frames}
        assert names == {"/queue/part.a,queue://part.b"}, names  # ActiveMQ: the physical name, less its prefix
        await client.close()

    async def test_a_plain_send_has_none(self, server: StompServer) -> None:
        client = await connected(server)
        await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/plain"})
        await client.send("/queue/plain", "p")
        assert "original-destination" not in (await client.message()).headers
        await client.close()


class TestOriginalExpiration:
    """``originalExpiration`` (RegionBroker.sendToDeadLetterQueue, stampAsExpired): a dead letter's former
    expiration in epoch ms, 0 for none; a JMS client's copy drops it, a STOMP subscriber sees it."""

    async def test_an_expired_message_read_from_the_dlq(
        self, server: StompServer, broker: Broker, clock: ManualClock
    ) -> None:
        client = await connected(server)
        deadline = int((clock.now() + 5) * 1000)
        await client.send("/queue/E", "x", expires=str(deadline), persistent="true")
        await clock.advance(6)
        await client.request("SUBSCRIBE", {"id": "e", "destination": "/queue/E"})
        await client.request("SUBSCRIBE", {"id": "d", "destination": "/queue/ActiveMQ.DLQ"})
        frame = await client.message()
        assert frame.headers["originalExpiration"] == str(deadline)
        assert frame.headers["expires"] == "0"
        assert frame.headers["original-destination"] == "/queue/E"
        await client.close()

    async def test_a_nacked_message_read_from_the_dlq(self, server: StompServer) -> None:
        client = await connected(server)
        await client.request("SUBSCRIBE", {"id": "n", "destination": "/queue/N", "ack": "client-individual"})
        await client.send("/queue/N", "x", persistent="true")
        frame = await client.message()
        await client.request("NACK", {"id": frame.headers["ack"]})
        await client.request("SUBSCRIBE", {"id": "d", "destination": "/queue/ActiveMQ.DLQ"})
        assert (await client.message()).headers["originalExpiration"] == "0"
        await client.close()

    async def test_a_jms_client_does_not_see_it(self, server: StompServer, broker: Broker) -> None:
        from minibroker.client import connect

        client = await connected(server)
        await client.request("SUBSCRIBE", {"id": "n", "destination": "/queue/J", "ack": "client-individual"})
        await client.send("/queue/J", "x", persistent="true")
        await client.request("NACK", {"id": (await client.message()).headers["ack"]})
        assert "originalExpiration" in broker.queue("ActiveMQ.DLQ").browse()[0].properties  # the broker's copy
        async with await connect(broker) as conn:
            session = await conn.create_session()
            browsed = await (await session.create_browser("ActiveMQ.DLQ")).messages()
            received = await (await session.create_consumer("queue://ActiveMQ.DLQ")).receive(timeout=1)
        assert received is not None and "originalExpiration" not in received.properties
        assert "originalExpiration" not in browsed[0].properties
        await client.close()


class TestDurableUnsubscribe:
    """UNSUBSCRIBE with ``activemq.subscriptionName`` is ActiveMQ's RemoveSubscriptionInfo alone
    (ProtocolConverter.onStompUnsubscribe): it never closes a subscriber, and TopicRegion refuses it while one is
    open."""

    async def test_refused_while_its_subscriber_is_open_and_the_subscription_keeps_its_messages(
        self, server: StompServer, broker: Broker
    ) -> None:
        client = await connected(server, client_id="app")
        durable = {"id": "d", "destination": "/topic/t", "activemq.subscriptionName": "keep"}
        await client.request("SUBSCRIBE", durable)
        refused = await client.request("UNSUBSCRIBE", {"id": "d", "activemq.subscriptionName": "keep"})
        assert refused.command == "ERROR"
        assert refused.headers["message"] == "Durable consumer is in use"
        assert refused.body.startswith(b"javax.jms.JMSException: Durable consumer is in use")
        await client.send("/topic/t", "still mine")
        assert (await client.message()).body == b"still mine"
        assert [(v.name, v.active) for v in broker.durable_subscriptions()] == [("keep", True)]
        await client.close()

    async def test_without_a_receipt_the_refusal_is_an_error_frame_too(self, server: StompServer) -> None:
        client = await connected(server, client_id="app2")
        await client.request("SUBSCRIBE", {"id": "d", "destination": "/topic/t", "activemq.subscriptionName": "k"})
        client.send_frame("UNSUBSCRIBE", {"id": "d", "activemq.subscriptionName": "k"})
        assert (await client.error()).headers["message"] == "Durable consumer is in use"
        await client.close()

    async def test_a_stomp_1_0_client_names_the_subscription_as_its_client_id(
        self, server: StompServer, broker: Broker
    ) -> None:
        client = await RawStompClient.open(server.port, version=None, client_id="same")
        assert client.connected is not None and client.connected.headers["version"] == "1.0"
        await client.request("SUBSCRIBE", {"destination": "/topic/t", "activemq.subscriptionName": "same"})
        await client.request("UNSUBSCRIBE", {"destination": "/topic/t"})  # the subscriber goes
        other = await client.request("UNSUBSCRIBE", {"destination": "/topic/t", "activemq.subscriptionName": "x"})
        assert other.headers["message"] == "No durable subscription exists for clientID: x and subscriptionName: x"
        gone = await client.request("UNSUBSCRIBE", {"destination": "/topic/t", "activemq.subscriptionName": "same"})
        assert gone.command == "RECEIPT" and broker.durable_subscriptions() == []
        await client.close()


class TestRedelivered:
    """``redelivered`` is the broker message's own flag (FrameTranslator: ``getJMSRedelivered()``)."""

    async def test_a_durable_subscribers_unacked_message_after_it_comes_back_has_none(
        self, server: StompServer
    ) -> None:
        durable = {"id": "d", "destination": "/topic/r", "ack": "client", "activemq.subscriptionName": "r"}
        client = await connected(server, client_id="r-app")
        await client.request("SUBSCRIBE", durable)
        await client.send("/topic/r", "unacked")
        assert (await client.message()).body == b"unacked"
        await client.disconnect()
        again = await connected(server, client_id="r-app")
        await again.request("SUBSCRIBE", durable)
        frame = await again.message()
        assert frame.body == b"unacked" and "redelivered" not in frame.headers
        await again.close()

    async def test_a_queue_message_given_back_has_it(self, server: StompServer) -> None:
        client = await connected(server)
        await client.request("SUBSCRIBE", {"id": "q", "destination": "/queue/r", "ack": "client"})
        await client.send("/queue/r", "unacked")
        await client.message()
        await client.disconnect()
        again = await connected(server)
        await again.request("SUBSCRIBE", {"id": "q", "destination": "/queue/r"})
        assert (await again.message()).headers["redelivered"] == "true"
        await again.close()


async def test_an_mqtt_subscriber_gets_the_lower_of_the_stomp_qos_header_and_its_own(broker: Broker) -> None:
    """``ActiveMQ.MQTT.QoS`` sent as a STOMP header is a text property, which ActiveMQ's MQTT connector reads with
    ``getIntProperty``: QoS 0 here, under a QoS 1 subscription (before: ignored, QoS 1 for a non-persistent send)."""
    from support.mqtt_helpers import Paho

    from minibroker.plugins.mqtt import start_mqtt_server
    from minibroker.plugins.stomp import start_stomp_server

    stomp_server = await start_stomp_server(broker)
    mqtt_server = await start_mqtt_server(broker)
    try:
        subscriber = await Paho.connect(mqtt_server.port, "q-sub")
        await subscriber.subscribe("qos/t", qos=1)
        client = await connected(stomp_server)
        await client.send("/topic/qos.t", "zero", persistent="false", **{"ActiveMQ.MQTT.QoS": "0"})
        await client.send("/topic/qos.t", "plain", persistent="false")
        got = [await subscriber.next(), await subscriber.next()]
        assert [(m.payload, m.qos) for m in got] == [(b"zero", 0), (b"plain", 1)]
        await client.close()
        await subscriber.disconnect()
    finally:
        await mqtt_server.close()
        await stomp_server.close()


async def test_a_subscription_id_used_again_names_the_new_subscription_and_the_first_keeps_running(
    server: StompServer, broker: Broker
) -> None:
    """ActiveMQ 5.17 puts the new subscription under the id (``subscriptions.put``): no ERROR; both deliver with that
    id, UNSUBSCRIBE removes the newer, and the first runs until the connection goes (before: ERROR, refused)."""
    client = await connected(server)
    first = await client.request("SUBSCRIBE", {"id": "dup", "destination": "/queue/one"})
    again = await client.request("SUBSCRIBE", {"id": "dup", "destination": "/queue/two"})
    assert (first.command, again.command) == ("RECEIPT", "RECEIPT")
    assert broker.statistics().consumers == 2
    await client.send("/queue/one", "1")
    await client.send("/queue/two", "2")
    frames = [await client.message(), await client.message()]
    assert sorted((f.headers["subscription"], f.body) for f in frames) == [("dup", b"1"), ("dup", b"2")]
    await client.request("UNSUBSCRIBE", {"id": "dup"})
    assert (broker.queue("one").consumers, broker.queue("two").consumers) == (1, 0)
    await client.send("/queue/one", "still")
    assert (await client.message()).body == b"still"
    await client.close()


class TestErrors:
    """ERROR frames as ProtocolConverter.handleException writes them: ``message`` is the exception's getMessage(),
    the body its stack trace, which starts with its toString() (class and localized message)."""

    async def test_a_send_to_a_temporary_queue_that_never_existed(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        client.send_frame("SEND", {"destination": "/remote-temp-queue/ID:nobody-1:1:1"}, "x")  # no receipt asked
        error = await client.error()
        assert error.headers["message"] == "temp-queue://ID:nobody-1:1:1"
        assert "receipt-id" not in error.headers
        assert error.body.startswith(
            b"org.apache.activemq.DestinationDoesNotExistException: "
            b"The destination temp-queue://ID:nobody-1:1:1 does not exist."
        )
        assert broker.queue_statistics("ID:nobody-1:1:1") is None  # nothing was made
        await client.send("/queue/after", "the connection stays usable")
        await client.close()

    async def test_a_send_to_a_temporary_queue_whose_owner_left(self, server: StompServer) -> None:
        owner = await connected(server)
        await owner.request("SUBSCRIBE", {"id": "t", "destination": "/temp-queue/replies"})
        owner.send_frame("SEND", {"destination": "/queue/ask", "reply-to": "/temp-queue/replies"}, "q")
        asker = await connected(server)
        await asker.request("SUBSCRIBE", {"id": "a", "destination": "/queue/ask"})
        reply_to = (await asker.message()).headers["reply-to"]
        assert reply_to.startswith("/remote-temp-queue/")
        await owner.disconnect()
        refused = await asker.request("SEND", {"destination": reply_to}, "too late")
        physical = reply_to.removeprefix("/remote-temp-queue/")
        assert refused.headers["message"] == f"temp-queue://{physical}"
        assert refused.body.startswith(
            f"org.apache.activemq.DestinationDoesNotExistException: The destination temp-queue://{physical} does "
            "not exist.".encode()
        )
        await asker.close()

    async def test_an_invalid_selector_names_the_selector(self, server: StompServer) -> None:
        client = await connected(server)
        refused = await client.request("SUBSCRIBE", {"id": "s", "destination": "/queue/s", "selector": "color = = 'x'"})
        assert refused.headers["message"] == "color = = 'x'"
        assert refused.body.startswith(b"javax.jms.InvalidSelectorException: color = = 'x'")
        await client.close()


async def test_a_send_to_an_advisory_topic_is_taken(server: StompServer, broker: Broker) -> None:
    """ActiveMQ takes it silently (recorded); it was refused with an ERROR."""
    client = await connected(server)
    assert (await client.send("/topic/ActiveMQ.Advisory.Consumer.Queue.x", "hello")).command == "RECEIPT"
    assert (await client.send("/queue/q,/topic/ActiveMQ.Advisory.x", "both")).command == "RECEIPT"
    assert broker.queue("q").size == 1
    await client.close()


class TestConsumerAdvisories:
    """A STOMP subscription to a consumer advisory topic gets ActiveMQ's JmsFrameTranslator rendering: the
    ConsumerInfo or RemoveInfo marshalled by XStream (JSON through Jettison by default, XML on asking), the fields as
    ActiveMQ 5.17.2 wrote them (recorded); it was refused (UnsupportedFeature stomp-advisory)."""

    @staticmethod
    def ids_out(body: str) -> str:
        import re

        body = re.sub(r'"connectionId":"[^"]*","sessionId":-?\d+,"value":\d+', '"consumerId":"<id>"', body)
        return re.sub(r'"commandId":\d+', '"commandId":0', body)

    async def test_a_consumer_comes_and_goes(self, server: StompServer) -> None:
        watcher = await connected(server)
        reply = await watcher.request(
            "SUBSCRIBE", {"id": "adv", "destination": "/topic/ActiveMQ.Advisory.Consumer.Queue.x"}
        )
        assert reply.command == "RECEIPT"
        consumer = await connected(server)
        await consumer.request("SUBSCRIBE", {"id": "s1", "destination": "/queue/x", "selector": "a = 'b'"})
        came = await watcher.message()
        assert came.headers["type"] == "Advisory" and came.headers["transformation"] == "jms-advisory-json"
        assert came.headers["consumerCount"] == "1" and came.headers["timestamp"] == "0"
        assert came.headers["priority"] == "0" and "persistent" not in came.headers
        assert self.ids_out(came.body.decode()) == (
            '{"ConsumerInfo":{"commandId":0,"responseRequired":true,"consumerId":{"consumerId":"<id>"},'
            '"destination":{"@class":"ActiveMQQueue","string":"x","null":""},"prefetchSize":1000,'
            '"maximumPendingMessageLimit":0,"browser":false,"dispatchAsync":true,'
            '"selector":"convert_string_expressions:a = \'b\'","noLocal":false,"exclusive":false,"retroactive":false,'
            '"priority":0,"optimizedAcknowledge":false,"noRangeAcks":false}}'
        )
        await consumer.request("UNSUBSCRIBE", {"id": "s1"})
        went = await watcher.message()
        assert went.headers["consumerCount"] == "0"
        assert self.ids_out(went.body.decode()) == (
            '{"RemoveInfo":{"commandId":0,"responseRequired":true,"objectId":{"@class":"ConsumerId",'
            '"consumerId":"<id>"},"lastDeliveredSequenceId":-2}}'
        )
        await consumer.close()
        await watcher.close()

    async def test_as_xml_and_for_a_durable_subscriber(self, server: StompServer) -> None:
        watcher = await connected(server)
        await watcher.request(
            "SUBSCRIBE",
            {"id": "a", "destination": "/topic/ActiveMQ.Advisory.Consumer.Topic.dur", "transformation": "jms-xml"},
        )
        consumer = await connected(server, client_id="c-xml")
        await consumer.request(
            "SUBSCRIBE",
            {"id": "d", "destination": "/topic/dur", "activemq.subscriptionName": "subn", "activemq.noLocal": "true"},
        )
        frame = await watcher.message()
        assert frame.headers["transformation"] == "jms-advisory-xml"
        lines = frame.body.decode().splitlines()
        assert lines[0] == "<ConsumerInfo>" and lines[-1] == "</ConsumerInfo>"
        assert '  <destination class="ActiveMQTopic">' in lines
        assert "    <string>dur</string>" in lines and "    <null/>" in lines
        assert "  <prefetchSize>100</prefetchSize>" in lines  # a durable subscription's default
        assert "  <subscriptionName>subn</subscriptionName>" in lines and "  <noLocal>true</noLocal>" in lines
        await consumer.close()
        await watcher.close()

    async def test_other_advisory_topics_are_still_refused(self, server: StompServer) -> None:
        client = await connected(server)
        refused = await client.request("SUBSCRIBE", {"id": "c", "destination": "/topic/ActiveMQ.Advisory.Connection"})
        assert refused.command == "ERROR" and "stomp-advisory" in refused.headers["message"]
        await client.close()


async def test_an_invalid_selector_on_a_topic_is_activemqs_topic_subscription_error(server: StompServer) -> None:
    """TopicRegion wraps it: "Couldn't create TopicSubscription", a plain JMSException (recorded by the wire corpus);
    on a queue the InvalidSelectorException names the selector (TestErrors)."""
    client = await connected(server)
    refused = await client.request("SUBSCRIBE", {"id": "t", "destination": "/topic/t", "selector": "a = = 1"})
    assert refused.headers["message"] == "Couldn't create TopicSubscription"
    assert refused.body.startswith(b"javax.jms.JMSException: Couldn't create TopicSubscription")
    await client.close()


async def test_a_consumer_advisory_subscription_beside_a_composite_consumer(server: StompServer) -> None:
    """A new advisory subscriber hears of a composite consumer on each part, as when it came; the subscription was
    refused with InvalidDestination while any composite consumer existed (found by the wire corpus)."""
    consumer = await connected(server)
    await consumer.request("SUBSCRIBE", {"id": "c", "destination": "/queue/a,/queue/b"})
    watcher = await connected(server)
    reply = await watcher.request("SUBSCRIBE", {"id": "w", "destination": "/topic/ActiveMQ.Advisory.Consumer.Queue.a"})
    assert reply.command == "RECEIPT"
    replayed = await watcher.message()
    assert replayed.headers["destination"] == "/topic/ActiveMQ.Advisory.Consumer.Queue.a"
    assert '"string":"a"' in replayed.body.decode()
    await watcher.close()
    await consumer.close()


class TestRollbackOnly:
    """A SEND in a transaction that fails unseen (no receipt asked: ActiveMQ answers with a ConnectionError, not a
    response) marks the transaction rollback-only (TransportConnection's rollbackOnlyOnAsyncException): its COMMIT
    fails as Transaction.prePrepare fails it, and nothing of it happens. With a receipt the client heard of the
    failure, and the transaction commits the rest."""

    async def test_an_unseen_failure_fails_the_commit(self, server: StompServer, broker: Broker) -> None:
        client = await connected(server)
        await client.request("BEGIN", {"transaction": "t"})
        await client.request("SEND", {"destination": "/queue/kept", "transaction": "t"}, "one")
        client.send_frame("SEND", {"destination": "/remote-temp-queue/ID:gone-1:1:1", "transaction": "t"}, "x")
        await client.error()
        refused = await client.request("COMMIT", {"transaction": "t"})
        assert refused.command == "ERROR"
        assert refused.headers["message"] == "COMMIT FAILED: Transaction marked rollback only"
        assert refused.body.startswith(b"javax.transaction.xa.XAException: COMMIT FAILED")
        assert broker.queue_statistics("kept") is None or broker.queue("kept").size == 0
        await client.close()

    async def test_a_failure_answered_by_a_receipt_leaves_the_commit_alone(
        self, server: StompServer, broker: Broker
    ) -> None:
        client = await connected(server)
        await client.request("BEGIN", {"transaction": "t"})
        await client.request("SEND", {"destination": "/queue/kept2", "transaction": "t"}, "one")
        failed = await client.request(
            "SEND", {"destination": "/remote-temp-queue/ID:gone-2:1:1", "transaction": "t"}, "x"
        )
        assert failed.command == "ERROR"
        assert (await client.request("COMMIT", {"transaction": "t"})).command == "RECEIPT"
        assert [m.body for m in broker.queue("kept2").browse()] == ["one"]
        await client.close()
