"""Jolokia at /api/jolokia/: ActiveMQ's object names, Jolokia 1.x's response and error shapes, GET and POST (single
and bulk), and the queue operations, each acting through the request's broker connection."""

from __future__ import annotations

import json

import pytest
from support.http_helpers import request, secured_broker

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, connect
from minibroker.plugins.http import HttpServer, start_http_server
from minibroker.plugins.http.jolokia import split_path
from minibroker.plugins.http.mbeans import ObjectName, encode_name_part

BROKER = "org.apache.activemq:type=Broker,brokerName=localhost"
ORDERS = f"{BROKER},destinationType=Queue,destinationName=orders"
ORDERS_CANONICAL = "org.apache.activemq:brokerName=localhost,destinationName=orders,destinationType=Queue,type=Broker"


async def fill(broker: Broker, queue: str, count: int) -> list[str]:
    async with await connect(broker) as conn:
        session = await conn.create_session()
        producer = await session.create_producer(queue)
        ids = []
        for i in range(count):
            ids.append(await producer.send(f"m{i}", properties={"n": i}))
        return [str(i) for i in ids]


async def get(server: HttpServer, path: str) -> dict[str, object]:
    answer = await request(server, "GET", f"/api/jolokia/{path}")
    assert answer.status == 200 and answer.headers["content-type"].startswith("text/plain")
    value: dict[str, object] = answer.json()
    return value


class TestRead:
    async def test_a_queue_attribute(self, http: tuple[Broker, HttpServer]) -> None:
        """The request comes back with its object name canonical, and a timestamp in seconds."""
        broker, server = http
        await fill(broker, "orders", 3)
        answer = await get(server, f"read/{ORDERS}/QueueSize")
        assert answer["value"] == 3 and answer["status"] == 200
        assert answer["request"] == {"type": "read", "mbean": ORDERS_CANONICAL, "attribute": "QueueSize"}
        assert isinstance(answer["timestamp"], int)

    async def test_the_broker_and_every_attribute(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        await fill(broker, "orders", 2)
        answer = await get(server, f"read/{BROKER}")
        value = answer["value"]
        assert isinstance(value, dict)
        assert value["TotalMessageCount"] == 2 and value["BrokerVersion"] == "5.17.2"
        assert value["BrokerName"] == "localhost"
        assert value["Queues"] == [{"objectName": ORDERS_CANONICAL}]
        assert value["TotalConnectionsCount"] == 0  # the request's own connection is not counted

    async def test_a_pattern_reads_every_match(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        await fill(broker, "a", 1)
        await fill(broker, "b", 2)
        answer = await get(server, f"read/{BROKER},destinationType=Queue,*/QueueSize")
        assert answer["value"] == {
            ORDERS_CANONICAL.replace("orders", "a"): {"QueueSize": 1},
            ORDERS_CANONICAL.replace("orders", "b"): {"QueueSize": 2},
        }

    async def test_errors(self, http: tuple[Broker, HttpServer]) -> None:
        """Jolokia's error shapes: 404 for an unknown MBean or attribute, 400 for a malformed name."""
        broker, server = http
        await fill(broker, "orders", 1)
        missing = await get(server, f"read/{BROKER},destinationType=Queue,destinationName=nope/QueueSize")
        assert missing["status"] == 404
        assert missing["error_type"] == "javax.management.InstanceNotFoundException"
        assert missing["error"] == (
            "javax.management.InstanceNotFoundException : "
            "org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=nope"
        )
        assert "stacktrace" not in missing  # ActiveMQ's agent: allowErrorDetails=false
        attribute = await get(server, f"read/{ORDERS}/Nope")
        assert attribute["status"] == 404
        assert attribute["error"] == "javax.management.AttributeNotFoundException : No such attribute: Nope"
        malformed = await get(server, "read/no-colon/QueueSize")
        assert malformed["status"] == 400 and malformed["error_type"] == "java.lang.IllegalArgumentException"
        unknown = await get(server, "fly/x")
        assert unknown["status"] == 400

    async def test_post_single_and_bulk(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        await fill(broker, "orders", 4)
        one = {"type": "read", "mbean": ORDERS, "attribute": "EnqueueCount"}
        answer = await request(server, "POST", "/api/jolokia/", json.dumps(one).encode())
        assert answer.json()["value"] == 4
        bulk = [one, {"type": "read", "mbean": ORDERS, "attribute": ["QueueSize", "ConsumerCount"]}, {"type": "x"}]
        answers = (await request(server, "POST", "/api/jolokia", json.dumps(bulk).encode())).json()
        assert [a["status"] for a in answers] == [200, 200, 400]
        assert answers[1]["value"] == {"QueueSize": 4, "ConsumerCount": 0}
        bad = (await request(server, "POST", "/api/jolokia", b"{not json")).json()
        assert bad["status"] == 400 and "request" not in bad


class TestSearchListVersion:
    async def test_search(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        await fill(broker, "orders", 1)
        answer = await get(server, "search/org.apache.activemq:type=Broker,destinationType=Queue,*")
        assert answer["value"] == [ORDERS_CANONICAL]
        assert (await get(server, "search/com.example:*"))["value"] == []

    async def test_list_and_version(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        await fill(broker, "orders", 1)
        listed = await get(server, "list/org.apache.activemq")
        bean = listed["value"]["brokerName=localhost,destinationName=orders,destinationType=Queue,type=Broker"]  # type: ignore[index]
        assert bean["attr"]["QueueSize"]["type"] == "long"
        assert bean["op"]["removeMessage"]["args"][0]["type"] == "java.lang.String"
        version = await get(server, "version")
        assert version["value"]["agent"] == "1.7.1" and version["value"]["protocol"] == "7.2"  # type: ignore[index]


class TestExec:
    async def test_purge_remove_move_copy_browse(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        ids = await fill(broker, "orders", 4)
        browsed = await get(server, f"exec/{ORDERS}/browse()")
        assert [row["Text"] for row in browsed["value"]] == ["m0", "m1", "m2", "m3"]  # type: ignore[attr-defined]
        removed = await get(server, f"exec/{ORDERS}/removeMessage(java.lang.String)/{ids[0]}")
        assert removed["value"] is True
        assert (await get(server, f"exec/{ORDERS}/removeMessage/{ids[0]}"))["value"] is False
        assert (await get(server, f"exec/{ORDERS}/moveMessageTo/{ids[1]}/elsewhere"))["value"] is True
        assert (await get(server, f"exec/{ORDERS}/copyMessageTo/{ids[2]}/elsewhere"))["value"] is True
        assert [m.body for m in broker.queue("elsewhere").browse()] == ["m1", "m2"]
        assert [m.body for m in broker.queue("orders").browse()] == ["m2", "m3"]
        assert broker.queue("elsewhere").browse()[0].original_destination is not None
        purged = await get(server, f"exec/{ORDERS}/purge()")
        assert purged["value"] is None and broker.queue("orders").size == 0

    async def test_exec_errors(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        await fill(broker, "orders", 1)
        assert (await get(server, f"exec/{ORDERS}/explode()"))["status"] == 400
        assert (await get(server, f"exec/{ORDERS}/removeMessage"))["status"] == 400  # an argument short
        retry = await get(server, f"exec/{ORDERS}/retryMessages()")
        assert retry["status"] == 500 and "Dead Letter Queues" in str(retry["error"])

    async def test_retry_a_dead_letter(self) -> None:
        """retryMessages() on the DLQ sends each message back to its original queue."""
        async with Broker(clock=ManualClock(autojump=True)) as broker:
            server = await start_http_server(broker)
            async with server, await connect(broker) as conn:
                producer = await (await conn.create_session()).create_producer("orders")
                await producer.send("poison")
                session = await conn.create_session(AckMode.SESSION_TRANSACTED)
                consumer = await session.create_consumer("orders")
                for _ in range(7):  # the default policy: 6 redeliveries, then the DLQ
                    assert await consumer.receive(timeout=5) is not None
                    await session.rollback()
                await consumer.close()
                await broker.settled()
                assert broker.queue("ActiveMQ.DLQ").size == 1
                dlq = f"{BROKER},destinationType=Queue,destinationName=ActiveMQ.DLQ"
                assert (await get(server, f"read/{dlq}/DLQ"))["value"] is True
                assert (await get(server, f"exec/{dlq}/retryMessages()"))["value"] == 1
                assert broker.queue("ActiveMQ.DLQ").size == 0
                assert [m.body for m in broker.queue("orders").browse()] == ["poison"]


class TestBrokerOperations:
    """The Broker MBean's operations a harness uses (BrokerViewMBean), through the request's connection (issue 43)."""

    async def test_add_and_remove_queues_and_topics(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        assert (await get(server, f"exec/{BROKER}/addQueue(java.lang.String)/orders"))["value"] is None
        assert (await get(server, f"exec/{BROKER}/addTopic/prices"))["status"] == 200
        assert broker.queue_names() == ["orders"] and "prices" in broker.topic_names()
        queues = (await get(server, f"read/{BROKER}/Queues"))["value"]
        assert queues == [{"objectName": ORDERS_CANONICAL}]
        assert (await get(server, f"read/{ORDERS}/QueueSize"))["value"] == 0  # an MBean from now on
        await fill(broker, "orders", 2)
        assert (await get(server, f"exec/{BROKER}/addQueue/orders"))["status"] == 200  # there: nothing changes
        assert broker.queue("orders").size == 2
        assert (await get(server, f"exec/{BROKER}/removeQueue/orders"))["status"] == 200
        assert "orders" not in broker.queue_names()
        assert (await get(server, f"read/{ORDERS}/QueueSize"))["status"] == 404
        assert (await get(server, f"exec/{BROKER}/removeTopic/prices"))["status"] == 200
        assert "prices" not in broker.topic_names()
        assert (await get(server, f"exec/{BROKER}/removeQueue/never-was"))["status"] == 200  # as ActiveMQ: nothing

    async def test_removing_the_messages_with_the_queue_lasts(self, tmp_path: object) -> None:
        """A removed queue's messages leave the store too: a restart does not bring them back."""
        async with Broker(data_dir=tmp_path) as broker:  # type: ignore[arg-type]
            server = await start_http_server(broker)
            async with server:
                await fill(broker, "orders", 3)
                assert (await get(server, f"exec/{BROKER}/removeQueue/orders"))["status"] == 200
                await broker.restart()
                assert "orders" not in broker.queue_names()

    async def test_a_queue_in_use_is_not_removed(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        await fill(broker, "orders", 1)
        async with await connect(broker) as conn:
            await (await conn.create_session()).create_consumer("orders")
            answer = await get(server, f"exec/{BROKER}/removeQueue/orders")
            assert answer["status"] == 500 and "a consumer reads it" in str(answer["error"])
            assert "orders" in broker.queue_names()
            subscriber = await (await conn.create_session()).create_consumer("topic://prices")
            answer = await get(server, f"exec/{BROKER}/removeTopic/prices")
            assert answer["status"] == 500 and "prices" in broker.topic_names()
            await subscriber.close()
        assert (await get(server, f"exec/{BROKER}/removeTopic/prices"))["status"] == 200
        wildcard = await get(server, f"exec/{BROKER}/addQueue/orders.>")
        assert wildcard["status"] == 500 and "must name one queue" in str(wildcard["error"])

    async def test_durable_subscribers_browse_and_gc(self, http: tuple[Broker, HttpServer]) -> None:
        broker, server = http
        await fill(broker, "orders", 2)
        async with await connect(broker, client_id="app") as conn:
            session = await conn.create_session()
            subscriber = await session.create_durable_subscriber("topic://prices", "audit")
            await subscriber.close()
        assert len(broker.durable_subscriptions()) == 1
        destroyed = await get(server, f"exec/{BROKER}/destroyDurableSubscriber/app/audit")
        assert destroyed["status"] == 200 and broker.durable_subscriptions() == []
        browsed = await get(server, f"exec/{BROKER}/browseQueue/orders")
        assert [row["Text"] for row in browsed["value"]] == ["m0", "m1"]  # type: ignore[attr-defined]
        assert (await get(server, f"exec/{BROKER}/browseQueue/nope"))["status"] == 404
        assert (await get(server, f"exec/{BROKER}/gc()"))["status"] == 200

    async def test_what_minibroker_does_not_reproduce_is_refused(self, http: tuple[Broker, HttpServer]) -> None:
        """Listed as ActiveMQ lists them; run, each is Jolokia's 403 for a forbidden operation."""
        broker, server = http
        listed = await get(server, "list/org.apache.activemq/brokerName=localhost,type=Broker")
        operations = listed["value"]["op"]  # type: ignore[index]
        assert {"addQueue", "removeTopic", "resetStatistics", "createDurableSubscriber"} <= set(operations)
        for path in ("resetStatistics()", "stop()", "createDurableSubscriber/app/audit/prices/[null]"):
            answer = await get(server, f"exec/{BROKER}/{path}")
            assert answer["status"] == 403 and answer["error_type"] == "java.lang.Exception"
            assert "forbidden for MBean org.apache.activemq:brokerName=localhost,type=Broker" in str(answer["error"])
        assert broker.durable_subscriptions() == []

    async def test_creating_and_removing_needs_admin_rights(self) -> None:
        async with secured_broker() as broker:
            server = await start_http_server(broker)
            async with server:
                reader = ("reader", "password")
                for operation in ("addQueue", "removeQueue", "addTopic"):
                    path = f"/api/jolokia/exec/{BROKER}/{operation}/orders"
                    answer = (await request(server, "GET", path, auth=reader)).json()
                    assert answer["status"] == 403 and "not authorized" in answer["error"], operation
                assert broker.queue_names() == []
                path = f"/api/jolokia/exec/{BROKER}/addQueue/orders"
                assert (await request(server, "GET", path, auth=("admin", "secret"))).json()["status"] == 200
                assert broker.queue_names() == ["orders"]


async def test_mutations_need_admin_rights() -> None:
    """A reader may read QueueSize but not purge; the refusal is Jolokia's 403."""
    async with secured_broker() as broker:
        server = await start_http_server(broker)
        async with server, await connect(broker, user="admin", password="secret") as conn:
            await (await (await conn.create_session()).create_producer("orders")).send("x")
            reader = ("reader", "password")
            read = await request(server, "GET", f"/api/jolokia/read/{ORDERS}/QueueSize", auth=reader)
            assert read.json()["value"] == 1
            purge = (await request(server, "GET", f"/api/jolokia/exec/{ORDERS}/purge()", auth=reader)).json()
            assert purge["status"] == 403 and "not authorized to administer" in purge["error"]
            assert broker.queue("orders").size == 1


async def test_cross_site_mutations_are_refused(http: tuple[Broker, HttpServer]) -> None:
    broker, server = http
    await fill(broker, "orders", 1)
    body = json.dumps({"type": "exec", "mbean": ORDERS, "operation": "purge()"}).encode()
    answer = await request(server, "POST", "/api/jolokia/", body, {"Origin": "http://evil.example"})
    assert answer.json()["status"] == 403
    answer = await request(
        server, "GET", f"/api/jolokia/exec/{ORDERS}/purge()", headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert answer.json()["status"] == 403
    assert broker.queue("orders").size == 1


@pytest.mark.parametrize(
    ("path", "parts"),
    [("read/a:b=c/Attr", ["read", "a:b=c", "Attr"]), ("/read/a:b=c!/d/x!!y/", ["read", "a:b=c/d", "x!y"])],
)
def test_split_path(path: str, parts: list[str]) -> None:
    assert split_path(path) == parts


def test_object_names() -> None:
    name = ObjectName.parse('org.apache.activemq:type=Broker,brokerName="a,b",*')
    assert name.is_pattern and name.get("brokerName") == "a,b"
    assert name.canonical == 'org.apache.activemq:brokerName="a,b",type=Broker,*'
    assert ObjectName.parse("d:k=v*").matches(ObjectName.parse("d:k=value"))
    assert not ObjectName.parse("d:k=v").matches(ObjectName.parse("d:k=v,x=y"))
    assert encode_name_part("a:b,c=d*e?") == "a_b_c&amp;d&ast;e&qe;"
