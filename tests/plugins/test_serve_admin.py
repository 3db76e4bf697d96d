"""``minibroker serve --config/--data-dir`` and the day-to-day commands ``purge`` and ``browse``, as processes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.servekit import MINIBROKER, TIMEOUT, Served, run, serve

from minibroker.client import AckMode, connect
from minibroker.errors import AccessDenied, LimitExceeded
from minibroker.transport.commands import GetQueueStatistics
from minibroker.transport.tcp_link import TcpLink

CONFIG = """
[limits]
max_connections = 2

[destinations."limited.>"]
memory_limit = 1000
send_fail_if_no_space = true

[users.admin]
password = "admin-pw"
groups = ["admins"]

[users.reader]
password = "reader-pw"
groups = ["readers"]

[[authorization]]
destination = ">"
read = ["admins", "readers"]
write = ["admins"]
admin = ["admins"]

[[authorization]]
destination = "topic://>"
read = ["admins"]
write = ["admins"]
admin = ["admins"]
"""


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    (tmp_path / "broker.toml").write_text(CONFIG)
    s = await serve(tmp_path, "--config", "broker.toml", "--data-dir", "data")
    try:
        yield s
    finally:
        if s.proc.returncode is None:
            s.proc.kill()
            await s.proc.wait()


ADMIN = ("--user", "admin", "--password", "admin-pw")


async def fill(url: str, queue: str, bodies: list[str]) -> None:
    async with await connect(url, user="admin", password="admin-pw") as conn:
        producer = await (await conn.create_session()).create_producer(queue)
        for body in bodies:
            await producer.send(body, properties={"n": len(body)})


async def test_config_applies(served: Served) -> None:
    with pytest.raises(AccessDenied):
        await connect(served.url)
    async with await connect(served.url, user="admin", password="admin-pw") as conn:
        producer = await (await conn.create_session()).create_producer("limited.q")
        await producer.send("x" * 900)
        await producer.send("x" * 900)  # 964 + 964 bytes: over the limit after this one
        with pytest.raises(LimitExceeded, match=r"limited\.q"):
            await producer.send("x")
        async with await connect(served.url, user="reader", password="reader-pw"):
            with pytest.raises(LimitExceeded, match="at most 2 connections"):
                await connect(served.url, user="reader", password="reader-pw")


async def test_browse_and_purge(served: Served, tmp_path: Path) -> None:
    await fill(served.url, "orders", ["first", "second\nline", "third" * 20])
    code, out, err = await run(MINIBROKER, "browse", "--url", served.url, "orders", *ADMIN, cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["message", "id", "priority"]
    assert "first" in lines[1] and "second\\nline" in lines[2] and lines[3].endswith("...")
    assert lines[-1] == "(3 messages in orders)"
    code, out, _ = await run(MINIBROKER, "browse", "--url", served.url, "orders", "--limit", "1", *ADMIN, cwd=tmp_path)
    assert code == 0 and len(out.splitlines()) == 3 and out.splitlines()[-1] == "(1 of 3 messages in orders)"

    code, out, err = await run(
        MINIBROKER, "purge", "--url", served.url, "orders", "--user", "reader", "--password", "reader-pw", cwd=tmp_path
    )
    assert code == 1 and "User reader is not authorized to administer: queue://orders" in err
    env = {"MINIBROKER_USER": "admin", "MINIBROKER_PASSWORD": "admin-pw", "PATH": str(Path(MINIBROKER).parent)}
    code, out, err = await run(MINIBROKER, "purge", "--url", served.url, "orders", cwd=tmp_path, env=env)
    assert (code, out.strip()) == (0, "purged 3 messages from orders"), err
    code, out, _ = await run(MINIBROKER, "stat", "--url", served.url, *ADMIN, cwd=tmp_path)
    assert code == 0 and out.splitlines()[1].split()[:2] == ["orders", "0"]


async def test_wrong_password(served: Served, tmp_path: Path) -> None:
    code, _, err = await run(
        MINIBROKER, "stat", "--url", served.url, "--user", "admin", "--password", "nope", cwd=tmp_path
    )
    assert code == 1 and "User name [admin] or password is invalid" in err


async def test_sigterm_flushes_and_a_restart_brings_messages_back(served: Served, tmp_path: Path) -> None:
    await fill(served.url, "orders", ["a", "b", "c"])
    async with await connect(served.url, user="admin", password="admin-pw") as conn:
        consumer = await (await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)).create_consumer("orders")
        msg = await consumer.receive(timeout=TIMEOUT)
        assert msg is not None and msg.body == "a"
        await msg.acknowledge()
        # acks are fire-and-forget: a request on the same connection is the barrier that proves it was applied
        assert isinstance(conn._link, TcpLink)
        stats = await conn._link.request(GetQueueStatistics("orders"))
        assert stats is not None and stats.size == 2
        assert await served.stop() == 0
    again = await serve(tmp_path, "--config", "broker.toml", "--data-dir", "data")
    try:
        code, out, _ = await run(MINIBROKER, "browse", "--url", again.url, "orders", *ADMIN, cwd=tmp_path)
        assert code == 0 and out.splitlines()[-1] == "(2 messages in orders)"
        # a second broker on the same directory is refused, before it prints a URL anyone could connect to
        code, out, err = await run(MINIBROKER, "serve", "--port", "0", "--data-dir", "data", cwd=tmp_path)
        assert code == 1 and out == "" and "in use by another broker" in err
        # and so is one that names the directory in its config file
        (tmp_path / "same-dir.toml").write_text('[broker]\ndata_dir = "data"\n')
        code, out, err = await run(MINIBROKER, "serve", "--port", "0", "--config", "same-dir.toml", cwd=tmp_path)
        assert code == 1 and out == "" and "in use by another broker" in err
    finally:
        assert await again.stop() == 0


async def test_bad_config(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text('[destinations."orders.>"]\nmemroy_limit = 5\n')
    code, _, err = await run(MINIBROKER, "serve", "--port", "0", "--config", "broker.toml", cwd=tmp_path)
    assert code == 1 and 'destinations."orders.>".memroy_limit: unknown key' in err


@pytest.mark.parametrize("command", ["purge", "browse", "stat", "serve"])
async def test_help(command: str, tmp_path: Path) -> None:
    code, out, _ = await run(MINIBROKER, command, "--help", cwd=tmp_path)
    assert code == 0 and out.startswith(f"usage: minibroker {command}")
    if command != "serve":
        assert "--password" in out and "--url" in out
    else:
        assert "--config" in out and "--data-dir" in out


async def test_stat_lists_topics_and_durable_subscriptions(served: Served, tmp_path: Path) -> None:
    """``minibroker stat`` shows topics (published, acknowledged, subscribers) and durable subscriptions."""
    async with await connect(served.url, user="admin", password="admin-pw", client_id="billing") as conn:
        session = await conn.create_session()
        await (await session.create_durable_subscriber("topic://prices", "watch")).close()
        producer = await session.create_producer("topic://prices")
        await producer.send("p1")
        await producer.send("p2")
        code, out, err = await run(MINIBROKER, "stat", "--url", served.url, *ADMIN, cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    topic_header = lines.index(next(line for line in lines if line.startswith("topic ")))
    assert lines[topic_header + 1].split() == ["prices", "2", "0", "1"]
    durable_row = next(line for line in lines if line.startswith("watch"))
    assert durable_row.split() == ["watch", "billing", "prices", "no", "2"]
    assert not any(line.startswith("scheduled:") for line in lines)  # shown only when something waits


async def test_stat_shows_what_waits_in_the_scheduler(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text("[broker]\nscheduler_support = true\n")
    server = await serve(tmp_path, "--config", str(tmp_path / "broker.toml"))
    try:
        async with await connect(server.url) as conn:
            producer = await (await conn.create_session()).create_producer("later")
            await producer.send("in an hour", properties={"AMQ_SCHEDULED_DELAY": 3_600_000})
        code, out, err = await run(MINIBROKER, "stat", "--url", server.url, cwd=tmp_path)
        assert code == 0, err
        assert "scheduled: 1 message waiting in the scheduler" in out
    finally:
        server.proc.terminate()
        await server.proc.wait()
