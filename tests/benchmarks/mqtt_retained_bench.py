"""An MQTT ``#`` over many retained topics, as a user meets it (issue 31): ``.venv/bin/python
tests/benchmarks/mqtt_retained_bench.py [--topics 50000]``.

Runs ``minibroker serve --mqtt-port 0`` (a child process). A paho-mqtt client publishes one retained message to each
of N topics (``r/0`` ... ``r/N-1``); then a subscriber to ``#`` takes them all back while another client publishes
at QoS 1 to a topic of its own, one message at a time, and times each PUBACK: what any other client waits while the
broker replays. The other client is a process of its own (in this one, the subscriber's 50,000 messages would hold
the interpreter it waits in). Printed: the broker process's CPU time for the replay (from /proc; target <= 2 s for
50,000) and the other client's longest round trip during it (target <= 100 ms), beside its longest round trip on the
idle broker measured in the same run (the floor: paho's threads and the machine). Not part of the test run.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import threading
import time
from multiprocessing.synchronize import Event

import paho.mqtt.client as mqtt
from mqtt_bench import cpu_seconds, start_minibroker


def client(port: int, name: str) -> mqtt.Client:
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=name)
    c.max_inflight_messages_set(1000)
    c.max_queued_messages_set(0)
    c.connect("127.0.0.1", port, keepalive=0)
    c.loop_start()
    return c


def round_trips(port: int, stop: Event, longest: multiprocessing.sharedctypes.Synchronized[float]) -> None:
    """Publish at QoS 1 until ``stop``, one at a time; the longest PUBACK wait goes to ``longest``."""
    other = client(port, "bench-other")
    most = 0.0
    while not stop.is_set():
        before = time.perf_counter()
        other.publish("other/ping", b"p", 1).wait_for_publish(30)
        most = max(most, time.perf_counter() - before)
        time.sleep(0.002)  # about 500 round trips a second: the other client is busy, not flooding
    other.disconnect()
    other.loop_stop()
    longest.value = most


def other_client(port: int) -> tuple[multiprocessing.Process, Event, multiprocessing.sharedctypes.Synchronized[float]]:
    stop, longest = multiprocessing.Event(), multiprocessing.Value("d", 0.0)
    process = multiprocessing.Process(target=round_trips, args=(port, stop, longest))
    process.start()
    return process, stop, longest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=50_000)
    args = parser.parse_args()
    proc, port = start_minibroker()
    try:
        pub = client(port, "bench-retain")
        for i in range(args.topics):
            pub.publish(f"r/{i}", b"v", 0, retain=True)
        pub.publish("r/last", b"v", 1, retain=True).wait_for_publish(120)  # after all the others, on one connection
        pub.disconnect()
        pub.loop_stop()

        pinger, stop, idle = other_client(port)
        time.sleep(1.0)  # the floor: the same round trips on the idle broker
        stop.set()
        pinger.join()

        got = [0]
        done = threading.Event()

        def on_message(_c: object, _u: object, message: mqtt.MQTTMessage) -> None:
            if message.topic.startswith("r/"):
                got[0] += 1
                if got[0] == args.topics + 1:
                    done.set()

        pinger, stop, busy = other_client(port)
        time.sleep(0.5)
        sub = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="bench-hash")
        sub.on_message = on_message
        sub.connect("127.0.0.1", port, keepalive=0)
        sub.loop_start()
        cpu0 = cpu_seconds(proc.pid)
        sub.subscribe("#", 0)
        finished = done.wait(300)
        cpu = cpu_seconds(proc.pid) - cpu0
        stop.set()
        pinger.join()
        sub.disconnect()
        sub.loop_stop()
        if not finished:
            raise RuntimeError(f"only {got[0]} of {args.topics + 1} retained messages arrived")
    finally:
        proc.terminate()
        proc.wait()
    print(f"MQTT # over {args.topics:,} retained topics, minibroker serve")
    print(f"{'broker CPU for the replay':<58}{cpu:>10.2f} s   {'pass' if cpu <= 2.0 else 'FAIL'} (<= 2 s)")
    ok = busy.value <= 0.1
    print(
        f"{'another client longest QoS 1 round trip meanwhile':<58}{busy.value * 1000:>10.0f} ms  "
        f"{'pass' if ok else 'FAIL'} (<= 100 ms; idle broker: {idle.value * 1000:.0f} ms)"
    )
    return 0 if cpu <= 2.0 and ok else 1


if __name__ == "__main__":
    sys.exit(main())
