"""How ``minibroker serve`` starts: it binds and prints its URL before it imports the broker, so that clients can
connect at once; a signal, a client or a mistake in the meantime is handled as well as once it runs. And ``import
minibroker`` itself is cheap: its public names are imported on first use."""

from __future__ import annotations

import asyncio
import errno
import inspect
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.servekit import MINIBROKER, TIMEOUT, run, serve

import minibroker
from minibroker import Broker
from minibroker.client import AckMode, connect
from minibroker.plugins.server.tcp import start_server
from minibroker.plugins.stomp import start_stomp_server


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_right_after_the_url_is_a_clean_stop(sig: int, tmp_path: Path) -> None:
    """The signal comes while the broker is still being imported: the broker starts, stops at once, exit status 0."""
    served = await serve(tmp_path)
    try:
        assert await served.stop(sig) == 0
        assert served.proc.stderr is not None
        assert await served.proc.stderr.read() == b""
    finally:
        await served.kill()


async def test_a_client_connecting_right_after_the_url_is_served(tmp_path: Path) -> None:
    """The connection waits in the listening socket's backlog until the broker runs, then gets its answers."""
    served = await serve(tmp_path)
    try:
        async with await connect(served.url) as conn:
            session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
            await (await session.create_producer("early")).send("first")
            consumer = await session.create_consumer("early")
            msg = await consumer.receive(timeout=TIMEOUT)
            assert msg is not None and msg.body == "first"
        assert await served.stop() == 0
    finally:
        await served.kill()


async def test_port_in_use_exits_1_without_printing_a_url(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        code, out, err = await run(MINIBROKER, "serve", "--port", port, cwd=tmp_path)
        assert (code, out) == (1, "")
        assert err == (
            f"minibroker serve: [Errno {errno.EADDRINUSE}] error while attempting to bind on address "
            f"('127.0.0.1', {port}): address already in use\n"
        )
        # the STOMP port too; the TCP socket bound just before is released
        code, out, err = await run(MINIBROKER, "serve", "--port", "0", "--stomp-port", port, cwd=tmp_path)
        assert (code, out) == (1, "")
        assert err == (
            f"minibroker serve: STOMP: [Errno {errno.EADDRINUSE}] error while attempting to bind on address "
            f"('127.0.0.1', {port}): address already in use\n"
        )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--max-frame-size", "10"], "max_frame_size must be at least 1024 bytes, not 10"),
        (["--max-connections", "-1"], "max_connections must be at least 1, not -1"),
        (["--port", "70000"], "port must be 0-65535, not 70000"),
        (["--port", "0", "--stomp-port", "-1"], "STOMP: port must be 0-65535, not -1"),
    ],
)
async def test_bad_settings_exit_1_before_the_url(options: list[str], message: str, tmp_path: Path) -> None:
    code, out, err = await run(MINIBROKER, "serve", *options, cwd=tmp_path)
    assert (code, out, err) == (1, "", f"minibroker serve: {message}\n")


async def test_host_and_ports_from_the_config_file(tmp_path: Path) -> None:
    """The file is read before binding: its [server] host, port and stomp_port are used (no --port here)."""
    (tmp_path / "broker.toml").write_text('[server]\nhost = "127.0.0.1"\nport = 0\nstomp_port = 0\n')
    proc = await asyncio.create_subprocess_exec(
        MINIBROKER,
        "serve",
        "--config",
        "broker.toml",
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        tcp_url = (await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)).decode().strip()
        stomp_url = (await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)).decode().strip()
        assert tcp_url.startswith("tcp://127.0.0.1:") and stomp_url.startswith("stomp://127.0.0.1:")
        async with await connect(tcp_url):
            pass
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def _imported_by(code: str, tmp_path: Path) -> set[str]:
    """The modules a fresh interpreter has imported after running ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(*sys.modules)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=TIMEOUT,
    ).stdout
    return set(out.split())


def test_the_command_line_imports_neither_asyncio_nor_the_broker(tmp_path: Path) -> None:
    modules = _imported_by("import minibroker.plugins.server.cli", tmp_path)
    assert "minibroker.plugins.server.cli" in modules
    unwanted = {
        "asyncio",
        "attrs",
        "typing",
        "logging",
        "minibroker._driver.broker",
        "minibroker.config",
        "minibroker.redelivery",
    }
    assert modules & unwanted == set()


def test_import_minibroker_is_lazy(tmp_path: Path) -> None:
    assert "asyncio" not in _imported_by("import minibroker", tmp_path)
    modules = _imported_by("from minibroker import Broker", tmp_path)
    assert {"asyncio", "minibroker._driver.broker"} <= modules


def test_the_public_names_are_all_there() -> None:
    from minibroker import clock
    from minibroker._driver import broker as _driver

    assert minibroker.Broker is _driver.Broker and minibroker.ManualClock is clock.ManualClock
    assert set(minibroker.__all__) <= set(dir(minibroker))
    assert "TYPE_CHECKING" not in dir(minibroker)
    namespace: dict[str, object] = {}
    exec("from minibroker import *", namespace)
    assert set(minibroker.__all__) <= set(namespace)
    with pytest.raises(AttributeError, match="has no attribute 'Brokr'"):
        minibroker.Brokr  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(ImportError):
        exec("from minibroker import Brokr", {})


def test_serve_without_a_config_builds_the_broker_the_config_would() -> None:
    """Without --config, ``serve`` builds ``Broker(clock=..., data_dir=..., history_limit=SERVED_HISTORY_LIMIT)`` and
    does not import minibroker.config: that is the broker ``BrokerConfig()`` describes only while Broker's defaults,
    with that change, are BrokerConfig's."""
    from minibroker._defaults import DEFAULT_MAX_FRAME_SIZE
    from minibroker.config import BrokerConfig
    from minibroker.plugins.server.cli import SERVED_HISTORY_LIMIT
    from minibroker.wire import DEFAULT_MAX_FRAME_SIZE as CODEC_MAX_FRAME_SIZE

    defaults = {name: p.default for name, p in inspect.signature(Broker).parameters.items()}
    defaults["history_limit"] = SERVED_HISTORY_LIMIT
    for name, value in BrokerConfig().broker_kwargs().items():
        assert value == defaults[name] or (not value and not defaults[name]), name
    assert DEFAULT_MAX_FRAME_SIZE == CODEC_MAX_FRAME_SIZE


async def test_servers_on_sockets_bound_beforehand() -> None:
    """``start_server(sock=...)`` and ``start_stomp_server(sock=...)`` serve on listening sockets they are given
    (one or several), and close them."""
    socks = [socket.create_server(("127.0.0.1", 0)) for _ in range(3)]
    async with Broker() as broker:
        server = await start_server(broker, sock=socks[:2])
        stomp = await start_stomp_server(broker, sock=socks[2])
        assert server.url == f"tcp://127.0.0.1:{socks[0].getsockname()[1]}"
        assert stomp.url == f"stomp://127.0.0.1:{socks[2].getsockname()[1]}"
        for sock in socks[:2]:
            async with await connect(f"tcp://127.0.0.1:{sock.getsockname()[1]}") as conn:
                await conn.create_session()
        reader, writer = await asyncio.open_connection("127.0.0.1", socks[2].getsockname()[1])
        writer.write(b"CONNECT\naccept-version:1.2\nhost:localhost\n\n\x00")
        assert (await asyncio.wait_for(reader.readuntil(b"\x00"), TIMEOUT)).startswith(b"CONNECTED")
        writer.close()
        await stomp.close()
        await server.close()
    assert all(sock.fileno() == -1 for sock in socks)


async def test_a_store_that_is_not_a_database_is_one_line_before_the_url(tmp_path: Path) -> None:
    """issue 29: the store is checked before the URL is printed, so no client connects to a broker that will not
    start; a database file that is not one (a 4-byte file) is one line, not a traceback."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "minibroker.sqlite3").write_bytes(b"abcd")
    code, out, err = await run(MINIBROKER, "serve", "--port", "0", "--data-dir", str(data), cwd=tmp_path)
    assert (code, out) == (1, "")
    assert err.strip().splitlines() == [
        f"minibroker serve: cannot open the message store {data}/minibroker.sqlite3: file is not a database"
    ]


async def test_a_store_held_by_another_broker_is_refused_before_the_url_even_without_its_lock_file(
    tmp_path: Path,
) -> None:
    """issue 31: deleting the lock file does not let a second broker in (SQLite's own lock holds); the error says
    so before the URL."""
    from minibroker.store import SqliteStore

    data = tmp_path / "data"
    store = SqliteStore(data)
    try:
        (data / "lock").unlink()
        code, out, err = await run(MINIBROKER, "serve", "--port", "0", "--data-dir", str(data), cwd=tmp_path)
    finally:
        store.close()
    assert (code, out) == (1, "")
    assert err.strip() == f"minibroker serve: the message store in {data} is in use by another broker"
