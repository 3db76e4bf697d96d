"""MQTT connector benchmark: ``.venv/bin/python tests/benchmarks/mqtt_bench.py [--messages N] [--runs R]``.

Runs minibroker (``minibroker serve --mqtt-port 0``, a child process) and, when Java and Debian's ActiveMQ with
``libmqtt-client-java`` are installed, ActiveMQ 5.17.2's MQTT connector (tests/plugins/mqtt/oracle) in the same run,
and drives each with paho-mqtt: one publisher sends N messages of 100 bytes at QoS 0, then at QoS 1, to a topic with
one subscriber at the same QoS. Printed per broker and QoS: messages per second (first publish to last delivery),
the broker process's CPU time per message (from /proc: user + system), and minibroker's ratio to ActiveMQ. Not part
of the test run; the figures go to the issue's closing note. ``--instructions`` counts minibroker's instructions per
message instead (callgrind), a figure machine noise does not move.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
#: seconds to wait for the subscriber's SUBACK: generous, as a broker under callgrind on a busy machine is slow
SUBACK_TIMEOUT = 600.0


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_minibroker(wrapper: list[str] | None = None) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [*(wrapper or []), sys.executable, "-P", "-m", "minibroker", "serve", "--port", "0", "--mqtt-port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # tcp://
    return proc, int(proc.stdout.readline().strip().rsplit(":", 1)[1])


def start_activemq() -> tuple[subprocess.Popen[str], int] | None:
    build = REPO / "tests" / "plugins" / "mqtt" / "oracle" / "build.sh"
    try:
        classpath = subprocess.run([str(build)], check=True, capture_output=True, text=True).stdout.splitlines()[-1]
    except (OSError, subprocess.CalledProcessError):
        return None
    proc = subprocess.Popen(
        ["java", "-cp", classpath, "MqttOracle"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())["port"]


def run_once(port: int, pid: int, qos: int, messages: int) -> tuple[float, float]:
    """(messages per second, broker CPU microseconds per message) for one publisher and one subscriber."""
    done = threading.Event()
    count = [0]

    def on_message(*_: object) -> None:
        count[0] += 1
        if count[0] == messages:
            done.set()

    ready = threading.Event()
    sub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-sub-{qos}")
    sub.on_message = on_message
    sub.on_subscribe = lambda *_: ready.set()
    sub.on_connect = lambda client, *_: client.subscribe("bench/t", qos)
    sub.connect("127.0.0.1", port, keepalive=0)
    sub.loop_start()
    # as long as the run needs: under callgrind the broker takes seconds to answer CONNECT and SUBSCRIBE, and a
    # publisher that started before the SUBACK would lose its first messages and wait for them forever
    if not ready.wait(SUBACK_TIMEOUT):
        sub.loop_stop()
        raise RuntimeError(f"no SUBACK within {SUBACK_TIMEOUT:.0f} s")
    pub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-pub-{qos}")
    pub.max_inflight_messages_set(1000)
    pub.max_queued_messages_set(0)
    pub.connect("127.0.0.1", port, keepalive=0)
    pub.loop_start()
    payload = b"x" * 100
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    for _ in range(messages):
        pub.publish("bench/t", payload, qos)
    finished = done.wait(600) if messages else True
    elapsed, cpu = time.perf_counter() - t0, cpu_seconds(pid) - cpu0
    for client in (pub, sub):
        client.disconnect()
        client.loop_stop()
    if not finished:
        raise RuntimeError(f"only {count[0]} of {messages} messages arrived")
    return (messages / elapsed, cpu / messages * 1e6) if messages else (0.0, 0.0)


def broker_instructions(qos: int, messages: int) -> int:
    """CPU instructions of the ``minibroker serve`` process, under callgrind, for one run of ``messages``."""
    import re
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "callgrind.log"
        proc, port = start_minibroker(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", f"--log-file={log}"]
        )
        try:
            run_once(port, proc.pid, qos, messages)
        finally:
            proc.terminate()
            proc.wait()
        found = re.search(r"Collected : (\d+)", log.read_text())
    assert found is not None, "callgrind wrote no total"
    return int(found.group(1))


def print_instructions(messages: int) -> int:
    """--instructions: the broker's instructions per message at each QoS (a figure the machine's noise does not
    move): the same run with and without the messages, the difference divided by their number."""
    print(f"MQTT, minibroker serve under callgrind, {messages} messages of 100 bytes, one publisher, one subscriber")
    for qos in (0, 1):
        per = (broker_instructions(qos, messages) - broker_instructions(qos, 0)) / messages
        print(f"QoS {qos}: {per:,.0f} broker instructions per message")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3, help="best of this many runs per case")
    parser.add_argument(
        "--instructions", action="store_true", help="count the broker's instructions per message instead (valgrind)"
    )
    args = parser.parse_args()
    if args.instructions:
        return print_instructions(min(args.messages, 2000))
    brokers = {"minibroker": start_minibroker()}
    activemq = start_activemq()
    if activemq is not None:
        brokers["ActiveMQ 5.17.2"] = activemq
    results: dict[tuple[str, int], tuple[float, float]] = {}
    try:
        for qos in (0, 1):
            for name, (proc, port) in brokers.items():
                runs = [run_once(port, proc.pid, qos, args.messages) for _ in range(args.runs)]
                results[name, qos] = (max(r[0] for r in runs), min(r[1] for r in runs))
    finally:
        for proc, _ in brokers.values():
            proc.terminate()
            proc.wait()
    print(f"MQTT, {args.messages} messages of 100 bytes, one publisher, one subscriber, best of {args.runs}")
    print(f"{'broker':<18}{'QoS':>4}{'msg/s':>10}{'CPU us/msg':>12}{'rate ratio':>12}{'CPU ratio':>11}")
    for (name, qos), (rate, cpu) in results.items():
        base = results.get(("ActiveMQ 5.17.2", qos))
        ratios = f"{rate / base[0]:>12.2f}{cpu / base[1]:>11.2f}" if base else ""
        print(f"{name:<18}{qos:>4}{rate:>10.0f}{cpu:>12.1f}{ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
