"""Debian's activemq-client 5.17.2, ActiveMQ's own JMS client, against minibroker's OpenWire listener."""

from __future__ import annotations

from minibroker import Broker
from minibroker.plugins.openwire import start_openwire_server


async def test_connect_and_close(java_run) -> None:  # type: ignore[no-untyped-def]
    async with Broker() as broker:
        server = await start_openwire_server(broker)
        async with server:
            lines = await java_run("OpenWireClient", server.url, "connect")
            assert lines[0].startswith("CONNECTED ID:")
            assert lines[-1] == "DONE"
            await server.wait_connection_count(0)
        assert server.accepted == 1


async def test_messages_transactions_and_acks(java_run) -> None:  # type: ignore[no-untyped-def]
    async with Broker() as broker:
        server = await start_openwire_server(broker)
        async with server:
            lines = await java_run("OpenWireClient", server.url, "messages")
        assert lines[1:] == [
            "SENT 3",
            "COMMITTED",
            "RECEIVED text:hello, minibroker big=1099511627776(Long) flag=true(Boolean) kind=greeting(String) "
            "n=7(Integer) ratio=0.25(Double) small=3(Short)",
            "RECEIVED map:name=widget;ok=true;price=9.5;qty=3;",
            "RECEIVED text:non-persistent",
            "RECEIVED text:in a transaction",
            "ACKED",
            "DONE",
        ]
        for queue in ("ow.messages", "ow.tx"):
            stats = broker.queue_statistics(queue)
            assert stats is not None and stats.enqueued == stats.dequeued and stats.size == 0, stats
