"""ActiveMQ's REST message API at /api/message/: sends as MessageServlet reads them, consumes with clientId,
readTimeout and oneShot, 204 when nothing comes."""

from __future__ import annotations

import asyncio

from support.http_helpers import ENTRIES, request, secured_broker
from support.waiting import until

from minibroker import Broker
from minibroker.client import connect
from minibroker.plugins.auth import AuthPlugin, User
from minibroker.plugins.http import HttpServer, start_http_server

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


class TestSend:
    async def test_parameters_as_the_servlet_reads_them(self, http: tuple[Broker, HttpServer]) -> None:
        """body, JMSType, JMSCorrelationID, JMSPriority, JMSDeliveryMode, JMSTimeToLive; other parameters are string
        properties; the answer has the message id."""
        broker, server = http
        target = (
            "/api/message/orders?type=queue&JMSType=greeting&JMSCorrelationID=c-1&JMSPriority=7"
            "&JMSDeliveryMode=non_persistent&JMSTimeToLive=60000&color=blue&clientId=me"
        )
        answer = await request(server, "POST", target, b"body=hello", FORM)
        assert answer.status == 200 and answer.body == b"Message sent"
        [message] = broker.queue("orders").browse()
        assert answer.headers["messageid"] == message.message_id
        assert (message.body, message.type, message.correlation_id) == ("hello", "greeting", "c-1")
        assert message.priority == 7 and not message.persistent and message.expiration > message.timestamp
        assert dict(message.properties) == {"color": "blue", "clientId": "me"}

    async def test_defaults_topic_priority_and_the_raw_body(self, http: tuple[Broker, HttpServer]) -> None:
        """Without type=queue the destination is a topic; priority 5, persistent; a raw body is read line by line;
        slashes in the path are dots."""
        broker, server = http
        async with await connect(broker) as conn:
            consumer = await (await conn.create_session()).create_consumer("topic://news.eu")
            answer = await request(
                server, "POST", "/api/message/news/eu", b"line1\nline2", {"Content-Type": "text/plain"}
            )
            assert answer.status == 200
            got = await consumer.receive(timeout=5)
            assert got is not None and got.body == "line1\nline2\n"
            assert got.priority == 5 and got.persistent
        await request(server, "POST", "/api/message/q?type=queue", b"ignored", FORM)
        assert broker.queue("q").browse()[0].body == ""  # a form post's body is parameters, as with Jetty


class TestConsume:
    async def test_one_message_with_its_headers(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        await request(server, "POST", "/api/message/orders?type=queue&k=v", b"body=<order/>", FORM)
        answer = await request(server, "GET", "/api/message/orders?type=queue&readTimeout=1000")
        assert answer.status == 200 and answer.body == b"<order/>"
        assert answer.headers["content-type"].startswith("application/xml")
        assert answer.headers["destination"] == "queue://orders" and answer.headers["k"] == "v"
        assert broker.queue("orders").size == 0 and broker.queue("orders").dequeued == 1

    async def test_204_when_nothing_comes(self, http: tuple[Broker, HttpServer]) -> None:
        _, server = http
        answer = await request(server, "GET", "/api/message/empty?type=queue&readTimeout=50")
        assert answer.status == 204

    async def test_a_waiting_get_gets_a_later_message(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        waiting = asyncio.create_task(request(server, "GET", "/api/message/later?type=queue&readTimeout=10000"))
        await until(lambda: broker.queue("later").consumers == 1)  # the GET's consumer waits
        await request(server, "POST", "/api/message/later?type=queue", b"body=now", FORM)
        answer = await asyncio.wait_for(waiting, 10)
        assert answer.status == 200 and answer.body == b"now"

    async def test_a_client_id_keeps_its_consumer(self, http: tuple[Broker, HttpServer]) -> None:
        """With clientId the consumer stays between GETs (its prefetched message waits for it) until oneShot or
        action=unsubscribe."""
        broker, server = http
        for i in range(2):
            await request(server, "POST", "/api/message/jobs?type=queue", f"body=j{i}".encode(), FORM)
        first = await request(server, "GET", "/api/message/jobs?type=queue&clientId=w1&readTimeout=1000")
        assert first.body == b"j0" and broker.queue("jobs").consumers == 1
        second = await request(server, "GET", "/api/message/jobs?type=queue&clientId=w1&readTimeout=1000&oneShot=true")
        assert second.body == b"j1" and broker.queue("jobs").consumers == 0
        await request(server, "GET", "/api/message/jobs?type=queue&clientId=w2&readTimeout=10")
        assert broker.queue("jobs").consumers == 1
        await request(server, "POST", "/api/message/jobs?action=unsubscribe&clientId=w2", b"", FORM)
        assert broker.queue("jobs").consumers == 0


async def test_sending_needs_the_right_to_write() -> None:
    async with secured_broker() as broker:
        server = await start_http_server(broker)
        async with server:
            refused = await request(
                server, "POST", "/api/message/orders?type=queue", b"body=x", FORM, auth=("reader", "password")
            )
            assert refused.status == 403
            sent = await request(
                server, "POST", "/api/message/orders?type=queue", b"body=x", FORM, auth=("admin", "secret")
            )
            assert sent.status == 200


async def test_a_refused_get_leaves_no_connection_behind() -> None:
    """A REST GET by a user who may not read the queue is 403, and leaves no broker connection open (a one-shot GET
    consumes through a connection of its own, which must go with a refusal too)."""
    users = {"admin": User("secret", "admins"), "nobody": User("pw", "nobody")}
    async with Broker(plugins=[AuthPlugin(users, ENTRIES)]) as broker:
        server = await start_http_server(broker)
        async with server:
            target = "/api/message/orders?type=queue"
            sent = await request(server, "POST", target, b"body=x", FORM, auth=("admin", "secret"))
            assert sent.status == 200
            before = broker.statistics().connections
            answer = await request(
                server, "GET", "/api/message/orders?type=queue&readTimeout=100", auth=("nobody", "pw")
            )
            assert answer.status == 403 and broker.queue("orders").size == 1
            await until(lambda: broker.statistics().connections == before)
