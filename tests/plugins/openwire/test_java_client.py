"""Debian's activemq-client 5.17.2, ActiveMQ's own JMS client (java/OpenWireClient.java), against minibroker's
OpenWire listener: each scenario prints what the client saw, compared line by line."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from support.openwire_java import MESSAGES
from support.waiting import until

from minibroker import Broker, DestinationPolicy
from minibroker.client import AckMode, connect
from minibroker.plugins.openwire import start_openwire_server

JavaRun = Callable[..., Awaitable[list[str]]]
CERTS = Path(__file__).resolve().parents[2] / "certs"

PLAIN_REFUSED = (
    "PLAIN REFUSED Unsupported feature [bodiless-message]: a Message without a body (`session.createMessage()`) "
    "('NoneType') is not supported by minibroker: not built: send an empty text instead"
)
XA_REFUSED = (
    "XA REFUSED Unsupported feature [openwire-xa-transaction]: an XA transaction (XATransactionId, TransactionInfo "
    "PREPARE/END/RECOVER/FORGET/two-phase commit) ('XATransactionId') is not supported by minibroker: minibroker has "
    "local transactions only"
)
BODIES = [
    PLAIN_REFUSED,
    "RECEIVED bytes:4",
    "RECEIVED stream:s;5;true;c;",
    "RECEIVED object:serialized",
    "RECEIVED text:compressible compressible compressible compressible com...(26005)",
    "RECEIVED map:ch=x;f=1.5;raw=byte[2];",
]

#: scenario, options on the URL, what the client prints after CONNECTED
SCENARIOS: list[tuple[str, str, list[str]]] = [
    ("connect", "", []),
    ("messages", "", MESSAGES),
    ("bodies", "", BODIES),
    ("bodies", "?jms.useCompression=true", BODIES),
    ("browse", "", ["BROWSED m1 m2 m3", "RECEIVED text:m1", "RECEIVED text:m2", "RECEIVED text:m3"]),
    ("pull", "?jms.prefetchPolicy.all=0", ["NOWAIT null", "TIMED null", "RECEIVED text:pulled"]),
    (
        "temp",
        "",
        ["TEMP named by the connection", "REPLY-TO temporary queue", "ANSWER text:pong correlation=c-1", "DELETED"],
    ),
    # the responder is another connection: its client sends to a temporary queue only once the broker's advisory
    # (a DestinationInfo) told it the queue exists
    ("tempreply", "", ["ANSWER text:pong from another connection"]),
    (
        "rollback",
        "",
        ["FIRST text:again", "SECOND text:again JMSXDeliveryCount=2(Integer) redelivered count=2", "AFTER null"],
    ),
    (
        "options",  # destination options the client turns into ConsumerInfo fields; wildcards; an anonymous producer
        "",
        [
            "EXCLUSIVE text:x1",
            "EXCLUSIVE text:x2",
            "EXCLUSIVE text:x3",
            "OTHER null",
            "WILDCARD text:to a from topic://ow.wild.a",
            "WILDCARD text:to b.c from topic://ow.wild.b.c",
        ],
    ),
    ("acks", "", ["CLIENT ACKED c3", "INDIVIDUAL ACKED i2", "LEFT text:i1"]),  # a range ack, one message
    (
        "selector",
        "",
        [
            "SELECTED red",
            "NO MORE null",
            "BAD SELECTOR javax.jms.InvalidSelectorException",
            "LEFT text:blue color=blue(String)",
        ],
    ),
    ("nolocal", "", ["EVERYONE text:news", "NOLOCAL null"]),
    ("window", "?jms.producerWindowSize=1024&jms.useAsyncSend=true", ["SENT 200", "RECEIVED 200"]),
    ("bulk", "?jms.useAsyncSend=true", ["BULK 2000"]),  # asynchronous sends, handled in turns, all dispatched
    ("durable", "", ["DURABLE text:while away 1", "DURABLE text:while away 2", "IN USE JMSException", "UNSUBSCRIBED"]),
    ("errors", "", ["TWIN javax.jms.InvalidClientIDException"]),
    ("xa", "", [XA_REFUSED]),
]


@pytest.mark.parametrize(
    ("scenario", "options", "expected"), SCENARIOS, ids=[f"{s}{o and '-' + o.split('.')[-1]}" for s, o, _ in SCENARIOS]
)
async def test_scenario(java_run: JavaRun, scenario: str, options: str, expected: list[str]) -> None:
    async with Broker() as broker:
        server = await start_openwire_server(broker)
        async with server:
            lines = await java_run("OpenWireClient", server.url + options, scenario)
            await server.wait_connection_count(0)
        assert lines[0].startswith("CONNECTED ID:"), lines
        assert lines[1:] == [*expected, "DONE"]
        for name in broker.queue_names():
            stats = broker.queue_statistics(name)
            if stats is not None and not name.startswith("ActiveMQ."):
                assert stats.size == 0 and stats.inflight == 0, stats  # everything sent was consumed and acked


async def test_a_python_service_and_a_java_service_exchange_messages(java_run: JavaRun) -> None:
    async with Broker() as broker:
        server = await start_openwire_server(broker)
        async with server:
            lines = await java_run("OpenWireClient", server.url, "messages")  # leaves nothing behind
            assert lines[-1] == "DONE"
            python = await connect(broker)
            session = await python.create_session(AckMode.AUTO_ACKNOWLEDGE)
            producer = await session.create_producer("ow.from-python")
            await producer.send({"order": 42, "sku": "A-1"}, properties={"source": "python"})
            await producer.send("plain text")
            lines = await java_run("OpenWireClient", server.url, "receive", "ow.from-python")
            assert lines[1:] == [
                "RECEIVED map:order=42;sku=A-1; source=python(String)",
                "RECEIVED text:plain text",
                "DONE",
            ]
            await python.close()


async def test_a_message_past_the_clients_redelivery_policy_is_poison_acked_to_the_dlq(java_run: JavaRun) -> None:
    policy = "?jms.redeliveryPolicy.maximumRedeliveries=1&jms.redeliveryPolicy.initialRedeliveryDelay=0"
    async with Broker() as broker, await start_openwire_server(broker) as server:
        lines = await java_run("OpenWireClient", server.url + policy, "poison")
        assert lines[1:] == [
            "ATTEMPT text:bad",
            "ATTEMPT text:bad JMSXDeliveryCount=2(Integer) redelivered",
            "ATTEMPT null",
            "DONE",
        ]
        (record,) = broker.dead_letters()
        assert record.body == "bad" and record.dead_letter_queue == "ActiveMQ.DLQ"
        assert (broker.queue_statistics("ActiveMQ.DLQ") or pytest.fail()).size == 1


async def test_a_full_queue_refuses_a_send_with_resource_allocation_exception(java_run: JavaRun) -> None:
    policies = {"limited.>": DestinationPolicy(memory_limit=8 * 1024, send_fail_if_no_space=True)}
    async with Broker(policies=policies) as broker, await start_openwire_server(broker) as server:
        lines = await java_run("OpenWireClient", server.url, "full", "100")
        assert lines[1:] == ["FULL after some javax.jms.ResourceAllocationException", "DONE"]
        assert 0 < (broker.queue_statistics("limited.q") or pytest.fail()).size < 100


async def test_a_send_waits_while_the_queue_is_full(java_run: JavaRun) -> None:
    """Producer flow control: the client's sends wait (its socket is not read) until a consumer makes room."""
    policies = {"limited.>": DestinationPolicy(memory_limit=8 * 1024)}
    async with Broker(policies=policies) as broker, await start_openwire_server(broker) as server:
        sending = asyncio.ensure_future(java_run("OpenWireClient", server.url, "full", "40"))
        python = await connect(broker)
        session = await python.create_session(AckMode.AUTO_ACKNOWLEDGE)
        consumer = await session.create_consumer("limited.q")
        received = 0
        while received < 40:
            message = await consumer.receive(timeout=30)
            assert message is not None, f"{received} received"
            received += 1
        assert (await sending)[1:] == ["SENT 40", "DONE"]
        await python.close()


async def test_a_failover_client_reconnects_when_its_connection_drops(openwire_java: str) -> None:
    """``failover:(tcp://...)``: the broker drops the client's transport (a network failure); the client reconnects,
    replays its connection, session, producer and consumer, and goes on. The message it had prefetched but not
    delivered comes back to it, counted as redelivered (a failed transport: nobody knows what was delivered)."""
    async with Broker() as broker, await start_openwire_server(broker) as server:
        url = f"failover:({server.url})?initialReconnectDelay=10&maxReconnectDelay=100"
        proc = await asyncio.create_subprocess_exec(
            "java",
            "-cp",
            openwire_java,
            "OpenWireClient",
            url,
            "failover",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert proc.stdin is not None and proc.stdout is not None
        lines: list[str] = []
        try:
            async with asyncio.timeout(60):
                while not lines or lines[-1] != "HALF":
                    line = await proc.stdout.readline()
                    assert line, f"the client ended early: {lines}"
                    lines.append(line.decode().rstrip("\n"))

                def settled() -> bool:  # m3's ack is in, m4 waits in the client's prefetch
                    stats = broker.queue_statistics("ow.failover")
                    return stats is not None and stats.dequeued == 3 and stats.inflight == 1

                await until(settled)
                assert broker.drop_connections() == 1
                await server.wait_connection_count(0)
                await server.wait_connection_count(1)  # the client is back
                proc.stdin.write(b"GO\n")
                out, _ = await proc.communicate()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        lines += out.decode().splitlines()
        assert proc.returncode == 0, lines
        assert lines[1:] == [
            "RECEIVED text:m1",
            "RECEIVED text:m2",
            "RECEIVED text:m3",
            "HALF",
            "RECEIVED text:m4 JMSXDeliveryCount=2(Integer) redelivered",
            "RECEIVED text:m5",
            "RECEIVED text:m6",
            "RECEIVED text:after the reconnect",
            "DONE",
        ]
        assert server.accepted == 2 and broker.dead_letters() == ()


async def test_tls(java_run: JavaRun, trusting_jvm: list[str]) -> None:
    """``ssl://`` with the client trusting the test certificate (a PKCS12 trust store made by keytool)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(CERTS / "server.crt", CERTS / "server.key")
    async with Broker() as broker, await start_openwire_server(broker, ssl=context) as server:
        assert server.url.startswith("ssl://")
        lines = await java_run("OpenWireClient", server.url, "messages", jvm=trusting_jvm)
        assert lines[-2:] == ["ACKED", "DONE"] and len(lines) == 9


async def test_a_java_service_answers_a_python_request_on_its_temporary_queue(java_run: JavaRun) -> None:
    """Request/reply across languages: the Python side's temporary queue reaches the Java client as an
    ActiveMQTempQueue it may send to (it learnt of it from the broker's DestinationInfo advisory)."""
    async with Broker() as broker, await start_openwire_server(broker) as server:
        python = await connect(broker)
        session = await python.create_session(AckMode.AUTO_ACKNOWLEDGE)
        replies = await session.create_temporary_queue()
        consumer = await session.create_consumer(replies)
        producer = await session.create_producer("ow.service")
        await producer.send("order 42", reply_to=replies, correlation_id="req-1")
        lines = await java_run("OpenWireClient", server.url, "reply", "ow.service")
        assert lines[1:] == ["REQUEST text:order 42 reply-to a temporary queue", "REPLIED", "DONE"]
        answer = await consumer.receive(timeout=10)
        assert answer is not None and answer.body == "answer to order 42" and answer.correlation_id == "req-1"
        await python.close()
