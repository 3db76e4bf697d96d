"""OpenWire throughput: ActiveMQ 5.17's own JMS client against ``minibroker serve --openwire-port`` and against a real
ActiveMQ 5.17.2, in the same run.

Run: ``.venv/bin/python tests/benchmarks/openwire_bench.py [--messages N] [--size BYTES] [--rounds 3]``
(needs Java 17's ``javac`` and Debian's ``activemq``/``libactivemq-java``; skips, saying so, without them).

Each case is two Java processes (``activemq/OpenWireBench.java``, compiled against Debian's ``activemq-client.jar``
into ``~/.cache`` on first use): a consumer (AUTO_ACKNOWLEDGE, the client's default prefetch of 1,000) subscribes
first, then a producer sends N BytesMessages of SIZE bytes to the same fresh queue, persistent (each send waits for
the broker's response: the client's default for persistent messages outside a transaction) or not (asynchronous
sends). The rate is N over the time from the producer's first send to the consumer's last receive (both processes
print wall-clock times). The brokers keep messages in memory: ``minibroker serve`` without ``--data-dir``, and
ActiveMQ embedded without a store (``activemq/OpenWireBroker.java``, its OpenWire connector at its defaults). Each
broker runs every case once before measuring (ActiveMQ's JVM is then past its JIT's first pass); then ``--rounds``
rounds run every case on both brokers in turns, and the median of each is printed with the ratio minibroker /
ActiveMQ and pass (>= 1.0: issue 45's target) or FAIL. Each broker's CPU per message (from ``/proc``) is printed
beside its rate. ``--profile FILE`` runs minibroker under cProfile (its stats dumped to FILE when it stops; rates
are then not comparable). ``--instructions`` prints instead the broker side's instructions per message layer by
layer (an in-process producer and consumer on the listener's converters, no sockets; callgrind), beside the same with
every dispatch built and encoded field by field (issue 45: what the remaining cost is made of).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
JAVA = os.path.join(HERE, "activemq")
SHARE = "/usr/share/java"
#: the JMS client's class path: Debian's activemq-client 5.17.2 and what it needs (the J2EE management API too: its
#: connection's statistics implement it, so the client does not load without it)
CLIENT_JARS = (
    "activemq-client.jar",
    "geronimo-jms_1.1_spec.jar",
    "geronimo-j2ee-management-1.1-spec.jar",
    "hawtbuf.jar",
    "slf4j-api.jar",
    "slf4j-nop.jar",
)
#: the embedded ActiveMQ's: the broker beside the client
BROKER_JARS = ("activemq-broker.jar", *CLIENT_JARS)
SOURCES = ("OpenWireBench.java", "OpenWireBroker.java")
#: the issue's target: minibroker's rate over ActiveMQ's, same client, same run
TARGET = 1.0


def unavailable() -> str | None:
    """Why the benchmark cannot run here (None: it can)."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        return "needs Java 17 (javac): apt-get install openjdk-17-jdk-headless"
    missing = [jar for jar in BROKER_JARS if not os.path.exists(os.path.join(SHARE, jar))]
    if missing:
        return f"needs Debian's activemq and libactivemq-java (missing: {', '.join(missing)})"
    return None


def compiled() -> str:
    """The directory of the compiled Java programs (compiled on first use, again when a source changes)."""
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "minibroker-bench-openwire")
    sources = [os.path.join(JAVA, s) for s in SOURCES]
    classes = [os.path.join(cache, s.replace(".java", ".class")) for s in SOURCES]
    newest = max(os.path.getmtime(s) for s in sources)
    if not all(os.path.exists(c) and os.path.getmtime(c) >= newest for c in classes):
        os.makedirs(cache, exist_ok=True)
        classpath = ":".join(os.path.join(SHARE, jar) for jar in BROKER_JARS)
        subprocess.run(["javac", "-nowarn", "-d", cache, "-cp", classpath, *sources], check=True)
    return cache


def classpath(classes: str, jars: tuple[str, ...]) -> str:
    return ":".join([classes, *(os.path.join(SHARE, jar) for jar in jars)])


def cpu_seconds(pid: int) -> float:
    """A process's CPU seconds (user + system) from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Broker:
    """A broker process with an OpenWire port: ``url``, ``cpu()``, ``stop()``."""

    name = ""
    proc: subprocess.Popen[str]
    url = ""

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def stop(self) -> None:
        raise NotImplementedError


class Minibroker(Broker):
    """``minibroker serve --port 0 --openwire-port 0`` (in memory)."""

    name = "minibroker"

    def __init__(self, profile: str | None = None) -> None:
        python = [sys.executable, "-P"]
        if profile:
            python += ["-m", "cProfile", "-o", os.path.abspath(profile)]
        self.proc = subprocess.Popen(
            [*python, "-m", "minibroker", "serve", "--port", "0", "--openwire-port", "0"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=HERE,
        )
        assert self.proc.stdout is not None
        self.proc.stdout.readline()  # the native URL
        line = self.proc.stdout.readline().strip()
        if not line.startswith("openwire://"):
            raise RuntimeError(f"minibroker serve did not start its OpenWire listener: {line!r}")
        self.url = "tcp://" + line.removeprefix("openwire://")

    def stop(self) -> None:
        self.proc.terminate()  # SIGTERM: a clean stop (and the profile written)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class ActiveMQ(Broker):
    """ActiveMQ 5.17.2 embedded (``activemq/OpenWireBroker.java``)."""

    name = "activemq"

    def __init__(self, classes: str) -> None:
        self.proc = subprocess.Popen(
            ["java", "-cp", classpath(classes, BROKER_JARS), "OpenWireBroker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            raise RuntimeError(f"ActiveMQ did not start: {line!r}")
        self.url = f"tcp://127.0.0.1:{int(line.split()[1])}"

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Run:
    """One case on one broker: messages per second end to end, the producer's own rate, broker CPU per message."""

    rate: float
    send_rate: float
    cpu_us: float


@dataclass
class Case:
    persistent: bool
    runs: dict[str, list[Run]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return "persistent" if self.persistent else "non-persistent"

    def median(self, broker: str, what: str = "rate") -> float:
        return statistics.median(getattr(r, what) for r in self.runs[broker])

    @property
    def ratio(self) -> float:
        return self.median("minibroker") / self.median("activemq")


_queues = iter(range(1, 1_000_000))


def run_case(broker: Broker, client_cp: str, n: int, size: int, persistent: bool, timeout: float = 600.0) -> Run:
    """A consumer and a producer process on a fresh queue; the figures of the run."""
    queue = f"bench.openwire.{os.getpid()}.{next(_queues)}"
    java = ["java", "-cp", client_cp, "OpenWireBench"]
    consumer = subprocess.Popen([*java, "consume", broker.url, queue, str(n)], stdout=subprocess.PIPE, text=True)
    try:
        assert consumer.stdout is not None
        ready = consumer.stdout.readline().strip()
        if ready != "ready":
            raise RuntimeError(f"the consumer did not subscribe: {ready!r}")
        cpu = broker.cpu()
        produced = subprocess.run(
            [*java, "produce", broker.url, queue, str(n), str(size), "true" if persistent else "false"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
        out, _ = consumer.communicate(timeout=timeout)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    cpu = broker.cpu() - cpu
    p = produced.stdout.split()
    c = out.split()
    if p[:1] != ["done"] or c[:1] != ["done"] or int(c[3]) != n * size:
        raise RuntimeError(f"a client failed: producer {produced.stdout!r} {produced.stderr!r}, consumer {out!r}")
    start, sent = int(p[1]), int(p[2])
    last = int(c[2])
    return Run(n / ((last - start) / 1e9), n / ((sent - start) / 1e9), cpu / n * 1e6)


def measure(
    n: int, size: int, rounds: int, profile: str | None = None, modes: tuple[bool, ...] = (True, False)
) -> list[Case] | str:
    """Every case on both brokers (a warm-up each, then ``rounds`` rounds in turns); a string says why it cannot run."""
    reason = unavailable()
    if reason is not None:
        return reason
    classes = compiled()
    client_cp = classpath(classes, CLIENT_JARS)
    cases = [Case(persistent) for persistent in modes]
    brokers: list[Broker] = [Minibroker(profile), ActiveMQ(classes)]
    try:
        for broker in brokers:
            for case in cases:
                run_case(broker, client_cp, n, size, case.persistent)  # warm-up (ActiveMQ's JIT), not counted
        for _ in range(rounds):
            for case in cases:
                for broker in brokers:
                    case.runs.setdefault(broker.name, []).append(run_case(broker, client_cp, n, size, case.persistent))
    finally:
        for broker in brokers:
            broker.stop()
    return cases


#: ``--instructions``: one child process, an in-process OpenWire producer and consumer on one broker (the listener's
#: converters and decoders, no sockets), N messages of SIZE bytes as ActiveMQ's client sends them, each acked as
#: AUTO_ACKNOWLEDGE acks it; STAGE says how far each message goes (frames are built in every stage, so they cancel)
_LAYERS_CHILD = """
import asyncio, gc, sys
from minibroker import Broker, ManualClock
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire import converter as cv
from minibroker.plugins.openwire.codec import OpenWireDecoder, encode_command

n, size, persistent, stage = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
if stage.endswith("-ref"):  # the reference path: every dispatch built and encoded field by field
    cv.wire_of = lambda command, raw: None
    stage = stage[:-4]
producer_conn, consumer_conn = "ID:bench-40000-1700000000000-0:1", "ID:bench-40000-1700000000000-0:2"
producer_id, consumer_id = ow.ProducerId(producer_conn, 1, 1), ow.ConsumerId(consumer_conn, 1, 1)
queue = ow.ActiveMQQueue("bench.openwire")
body = bytes(97 + i % 26 for i in range(size))
sends = [encode_command(ow.BytesMessage(command_id=4 + i, response_required=persistent, producer_id=producer_id,
    destination=queue, message_id=ow.MessageId(None, producer_id, i + 1), persistent=persistent, priority=4,
    timestamp=1_700_000_000_000 + i, content=body)) for i in range(n)]
acks = [encode_command(ow.MessageAck(command_id=4 + i, destination=queue, consumer_id=consumer_id, ack_type=2,
    first_message_id=ow.MessageId(None, producer_id, i + 1, i + 1),
    last_message_id=ow.MessageId(None, producer_id, i + 1, i + 1), message_count=1)) for i in range(n)]

async def main():
    async with Broker(clock=ManualClock()) as broker:
        producer, consumer = cv.OpenWireConverter(broker), cv.OpenWireConverter(broker)
        for converter, connection in ((producer, producer_conn), (consumer, consumer_conn)):
            converter.receive(ow.WireFormatInfo(version=12))
            converter.receive(ow.ConnectionInfo(1, True, ow.ConnectionId(connection)))
            converter.receive(ow.SessionInfo(2, False, ow.SessionId(connection, 1)))
        producer.receive(ow.ProducerInfo(command_id=3, producer_id=producer_id, destination=queue))
        consumer.receive(ow.ConsumerInfo(3, True, consumer_id, destination=queue, prefetch_size=1000))
        producer.data_to_send(), consumer.data_to_send()
        into_producer, into_consumer = OpenWireDecoder(), OpenWireDecoder()
        gc.collect()
        gc.disable()  # the converters' and the broker's instructions, not the collector's
        for i in range(n if stage != "build" else 0):
            into_producer.receive_data(sends[i])
            sent = into_producer.next_command()
            if stage == "decode":
                continue
            if stage == "decode-both":
                into_consumer.receive_data(acks[i])
                into_consumer.next_command()
                continue
            producer.receive(sent)
            producer.data_to_send()
            consumer.data_to_send()
            if stage == "send":
                continue
            into_consumer.receive_data(acks[i])
            consumer.receive(into_consumer.next_command())

asyncio.run(main())
"""

#: (label, stage, the stage subtracted) for each layer --instructions prints
_LAYERS = (
    ("decode the message frame", "decode", "build"),
    ("decode its MessageAck", "decode-both", "decode"),
    ("the send: converter, BrokerConnection, core, the dispatch written", "send", "decode"),
    ("the ack: converter, BrokerConnection, core (its decoding apart)", "ack", "send"),
)


def instructions(n: int, size: int, persistent: bool, stage: str) -> int:
    """The instructions of one ``_LAYERS_CHILD`` run (callgrind)."""
    import re

    child = [sys.executable, "-P", "-c", _LAYERS_CHILD, str(n), str(size), "1" if persistent else "0", stage]
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *child],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        cwd=HERE,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found is not None, done.stderr
    return int(found.group(1))


def layers(n: int, size: int, persistent: bool) -> dict[str, int]:
    """Instructions per message of each stage (``n`` messages more, over ``n``: start-up cancels out)."""
    from concurrent.futures import ThreadPoolExecutor

    stages = ("build", "decode", "decode-both", "send", "all", "all-ref")
    instructions(10, size, persistent, "all")  # bytecode compiled once, not in a counted run
    with ThreadPoolExecutor(2) as pool:
        counts = {
            (stage, k): pool.submit(instructions, k * n, size, persistent, stage) for stage in stages for k in (1, 2)
        }
    per = {stage: (counts[stage, 2].result() - counts[stage, 1].result()) // n for stage in stages}
    per["ack"] = per["all"] - (per["decode-both"] - per["decode"])
    return per


def print_layers(n: int, size: int) -> None:
    if shutil.which("valgrind") is None:
        print("openwire_bench --instructions: skipped, needs valgrind")
        return
    for persistent in (False, True):
        per = layers(n, size, persistent)
        kind = "persistent" if persistent else "non-persistent"
        print(f"\n{kind}, {size}-byte BytesMessage, in process (callgrind, gc off), instructions per message:")
        for label, stage, before in _LAYERS:
            print(f"  {label:<68} {per[stage] - per[before]:>9,}")
        print(f"  {'the whole broker side':<68} {per['all'] - per['build']:>9,}")
        reference = per["all-ref"] - per["build"]
        print(f"  {'the same, every dispatch built and encoded (no passthrough.py)':<68} {reference:>9,}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=1024, help="body bytes per message")
    parser.add_argument("--rounds", type=int, default=3, help="rounds measured after the warm-up (the median is kept)")
    parser.add_argument("--profile", metavar="FILE", help="run minibroker under cProfile, stats to FILE")
    parser.add_argument("--only", choices=("persistent", "non-persistent"), help="one case instead of both")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="instead: the broker side's instructions per message, layer by layer (in process, callgrind)",
    )
    args = parser.parse_args()
    if args.instructions:
        print_layers(min(args.messages, 2_000), args.size)
        return 0
    started = time.perf_counter()
    modes = (True, False) if args.only is None else (args.only == "persistent",)
    cases = measure(args.messages, args.size, args.rounds, args.profile, modes)
    if isinstance(cases, str):
        print(f"openwire_bench: skipped, {cases}")
        return 0
    print(
        f"\nActiveMQ 5.17's JMS client, one producer and one consumer process, {args.messages:,} messages of "
        f"{args.size} bytes, AUTO_ACKNOWLEDGE; median of {args.rounds} (msg/s end to end; the producer's own rate; "
        "broker CPU per message)"
    )
    failed = False
    for case in cases:
        print(f"  {case.label}:")
        for name in ("minibroker", "activemq"):
            print(
                f"    {name:<11} {case.median(name):>9,.0f} msg/s   sends {case.median(name, 'send_rate'):>9,.0f} "
                f"msg/s   broker CPU {case.median(name, 'cpu_us'):6.1f} us/msg   "
                f"(runs: {', '.join(f'{r.rate:,.0f}' for r in case.runs[name])})"
            )
        ok = case.ratio >= TARGET
        failed |= not ok
        print(f"    minibroker / ActiveMQ = {case.ratio:.2f}x  (target >= {TARGET:.1f}x)  {'pass' if ok else 'FAIL'}")
    print(f"({time.perf_counter() - started:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
