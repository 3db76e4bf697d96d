"""Fixtures for real clients: ``minibroker_stomp`` with stomp.py on virtual time, the stomp.py guide's example, and
the broker-process fixtures (``minibroker_proc``, ``minibroker_noproc``, the factories, the options)."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from pathlib import Path

import pytest

from minibroker import Broker
from minibroker.plugins.pytest_plugin import StompEndpoint

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "testing-a-stomp-py-service.md"
STRICT = (
    "-o",
    "asyncio_mode=auto",
    "-o",
    "asyncio_default_fixture_loop_scope=function",
    "-W",
    "error",
    "-p",
    "no:cacheprovider",
)


def readme_stomp_example() -> str:
    match = re.search(r"```python test_order_service.py\n(.*?)```", GUIDE.read_text(), re.S)
    assert match is not None
    return match.group(1)


class TestReadmeExample:
    def test_runs_as_written(self, pytester: pytest.Pytester) -> None:
        """The stomp.py guide's test passes as a user would paste it: no helper of their own, virtual time."""
        pytester.makepyfile(test_stomp_service=readme_stomp_example())
        pytester.runpytest(*STRICT).assert_outcomes(passed=1)


class TestStompEndpoint:
    async def test_addresses_and_shared_state(self, minibroker: Broker, minibroker_stomp: StompEndpoint) -> None:
        """The endpoint names the test's own broker; a frame sent over STOMP lands in ``minibroker.queue``."""
        assert minibroker_stomp.broker is minibroker
        assert minibroker_stomp.url == f"stomp://{minibroker_stomp.host}:{minibroker_stomp.port}"
        assert minibroker_stomp.host_and_ports == [(minibroker_stomp.host, minibroker_stomp.port)]
        reader, writer = await asyncio.open_connection(minibroker_stomp.host, minibroker_stomp.port)
        writer.write(b"CONNECT\naccept-version:1.2\nhost:x\n\n\x00")
        writer.write(b"SEND\ndestination:/queue/q\nreceipt:r1\n\nhello\x00")
        await writer.drain()
        replies = await asyncio.wait_for(reader.readuntil(b"RECEIPT"), timeout=10)
        assert replies.startswith(b"CONNECTED")
        assert [m.body for m in minibroker.queue("q").browse()] == ["hello"]
        writer.close()

    async def test_a_slow_connect_is_not_timed_out_by_autojump(self, minibroker_stomp: StompEndpoint) -> None:
        """A client (in its own thread, as stomp.py) 0.3 s slow to send CONNECT is answered, not closed: autojump
        does not jump to the 30 s CONNECT deadline while the peer is mid-handshake (issue 16)."""
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[bytes] = loop.create_future()

        def slow_client() -> None:
            with socket.create_connection((minibroker_stomp.host, minibroker_stomp.port), timeout=10) as sock:
                time.sleep(0.3)  # the client's own latency, not the broker's time
                sock.sendall(b"CONNECT\naccept-version:1.2\nhost:x\n\n\x00")
                data = sock.recv(1000)
            loop.call_soon_threadsafe(reply.set_result, data)

        thread = threading.Thread(target=slow_client)
        thread.start()
        try:
            assert (await asyncio.wait_for(reply, timeout=10)).startswith(b"CONNECTED")
        finally:
            thread.join()


BROKER_TOML = """
[users.app]
password = "secret"
groups = ["apps"]

[[authorization]]
destination = ">"
read = ["apps"]
write = ["apps"]
admin = ["apps"]

[limits]
max_connections = 5
"""

PROCESS_TESTS = """
import pytest
import stomp
from minibroker.plugins.pytest_plugin import minibroker_proc_factory

second_proc = minibroker_proc_factory(scope="module")


def test_session_process_takes_the_config(minibroker_proc, minibroker_session_url):
    assert minibroker_session_url == minibroker_proc.url.replace("localhost", "127.0.0.1")
    assert minibroker_proc.stomp_url == f"stomp://{minibroker_proc.host}:{minibroker_proc.stomp_port}"
    conn = stomp.Connection12(minibroker_proc.host_and_ports)
    conn.connect("app", "secret", wait=True)
    conn.disconnect()
    refused = stomp.Connection12(minibroker_proc.host_and_ports, reconnect_attempts_max=1)
    with pytest.raises(stomp.exception.ConnectFailedException):
        refused.connect("app", "wrong", wait=True)


def test_a_factory_makes_another_process(minibroker_proc, second_proc):
    assert second_proc.port != minibroker_proc.port
    assert second_proc.process.pid != minibroker_proc.process.pid


def test_processes_inside_a_test(minibroker_processes):
    first = minibroker_processes(stomp_port=None)
    second = minibroker_processes(config_text="[limits]\\nmax_connections = 1\\n")
    assert first.stomp_url is None and second.stomp_url is not None
    second.stop()
    assert second.process.poll() is not None
"""


class TestProcesses:
    def test_proc_factory_and_options(self, pytester: pytest.Pytester) -> None:
        """``minibroker_proc`` reads its broker.toml from ``--minibroker-config`` (users refuse a wrong password); a
        factory-made fixture and ``minibroker_processes`` start more, each on its own port."""
        config = pytester.makefile(".toml", broker=BROKER_TOML)
        pytester.makepyfile(test_processes=PROCESS_TESTS)
        pytester.runpytest(*STRICT, f"--minibroker-config={config}").assert_outcomes(passed=3)

    def test_noproc_points_at_a_running_broker(self, pytester: pytest.Pytester) -> None:
        """``minibroker_noproc`` uses the host and ports of the ini file or command line, starting nothing."""
        from minibroker.plugins.pytest_plugin import start_broker_process

        running = start_broker_process()
        try:
            pytester.makeini(f"[pytest]\nminibroker_host = 127.0.0.1\nminibroker_stomp_port = {running.stomp_port}\n")
            pytester.makepyfile(
                test_noproc="""
import stomp

def test_noproc(minibroker_noproc):
    assert minibroker_noproc.process is None
    conn = stomp.Connection12(minibroker_noproc.host_and_ports)
    conn.connect(wait=True)
    conn.disconnect()
"""
            )
            pytester.runpytest(*STRICT, f"--minibroker-port={running.port}").assert_outcomes(passed=1)
        finally:
            running.stop()

    def test_noproc_without_a_broker_says_what_to_do(self, pytester: pytest.Pytester) -> None:
        """Nothing listening: the test errors with the address and the command that would start a broker."""
        with socket.socket() as probe:  # a port that was free a moment ago
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        pytester.makepyfile(test_noproc="def test_noproc(minibroker_noproc):\n    pass\n")
        result = pytester.runpytest(*STRICT, f"--minibroker-port={free}")
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines([f"*no broker listens on 127.0.0.1:{free}*minibroker serve --port {free}*"])
