"""STOMP connector benchmark: ``.venv/bin/python tests/benchmarks/stomp_bench.py [--messages N] [--size BYTES]``.

The broker runs in a child process (``python -P -c``, so the source tree never shadows the installed package): a
real-time ``Broker`` plus ``start_stomp_server`` on port 0, reporting its own CPU time on request. This process drives
it with stomp.py, the Python STOMP client, over TCP. For each acknowledgement mode (auto, client-individual) and
prefetch (1, 1000) it sends N messages of SIZE bytes, then consumes them, and prints the rate of each phase and the
broker's CPU time per message (both phases together, and the SEND phase alone), beside the ActiveMQ 5.17 reference
from the issue. Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import stomp  # type: ignore[import-untyped]

#: ActiveMQ 5.17 measured with a STOMP client (issue 7): messages per second with ack:auto, broker CPU per message
REFERENCE_RATE = "25-36k msg/s (auto)"
REFERENCE_CPU = "11-25 us/msg"

CHILD = r"""
import asyncio, sys, threading, time
from minibroker import Broker, RealClock
from minibroker.plugins.stomp import start_stomp_server

def report_cpu():
    for line in sys.stdin:
        if line.strip() == "cpu":
            print(f"cpu {time.process_time():.6f}", flush=True)
        elif line.strip() == "quit":
            break
    stop_loop()

async def main():
    global stop_loop
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    stop_loop = lambda: loop.call_soon_threadsafe(done.set)
    async with Broker(clock=RealClock(), history_limit=0) as broker:
        server = await start_stomp_server(broker)
        print(f"port {server.port}", flush=True)
        threading.Thread(target=report_cpu, daemon=True).start()
        await done.wait()
        await server.close()

asyncio.run(main())
"""


class BrokerProcess:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            raise RuntimeError(f"the broker did not start: {line!r}")
        self.port = int(line.split()[1])

    def cpu(self) -> float:
        """The broker process's CPU seconds (user + system), as it reports them."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("cpu\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline().split()[1])

    def cpu_from_proc(self) -> float:
        """The same read from /proc/<pid>/stat (clock-tick resolution), as a cross-check."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


class Counter(stomp.ConnectionListener):  # type: ignore[misc]
    """Counts MESSAGEs on stomp.py's receiver thread, acking each one in client-individual mode."""

    def __init__(self, conn: Any, target: int, ack: bool) -> None:
        self.conn = conn
        self.target = target
        self.ack = ack
        self.count = 0
        self.done = threading.Event()
        self.receipts: set[str] = set()
        self.receipt_seen = threading.Condition()

    def on_message(self, frame: Any) -> None:
        if self.ack:
            self.conn.ack(frame.headers["ack"])
        self.count += 1
        if self.count >= self.target:
            self.done.set()

    def on_receipt(self, frame: Any) -> None:
        with self.receipt_seen:
            self.receipts.add(frame.headers["receipt-id"])
            self.receipt_seen.notify_all()

    def wait_receipt(self, receipt: str, timeout: float = 120.0) -> None:
        with self.receipt_seen:
            if not self.receipt_seen.wait_for(lambda: receipt in self.receipts, timeout):
                raise TimeoutError(f"no RECEIPT {receipt}")


@dataclass
class Result:
    ack: str
    prefetch: int
    send_rate: float
    receive_rate: float
    cpu_per_message: float
    proc_cpu_per_message: float
    send_cpu_per_message: float


def run_case(broker: BrokerProcess, ack: str, prefetch: int, messages: int, size: int) -> Result:
    queue = f"/queue/bench-{ack}-{prefetch}"
    body = "x" * size
    producer = stomp.Connection12([("127.0.0.1", broker.port)])
    p_listener = Counter(producer, 0, False)
    producer.set_listener("p", p_listener)
    producer.connect(wait=True)
    consumer = stomp.Connection12([("127.0.0.1", broker.port)])
    c_listener = Counter(consumer, messages, ack == "client-individual")
    consumer.set_listener("c", c_listener)
    consumer.connect(wait=True)

    cpu0, proc0 = broker.cpu(), broker.cpu_from_proc()
    t0 = time.perf_counter()
    for _ in range(messages - 1):
        producer.send(queue, body)
    producer.send(queue, body, receipt="sent")
    p_listener.wait_receipt("sent")
    t1 = time.perf_counter()
    cpu_sent = broker.cpu()
    consumer.subscribe(queue, id="s", ack=ack, headers={"activemq.prefetchSize": str(prefetch)})
    if not c_listener.done.wait(300):
        raise TimeoutError(f"{c_listener.count} of {messages} received")
    if ack == "client-individual":  # the last acks are in: a receipt after them
        consumer.unsubscribe("s", receipt="drained")
        c_listener.wait_receipt("drained")
    t2 = time.perf_counter()
    cpu1, proc1 = broker.cpu(), broker.cpu_from_proc()
    producer.disconnect()
    consumer.disconnect()
    return Result(ack, prefetch, messages / (t1 - t0), messages / (t2 - t1), (cpu1 - cpu0) / messages,
                  (proc1 - proc0) / messages, (cpu_sent - cpu0) / messages)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=100)
    args = parser.parse_args(argv)
    broker = BrokerProcess()
    try:
        results = [run_case(broker, ack, prefetch, args.messages, args.size)
                   for ack in ("auto", "client-individual") for prefetch in (1, 1000)]
    finally:
        broker.stop()
    print(f"STOMP connector, stomp.py {stomp.__version__} client, {args.messages} messages of {args.size} bytes, "
          f"broker in a child process")
    header = (f"{'ack':<18} {'prefetch':>8} {'send msg/s':>11} {'receive msg/s':>14} {'broker CPU/msg':>15} "
              f"{'(/proc)':>9} {'of which SEND':>14}   ActiveMQ 5.17 reference")
    print(header)
    print("-" * len(header))
    for r in results:
        print(f"{r.ack:<18} {r.prefetch:>8} {r.send_rate:>11,.0f} {r.receive_rate:>14,.0f} "
              f"{r.cpu_per_message * 1e6:>12.1f} us {r.proc_cpu_per_message * 1e6:>6.1f} us "
              f"{r.send_cpu_per_message * 1e6:>11.1f} us   "
              f"{REFERENCE_RATE}, {REFERENCE_CPU}")
    print("broker CPU/msg covers both phases (SEND in, MESSAGE out and its ack); rates are limited by stomp.py too")
    return 0


if __name__ == "__main__":
    sys.exit(main())
