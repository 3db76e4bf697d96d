"""``minibroker serve``: ActiveMQ's own JMS client, Debian's activemq-client 5.17.2, talks to a served broker with a
plain ``tcp://host:port`` URL on serve's own port (61616 by default, shared with the native protocol by each client's
first bytes), over TLS on ``--ssl-port``, and alone on ``--openwire-port`` / ``[server] openwire_port`` (issue 44)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest
from support.servekit import serve

from minibroker.client import AckMode, connect

from .test_java_client import CERTS, SCENARIOS, JavaRun

MESSAGES = next(expected for scenario, _, expected in SCENARIOS if scenario == "messages")


async def test_the_java_client_and_the_native_client_share_serves_port(java_run: JavaRun, tmp_path: Path) -> None:
    """The Java client on ``tcp://127.0.0.1:<serve's port>`` with no other setting, while a native client of the
    same port sends it a request and waits for the answer on its temporary queue."""
    served = await serve(tmp_path)
    try:
        port = served.url.rsplit(":", 1)[1]
        async with await connect(served.url) as python:
            session = await python.create_session(AckMode.AUTO_ACKNOWLEDGE)
            replies = await session.create_temporary_queue()
            consumer = await session.create_consumer(replies)
            await (await session.create_producer("orders")).send("order 42", reply_to=replies, correlation_id="r1")
            lines = await java_run("OpenWireClient", f"tcp://127.0.0.1:{port}", "reply", "orders")
            assert lines[1:] == ["REQUEST text:order 42 reply-to a temporary queue", "REPLIED", "DONE"]
            answer = await consumer.receive(timeout=10)
            assert answer is not None and answer.body == "answer to order 42" and answer.correlation_id == "r1"
            lines = await java_run("OpenWireClient", f"tcp://127.0.0.1:{port}", "messages")
            assert lines[0].startswith("CONNECTED ID:"), lines
            assert lines[1:] == [*MESSAGES, "DONE"]
    finally:
        await served.kill()


async def test_the_java_client_over_tls_on_the_ssl_port(
    java_run: JavaRun, tmp_path: Path, trusting_jvm: list[str]
) -> None:
    """``--ssl-port`` serves both protocols over TLS, as ActiveMQ's ``ssl://`` on 61617 serves its JMS client."""
    cert, key = CERTS / "server.crt", CERTS / "server.key"
    served = await serve(tmp_path, "--ssl-port", "0", "--tls-cert", str(cert), "--tls-key", str(key))
    try:
        assert served.proc.stdout is not None
        ssl_url = (await asyncio.wait_for(served.proc.stdout.readline(), 10)).decode().strip()
        assert ssl_url.startswith("ssl://127.0.0.1:")
        lines = await java_run("OpenWireClient", ssl_url, "messages", jvm=trusting_jvm)
        assert lines[1:] == [*MESSAGES, "DONE"]
        async with await connect(ssl_url, ssl=ssl.create_default_context(cafile=cert)) as native:
            assert (await native.create_session()) is not None
    finally:
        await served.kill()


@pytest.mark.parametrize("how", ["option", "config"])
async def test_an_openwire_port_of_its_own(java_run: JavaRun, tmp_path: Path, how: str) -> None:
    if how == "option":
        options = ["--openwire-port", "0"]
    else:
        (tmp_path / "broker.toml").write_text("[server]\nopenwire_port = 0\n")
        options = ["--config", str(tmp_path / "broker.toml")]
    served = await serve(tmp_path, *options)
    try:
        assert served.proc.stdout is not None
        openwire = (await asyncio.wait_for(served.proc.stdout.readline(), 10)).decode().strip()
        assert openwire.startswith("openwire://127.0.0.1:")
        port = openwire.rsplit(":", 1)[1]
        lines = await java_run("OpenWireClient", f"tcp://127.0.0.1:{port}", "messages")
        assert lines[0].startswith("CONNECTED ID:"), lines
        assert lines[1:] == [*MESSAGES, "DONE"]
        async with await connect(served.url) as conn:  # the native protocol still answers on serve's port
            assert (await conn.create_session()) is not None
        reader, writer = await asyncio.open_connection("127.0.0.1", int(port))  # and not on the OpenWire port
        writer.write(b"\x00\x00\x00\x09\x01MBRK\x00\x02")
        data = await asyncio.wait_for(reader.read(65536), 10)
        assert data[4:13] == b"\x01ActiveMQ"  # the OpenWire server's WireFormatInfo: it speaks first, as ActiveMQ
        writer.close()
    finally:
        await served.kill()
