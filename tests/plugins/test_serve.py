"""``minibroker serve`` as a real process: the URL on the first line, clients over TCP, a clean SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.servekit import MINIBROKER, TIMEOUT, Served, run, serve

from minibroker.client import AckMode, RedeliveryPolicy, connect


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    s = await serve(tmp_path)
    try:
        yield s
    finally:
        if s.proc.returncode is None:
            s.proc.kill()
            await s.proc.wait()


async def test_send_receive_and_sigterm(served: Served) -> None:
    async with await connect(served.url) as conn:
        session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
        producer = await session.create_producer("orders")
        await producer.send("order-1", properties={"n": 1})
        consumer = await session.create_consumer("orders")
        msg = await consumer.receive(timeout=TIMEOUT)
        assert msg is not None and msg.body == "order-1" and msg.properties["n"] == 1
        await msg.acknowledge()
        lost: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
        conn.exception_listener = lambda exc: lost.done() or lost.set_result(exc)
        assert await served.stop(signal.SIGTERM) == 0
        await asyncio.wait_for(lost, TIMEOUT)  # the server closed the client's connection on its way out
        assert conn.closed


async def test_sigint_exits_cleanly(served: Served) -> None:
    assert await served.stop(signal.SIGINT) == 0


async def test_stat(served: Served, tmp_path: Path) -> None:
    async with await connect(served.url) as conn:
        session = await conn.create_session()
        producer = await session.create_producer("orders")
        for _ in range(3):
            await producer.send("x")
        await session.create_consumer("invoices", prefetch=0)
        code, out, err = await run(MINIBROKER, "stat", "--url", served.url, cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["queue", "size", "in", "flight", "enqueued", "dequeued", "consumers", "dlq", "depth"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows == {"invoices": ["0", "0", "0", "0", "1", "0"], "orders": ["3", "0", "3", "0", "0", "0"]}


async def test_stat_counts_dead_letters_per_queue(served: Served, tmp_path: Path) -> None:
    """The "dlq depth" column: how many of a queue's messages sit in a dead-letter queue."""
    policy = RedeliveryPolicy(maximum_redeliveries=0)
    async with await connect(served.url, redelivery_policy=policy) as conn:
        session = await conn.create_session(AckMode.SESSION_TRANSACTED)
        producer = await session.create_producer("orders")
        for body in ("a", "b"):
            await producer.send(body)
        await session.commit()
        consumer = await session.create_consumer("orders")
        for _ in range(2):
            assert await consumer.receive(timeout=TIMEOUT) is not None
        await session.rollback()  # maximum_redeliveries=0: both go to ActiveMQ.DLQ
        code, out, err = await run(MINIBROKER, "stat", "--url", served.url, cwd=tmp_path)
    assert code == 0, err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    assert rows["orders"][-1] == "2"
    assert rows["ActiveMQ.DLQ"][0] == "2" and rows["ActiveMQ.DLQ"][-1] == "0"


async def test_stat_without_a_broker(served: Served, tmp_path: Path) -> None:
    url = served.url
    assert await served.stop() == 0
    code, _, err = await run(MINIBROKER, "stat", "--url", url, cwd=tmp_path)
    assert code == 1 and "cannot connect" in err


async def test_python_dash_m(tmp_path: Path) -> None:
    s = await serve(tmp_path, command=(sys.executable, "-m", "minibroker"))
    try:
        async with await connect(s.url) as conn:
            session = await conn.create_session()
            await (await session.create_producer("q")).send("via -m")
    finally:
        assert await s.stop() == 0


@pytest.mark.parametrize("command", [[], ["serve"], ["stat"], ["redelivery-plan"]])
async def test_help(command: list[str], tmp_path: Path) -> None:
    code, out, _ = await run(MINIBROKER, *command, "--help", cwd=tmp_path)
    assert code == 0 and out.startswith("usage: minibroker")


async def test_port_in_use(served: Served, tmp_path: Path) -> None:
    port = served.url.rsplit(":", 1)[1]
    code, _, err = await run(MINIBROKER, "serve", "--port", port, cwd=tmp_path)
    assert code == 1 and "minibroker serve:" in err


async def test_stomp_port(tmp_path: Path) -> None:
    """--stomp-port 0 serves STOMP too and prints its URL on the second line; a STOMP client connects, and a message
    sent over STOMP is received by a native client."""
    proc = await asyncio.create_subprocess_exec(
        MINIBROKER,
        "serve",
        "--port",
        "0",
        "--stomp-port",
        "0",
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        tcp_url = (await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)).decode().strip()
        stomp_url = (await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)).decode().strip()
        assert stomp_url.startswith("stomp://127.0.0.1:")
        host, port = stomp_url.removeprefix("stomp://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00")
        writer.write(b"SEND\ndestination:/queue/from-stomp\ncontent-length:5\nreceipt:r1\n\nhello\x00")
        await writer.drain()
        replies = b""
        while b"RECEIPT" not in replies:
            chunk = await asyncio.wait_for(reader.read(4096), TIMEOUT)
            assert chunk, replies
            replies += chunk
        assert replies.startswith(b"CONNECTED")
        writer.close()
        async with await connect(tcp_url) as conn:
            consumer = await (await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)).create_consumer("from-stomp")
            msg = await consumer.receive(timeout=TIMEOUT)
            assert msg is not None and msg.body in ("hello", b"hello")
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
