"""Shared-storage master/slave with ActiveMQ's JMS client (issue 44, item 5): a second ``minibroker serve
--wait-for-lock`` on the master's data directory waits for its lock without binding a port; the master dies, the
slave takes the lock, loads the store and listens; the client's ``failover:(master,slave)`` URL finds it and carries
on, with no persistent message lost."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from support.servekit import MINIBROKER, Served, serve

from .test_failover import RECONNECT, java_client, openwire_port, queue_holds


def free_port() -> int:
    """A port nothing listens on now (the slave's, which it binds only once it is live)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def start_slave(cwd: Path, *options: str) -> asyncio.subprocess.Process:
    """``serve --wait-for-lock``: returns once it said, on stderr, that it waits for the lock."""
    proc = await asyncio.create_subprocess_exec(
        MINIBROKER,
        "serve",
        "--port",
        "0",
        "--wait-for-lock",
        "--lock-retry-interval",
        "0.05",
        *options,
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stderr is not None
    line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
    assert "this broker is now a slave waiting for the lock (trying every 0.05 s)" in line, line
    return proc


async def test_the_slave_takes_over_and_the_client_carries_on(openwire_java: str, tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "data"))
    master = await serve(tmp_path, *data, "--openwire-port", "0")
    slave_port = free_port()
    slave = await start_slave(tmp_path, *data, "--openwire-port", str(slave_port))
    promoted: Served | None = None
    try:
        master_port = await openwire_port(master)
        with socket.socket() as probe:  # the waiting slave binds nothing: the client's URL finds the live one
            assert probe.connect_ex(("127.0.0.1", slave_port)) != 0
        url = f"failover:(tcp://127.0.0.1:{master_port},tcp://127.0.0.1:{slave_port})?randomize=false&{RECONNECT}"
        async with java_client(openwire_java, url, "takeover") as client:
            await client.until_line("HALF")
            await queue_holds(master.url, "ow.takeover", size=2, dequeued=1)  # t1 acked, t2 and t3 prefetched
            await master.kill()
            assert slave.stdout is not None
            line = (await asyncio.wait_for(slave.stdout.readline(), 30)).decode().strip()
            assert line.startswith("tcp://127.0.0.1:"), line
            promoted = Served(slave, line)
            assert await openwire_port(promoted) == slave_port
            client.go_on()
            lines = await client.finish()
        assert lines == [
            "RECEIVED t1",
            "HALF",
            "SENT t4",
            "RECEIVED t2",
            "RECEIVED t3",
            "RECEIVED t4",
            "AFTER null",
            "DONE",
        ]
        await queue_holds(promoted.url, "ow.takeover", size=0, dequeued=3)
    finally:
        await master.kill()
        if slave.returncode is None:
            slave.kill()
            await slave.wait()
