"""The ``minibroker_openwire`` fixture: an OpenWire listener on the test's own broker, for ActiveMQ's JMS client, and
what it does to virtual time (issue 44, item 1: the fixture)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from minibroker import Broker
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire.codec import OpenWireDecoder, encode_command
from minibroker.plugins.openwire.primitives import marshal_primitive_map
from minibroker.plugins.pytest_plugin import OpenWireEndpoint
from minibroker.typed import Long

from .test_java_client import SCENARIOS, JavaRun

pytestmark = pytest.mark.asyncio


async def test_the_java_client_on_the_tests_broker(
    minibroker_openwire: OpenWireEndpoint, minibroker: Broker, java_run: JavaRun
) -> None:
    assert minibroker_openwire.url == f"tcp://127.0.0.1:{minibroker_openwire.port}"
    assert minibroker_openwire.broker is minibroker
    expected = next(lines for scenario, _, lines in SCENARIOS if scenario == "messages")
    lines = await java_run("OpenWireClient", minibroker_openwire.url, "messages")
    assert lines[1:] == [*expected, "DONE"]
    queue = minibroker.queue("ow.messages")  # the test reads what the Java client did
    assert queue.size == 0 and queue.enqueued == queue.dequeued > 0


def keep_alive_for(host: str, port: int, seconds: float, period_ms: int) -> list[str]:
    """A JMS-like client on its own thread and the real clock: logs in with an inactivity check of ``period_ms``,
    then sends a KeepAliveInfo (answered in kind) every quarter period for ``seconds``; what it saw."""
    seen: list[str] = []
    decoder = OpenWireDecoder()
    with socket.create_connection((host, port), timeout=10) as sock:

        def read_until(kind: type[ow.DataStructure]) -> None:
            while True:
                while (command := decoder.next_command()) is not None:
                    if isinstance(command, kind):
                        seen.append(type(command).__name__)
                        return
                data = sock.recv(65536)
                if not data:
                    seen.append("CLOSED")
                    raise ConnectionError("closed by the broker")
                decoder.receive_data(data)

        offer = marshal_primitive_map({"MaxInactivityDuration": Long(period_ms)})
        sock.sendall(encode_command(ow.WireFormatInfo(version=12, marshalled_properties=offer)))
        read_until(ow.BrokerInfo)
        sock.sendall(encode_command(ow.ConnectionInfo(1, True, ow.ConnectionId("ID:fixture-1:1"), "fixture")))
        read_until(ow.Response)
        command_id = 2
        deadline = time.monotonic() + seconds
        with_pause = period_ms / 4000
        try:
            while time.monotonic() < deadline:
                time.sleep(with_pause)  # the client's own clock, as the JVM's InactivityMonitor
                sock.sendall(encode_command(ow.KeepAliveInfo(command_id, True)))
                command_id += 1
                read_until(ow.KeepAliveInfo)
            sock.sendall(encode_command(ow.ShutdownInfo(command_id)))
        except ConnectionError:
            pass
    return seen


async def test_a_connected_jms_client_holds_virtual_time_to_real_speed(
    minibroker_openwire: OpenWireEndpoint,
) -> None:
    """With a 0.4 s inactivity check and virtual time jumping whenever the loop idles, the broker's read check
    would come before the client's next KeepAliveInfo and drop it; held to real speed, the client stays."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[list[str]] = loop.create_future()

    def client() -> None:
        try:
            result = keep_alive_for(minibroker_openwire.host, minibroker_openwire.port, 1.2, 400)
        except BaseException as exc:  # handed to the test
            loop.call_soon_threadsafe(done.set_exception, exc)
        else:
            loop.call_soon_threadsafe(done.set_result, result)

    thread = threading.Thread(target=client)
    thread.start()
    try:
        seen = await asyncio.wait_for(done, timeout=20)
    finally:
        thread.join()
    assert "CLOSED" not in seen and seen.count("KeepAliveInfo") >= 10, seen
    await minibroker_openwire.server.wait_connection_count(0)
