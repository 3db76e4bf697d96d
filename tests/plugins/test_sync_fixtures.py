"""Synchronous tests are first-class: ``minibroker_sync`` and its STOMP, MQTT and OpenWire listeners serve plain
``def`` tests with blocking clients, and an async fixture in a plain ``def`` test fails at once, naming the one to
use."""

from __future__ import annotations

import pytest
from support.openwire_java import MESSAGES, compile_openwire_java

ARGS = ("-o", "asyncio_mode=strict", "-o", "asyncio_default_fixture_loop_scope=function", "-p", "no:cacheprovider")


def test_blocking_clients_in_a_plain_test(pytester: pytest.Pytester) -> None:
    """stomp.py and paho in plain ``def`` tests; the in-process assertions and the capture's records (with MQTT's
    retain flag and QoS) as blocking calls."""
    pytester.makepyfile("""
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
import stomp

def test_stomp(minibroker_stomp_sync, minibroker_sync):
    conn = stomp.Connection12(minibroker_stomp_sync.host_and_ports)
    conn.connect(wait=True)
    conn.send("/queue/orders", "order 1", headers={"receipt": "r1"})
    conn.disconnect()
    minibroker_sync.wait_for_queue_size("orders", 1)
    [message] = minibroker_sync.browse("orders")
    assert message.body == b"order 1"
    assert minibroker_sync.purge() == 1 and minibroker_sync.size("orders") == 0
    assert minibroker_stomp_sync.broker is minibroker_sync

def test_mqtt(minibroker_mqtt_sync, minibroker_sync):
    readings = minibroker_sync.capture("sensors/#")
    client = mqtt.Client(CallbackAPIVersion.VERSION2)
    client.connect(minibroker_mqtt_sync.host, minibroker_mqtt_sync.port)
    client.loop_start()
    client.publish("sensors/kitchen", "21.5", qos=1, retain=True).wait_for_publish(10)
    client.loop_stop()
    client.disconnect()
    [reading] = readings.wait(1)
    assert reading.mqtt_topic == "sensors/kitchen" and reading.text == "21.5"
    assert reading.retain and reading.qos == 1
    assert readings.records == [reading]
""")
    pytester.runpytest_subprocess(*ARGS, timeout=120).assert_outcomes(passed=2)


def test_async_fixture_in_a_plain_test_fails_at_once(pytester: pytest.Pytester) -> None:
    """Today's hang (stomp.py blocking in connect for ever) is an error naming the synchronous fixture."""
    pytester.makepyfile("""
import stomp

def test_stomp(minibroker_stomp):
    conn = stomp.Connection12(minibroker_stomp.host_and_ports)
    conn.connect(wait=True)

def test_broker(minibroker):
    pass

def test_openwire(minibroker_openwire):
    pass
""")
    result = pytester.runpytest_subprocess(*ARGS, timeout=120)
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(
        [
            "*minibroker_stomp is an async fixture*In a synchronous test use minibroker_stomp_sync*",
            "*minibroker is an async fixture*In a synchronous test use minibroker_sync *",
            "*minibroker_openwire is an async fixture*In a synchronous test use minibroker_openwire_sync*",
        ]
    )


def test_the_java_client_in_a_plain_test(pytester: pytest.Pytester) -> None:
    """ActiveMQ's JMS client (Debian's activemq-client, a Java process the test starts and waits for) on
    ``minibroker_openwire_sync``: it sends, commits, receives and acks on the test's broker, which the test then
    reads; its KeepAliveInfos keep virtual time at real speed while it is connected, as the async fixture's do."""
    classpath = compile_openwire_java(pytester.path / "classes")
    pytester.makepyfile(f"""
import subprocess

def test_java(minibroker_openwire_sync, minibroker_sync):
    assert minibroker_openwire_sync.url == f"tcp://127.0.0.1:{{minibroker_openwire_sync.port}}"
    assert minibroker_openwire_sync.broker is minibroker_sync
    command = ["java", "-cp", {classpath!r}, "OpenWireClient", minibroker_openwire_sync.url, "messages"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and lines[0].startswith("CONNECTED ID:"), done.stdout + done.stderr
    assert lines[1:] == {[*MESSAGES, "DONE"]!r}
    queue = minibroker_sync.call(lambda broker: broker.queue("ow.messages"))
    assert minibroker_sync.call(lambda broker: (queue.size, queue.enqueued == queue.dequeued > 0)) == (0, True)
""")
    pytester.runpytest_subprocess(*ARGS, timeout=180).assert_outcomes(passed=1)


def test_sync_helpers(pytester: pytest.Pytester) -> None:
    """The dead-letter reads and virtual time, from a synchronous test."""
    pytester.makepyfile("""
import pytest
import stomp
from minibroker.client import RetryPolicy

def rejected(minibroker_stomp_sync, minibroker_sync):
    conn = stomp.Connection12(minibroker_stomp_sync.host_and_ports)
    conn.connect(wait=True)
    conn.send("ActiveMQ.DLQ", "poison", headers={"receipt": "r"})
    conn.disconnect()
    minibroker_sync.wait_for_queue_size("ActiveMQ.DLQ", 1)

def test_looked_at(minibroker_stomp_sync, minibroker_sync):
    rejected(minibroker_stomp_sync, minibroker_sync)
    assert [letter.body for letter in minibroker_sync.dead_letters()] == [b"poison"]

def test_virtual_time(minibroker_sync):
    minibroker_sync.advance(3600)
    assert minibroker_sync.call(lambda broker: broker.clock.elapsed) == 3600.0
""")
    pytester.runpytest_subprocess(*ARGS, timeout=120).assert_outcomes(passed=2)
