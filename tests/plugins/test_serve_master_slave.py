"""``minibroker serve`` as ActiveMQ's shared-storage slave (issue 44, item 5): with ``[server] wait_for_lock`` (or
``--wait-for-lock``) a second broker on a data directory another one holds waits for its lock, binding no port and
printing no URL, and starts with the master's persistent messages once the master stops; without it, it refuses to
start (ActiveMQ's ``failIfLocked``). The same with ActiveMQ's JMS client: openwire/test_master_slave.py."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from support.servekit import MINIBROKER, Served, run, serve

from minibroker.client import connect


async def test_a_waiting_slave_starts_with_the_masters_messages_when_it_stops(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text(
        '[broker]\ndata_dir = "data"\n\n[server]\nwait_for_lock = true\nlock_retry_interval = 0.05\n'
    )
    master = await serve(tmp_path, "--data-dir", "data")
    slave = await asyncio.create_subprocess_exec(
        MINIBROKER,
        "serve",
        "--port",
        "0",
        "--config",
        "broker.toml",
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert slave.stderr is not None and slave.stdout is not None
        said = (await asyncio.wait_for(slave.stderr.readline(), 30)).decode()
        assert "locked by another broker: this broker is now a slave waiting for the lock" in said
        async with await connect(master.url) as conn:
            session = await conn.create_session()
            producer = await session.create_producer("ms.kept")
            for body in ("a", "b"):
                await producer.send(body, persistent=True)
        assert await master.stop(signal.SIGTERM) == 0
        url = (await asyncio.wait_for(slave.stdout.readline(), 30)).decode().strip()
        assert url.startswith("tcp://127.0.0.1:"), url
        async with await connect(url) as conn:
            consumer = await (await conn.create_session()).create_consumer("ms.kept")
            received = [await consumer.receive(timeout=10) for _ in range(2)]
            assert [m.body for m in received if m is not None] == ["a", "b"]
        assert await Served(slave, url).stop(signal.SIGTERM) == 0
    finally:
        await master.kill()
        if slave.returncode is None:
            slave.kill()
            await slave.wait()


async def test_without_it_a_held_directory_is_refused(tmp_path: Path) -> None:
    master = await serve(tmp_path, "--data-dir", "data")
    try:
        code, out, err = await run(MINIBROKER, "serve", "--port", "0", "--data-dir", "data", cwd=tmp_path)
        assert code == 1 and out == "" and "in use by another broker" in err
    finally:
        await master.kill()


async def test_the_retry_interval_must_be_positive(tmp_path: Path) -> None:
    code, out, err = await run(
        MINIBROKER, "serve", "--port", "0", "--wait-for-lock", "--lock-retry-interval", "0", cwd=tmp_path
    )
    assert code == 1 and out == "" and "--lock-retry-interval 0.0 must be above 0" in err
