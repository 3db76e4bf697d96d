"""minibroker benchmarks: ``.venv/bin/python tests/benchmarks/run.py [--quick] [--only NAME ...] [--profile]
[--instructions]``.

Each scenario is measured against a baseline taken in the same run, and printed as a ratio: these machines are shared
and noisy, so a lone absolute time means little. The STOMP rows (stomp_bench.py, stomp.py against a broker child)
compare with ActiveMQ's figures from issue 7, which cannot be measured here; the Spark rows (spark_bench.py) need the
``spark`` extra and Java. ``--profile`` prints a cProfile of the in-process AUTO scenario instead of the table;
``--instructions`` counts the CPU instructions per message of the in-process scenarios and their baseline with
valgrind, a figure the machine's noise does not move, and prints where the AUTO row's instructions go, layer by
layer, with what removing each would give up (``--only`` picks its rows too). Not part of the default test run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from minibroker import Broker, Dispatch
from minibroker.client import AckMode, Consumer, connect
from minibroker.limits import ConnectionLimits
from minibroker.message import Destination, Message, PropertyValue


@dataclass
class Row:
    scenario: str
    value: float
    unit: str
    baseline: str
    ratio: float | None
    target: str
    ok: bool | None

    def render(self) -> str:
        ratio = "-" if self.ratio is None else f"{self.ratio:.3f}"
        verdict = "-" if self.ok is None else ("pass" if self.ok else "FAIL")
        value = f"{self.value:>14,.1f}" if abs(self.value) >= 10 else f"{self.value:>14.4f}"
        return f"{self.scenario:<54} {value} {self.unit:<8} {self.baseline:<34} {ratio:>7} {self.target:<14} {verdict}"


BODY = "x" * 100


def best_of(runs: int, fn: Callable[[], Awaitable[float]]) -> float:
    """The best (smallest) of ``runs`` timings: the least disturbed by the other tenants of the machine."""
    times = [asyncio.run(fn()) for _ in range(runs)]
    return min(times)


def best_of_pair(
    runs: int, baseline: Callable[[], Awaitable[float]], fn: Callable[[], Awaitable[float]]
) -> tuple[float, float]:
    """The best timings of ``baseline`` and ``fn``, measured in turns: a slow spell of the machine then touches
    both sides of a ratio instead of one."""
    base: list[float] = []
    times: list[float] = []
    for _ in range(runs):
        base.append(asyncio.run(baseline()))
        times.append(asyncio.run(fn()))
    return min(base), min(times)


# -- baselines ------------------------------------------------------------------------------------------------------


async def asyncio_queue_pair(n: int) -> float:
    """A raw asyncio.Queue producer/consumer pair moving ``n`` items: the in-process baseline."""
    queue: asyncio.Queue[str] = asyncio.Queue()

    async def produce() -> None:
        for _ in range(n):
            await queue.put(BODY)

    async def consume() -> None:
        for _ in range(n):
            await queue.get()

    start = time.perf_counter()
    await asyncio.gather(produce(), consume())
    return time.perf_counter() - start


# -- scenarios ------------------------------------------------------------------------------------------------------


async def inprocess_pair(
    n: int,
    mode: AckMode = AckMode.AUTO_ACKNOWLEDGE,
    prefetch: int = 1000,
    history: bool = False,
    *,
    compact: bool = True,
    collect: bool = True,
) -> float:
    """One producer task and one consumer task through an in-process broker (``history``: the default broker, which
    records every message's history for test reports, as the pytest fixtures' broker does). For --instructions'
    breakdown: ``compact`` False keeps only the history's newest block of records (what recording alone costs,
    with the blocks sealed as usual but none kept for the 10,000 messages), ``collect`` False turns the cyclic
    collector off while the messages flow (what it costs)."""
    broker = Broker() if history else Broker(history_limit=0)
    if not compact:
        broker.core.history.limit = 1
    if not collect:
        gc.disable()
    async with broker, await connect(broker) as conn:
        psession = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
        csession = await conn.create_session(mode)
        producer = await psession.create_producer("bench")
        consumer = await csession.create_consumer("bench", prefetch=prefetch)
        transacted = mode is AckMode.SESSION_TRANSACTED
        client = mode is AckMode.CLIENT_ACKNOWLEDGE

        async def produce() -> None:
            for _ in range(n):
                await producer.send(BODY)

        async def consume() -> None:
            for i in range(1, n + 1):
                msg = await consumer.receive()
                assert msg is not None
                if (transacted or client) and i % 100 == 0:
                    if transacted:
                        await csession.commit()
                    else:
                        await msg.acknowledge()

        start = time.perf_counter()
        await asyncio.gather(produce(), consume())
        elapsed = time.perf_counter() - start
        gc.enable()
        assert broker.queue("bench").size == 0
        return elapsed


# -- the in-process scenario's layers, for --instructions: each adds one layer to the one before ---------------------


def _messages(n: int) -> list[Message]:
    """``n`` messages built as Producer.send builds them (positional fields, an id per message)."""
    destination = Destination.queue("bench")
    props: dict[str, PropertyValue] = {}
    return [
        Message(f"ID:bench:1:1:1:{i}", destination, BODY, props, 4, True, 0.0, 0.0, None, None, None, None, 0, "", i)
        for i in range(n)
    ]


async def layer_messages(n: int) -> float:
    """Only the messages the other layers send (their cost is in every row below)."""
    _messages(n)
    return 0.0


def _ack_each(n: int, take: Callable[[], list[Dispatch]], ack: Callable[[str], object]) -> None:
    """AUTO-ack each dispatched message (``take`` returns the dispatches made since it was last called) until ``n``
    were; each ack may refill the window, whose dispatches the next ``take`` returns."""
    received = 0
    while received < n:
        out = take()
        for dispatch in out:
            assert dispatch.message is not None
            ack(dispatch.message.message_id)
        received += len(out)


async def layer_core(n: int) -> float:
    """BrokerCore alone, as the in-process scenario drives it: ``n`` sends (the first 1000 dispatched as they come),
    then an AUTO ack of each dispatched message (its window refilled at half), the dispatches taken from the output."""
    from minibroker._core.broker import BrokerCore
    from minibroker._core.commands import ConsumerInfo
    from minibroker.clock import RealClock

    core = BrokerCore(RealClock(), history_limit=0)
    conn = core.add_connection()
    consumer = core.add_consumer(conn, ConsumerInfo(Destination.queue("bench")))
    for message in _messages(n):
        core.send_minted(conn, message)  # an in-process producer's send (ids minted for it)

    def take() -> list[Dispatch]:
        out, core.output = core.output, []
        return out

    _ack_each(n, take, lambda message_id: core.ack_one(conn, consumer, message_id, refill_at_half=True))
    return 0.0


async def layer_driver(n: int) -> float:
    """The driver (the one door: store step, routing, timers) around the core, the same calls as layer_core, through
    the functions the in-process link calls (``minted_sender``, ``auto_acker``)."""
    broker = Broker(history_limit=0)
    async with broker:
        conn = broker.connect()
        routed: list[Dispatch] = []
        from minibroker._core.commands import ConsumerInfo

        consumer = conn.add_consumer(ConsumerInfo(Destination.queue("bench")), routed.append)
        send, ack = conn.minted_sender(), conn.auto_acker()
        for message in _messages(n):
            send(message, None, True)

        def take() -> list[Dispatch]:
            out = list(routed)
            routed.clear()
            return out

        _ack_each(n, take, lambda message_id: ack(consumer, message_id))
    return 0.0


async def start_stop(n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        async with Broker():
            pass
    return (time.perf_counter() - start) / n


async def memory_queued(n: int) -> float:
    """Bytes held by ``n`` queued 100-byte messages (tracemalloc, after the sends)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    broker = Broker(history_limit=0)
    async with broker, await connect(broker) as conn:
        session = await conn.create_session()
        producer = await session.create_producer("mem")
        for _ in range(n):
            await producer.send(BODY)
        gc.collect()
        after = tracemalloc.take_snapshot()
        size = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        assert broker.queue("mem").size == n
    tracemalloc.stop()
    return float(size)


async def pull_round_trips(n: int) -> float:
    """A prefetch-0 consumer: every receive asks the broker for one message (ActiveMQ's pull)."""
    async with Broker(history_limit=0) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        producer = await session.create_producer("pull")
        for _ in range(n):
            await producer.send(BODY)
        consumer = await session.create_consumer("pull", prefetch=0)
        start = time.perf_counter()
        for _ in range(n):
            assert await consumer.receive(timeout=1) is not None
        return time.perf_counter() - start


async def fan_out(n: int, subscribers: int = 10) -> float:
    """One producer publishing ``n`` messages to a topic read by ``subscribers`` AUTO consumers (n x subscribers
    deliveries)."""
    async with Broker(history_limit=0) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        consumers = [await (await conn.create_session()).create_consumer("topic://fan") for _ in range(subscribers)]
        producer = await session.create_producer("topic://fan")

        async def drain(consumer: Consumer) -> None:
            for _ in range(n):
                assert await consumer.receive() is not None

        start = time.perf_counter()
        tasks = [asyncio.ensure_future(drain(c)) for c in consumers]
        for _ in range(n):
            await producer.send(BODY, persistent=False)
            await asyncio.sleep(0) if _ % 100 == 0 else None
        await asyncio.gather(*tasks)
        return time.perf_counter() - start


async def scale_queued(n: int) -> float:
    """Seconds per message to enqueue ``n`` messages on one queue (no consumer)."""
    async with Broker(history_limit=0) as broker, await connect(broker) as conn:
        producer = await (await conn.create_session()).create_producer("deep")
        start = time.perf_counter()
        for _ in range(n):
            await producer.send(BODY, persistent=False)
        return (time.perf_counter() - start) / n


#: the scale scenarios put up to 10,000 consumers on one connection: past the default limit of 1000
WIDE = ConnectionLimits(max_consumers=20_000)


async def scale_consumers(consumers: int, n: int) -> float:
    """Seconds per message moved through a queue read round-robin by ``consumers`` AUTO consumers."""
    async with Broker(history_limit=0, connection_limits=WIDE) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        readers = [await session.create_consumer("wide", prefetch=10) for _ in range(consumers)]
        producer = await (await conn.create_session()).create_producer("wide")
        start = time.perf_counter()
        received = 0
        for _ in range(n // consumers):
            for _ in range(consumers):
                await producer.send(BODY, persistent=False)
            for reader in readers:
                if await reader.receive(timeout=0) is not None:
                    received += 1
        while received < (n // consumers) * consumers:
            for reader in readers:
                if await reader.receive(timeout=0) is not None:
                    received += 1
        return (time.perf_counter() - start) / received


async def scale_destinations(destinations: int, n: int) -> float:
    """Seconds per message sent round-robin over ``destinations`` queues, each with one consumer."""
    async with Broker(history_limit=0, connection_limits=WIDE) as broker, await connect(broker) as conn:
        session = await conn.create_session()
        names = [f"d.{i}" for i in range(destinations)]
        readers = [await session.create_consumer(name, prefetch=1000) for name in names]
        producer = await (await conn.create_session()).create_producer()
        start = time.perf_counter()
        for i in range(n):
            await producer.send(BODY, destination=names[i % destinations], persistent=False)
            if i % destinations == destinations - 1 or i == n - 1:
                pass
        for reader in readers:
            while await reader.receive(timeout=0) is not None:
                pass
        return (time.perf_counter() - start) / n


def conformance_wall_time() -> tuple[float, int]:
    """Replays every recorded conformance scenario in-process in virtual time: (seconds, scenarios)."""
    import json
    from pathlib import Path

    tests = Path(__file__).resolve().parents[1]  # run.py runs outside pytest: the support package's parent
    if str(tests) not in sys.path:
        sys.path.insert(0, str(tests))
    from support.scriptrunner import run_script

    scripts = sorted((Path(__file__).resolve().parents[1] / "conformance" / "scripts").glob("*.json"))

    async def all_scripts() -> None:
        for path in scripts:
            await run_script(json.loads(path.read_text()))

    start = time.perf_counter()
    asyncio.run(all_scripts())
    return time.perf_counter() - start, len(scripts)


SERVE = [sys.executable, "-P", "-m", "minibroker", "serve", "--port", "0"]


def launch_env() -> dict[str, str]:
    """The environment of launched processes: bytecode caching on, as after a normal install (this machine sets
    PYTHONDONTWRITEBYTECODE, which would make every launch compile the sources again)."""
    import os

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def serve_launch() -> tuple[float, float, float]:
    """``minibroker serve``: seconds from launch to the first accepted TCP connection, from launch to the first
    answered client handshake (``connect()`` returns: the broker is serving), and from SIGTERM to exit.

    ``serve`` binds and prints its URL before it imports the broker, so the kernel accepts a connection long before
    the broker can answer it: the first figure is when clients can connect, the second when they get a reply."""
    import signal
    import socket
    import subprocess
    import threading

    async def handshake(url: str) -> float:
        async with await connect(url):
            return time.perf_counter() - start

    start = time.perf_counter()
    process = subprocess.Popen(SERVE, stdout=subprocess.PIPE, text=True, env=launch_env())
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        host, port = url.removeprefix("tcp://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10):
            accepted = time.perf_counter() - start
        replied = asyncio.run(handshake(url))
        stop = time.perf_counter()
        process.send_signal(signal.SIGTERM)
        # a blocking wait, not wait(timeout=...): that one polls, at 0.5, 1, 2... 32, 50 ms intervals
        guard = threading.Timer(10, process.kill)
        guard.start()
        process.wait()
        guard.cancel()
        return accepted, replied, time.perf_counter() - stop
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def python_launch() -> float:
    """Baseline: launching a Python interpreter that does nothing."""
    import subprocess

    start = time.perf_counter()
    subprocess.run([sys.executable, "-P", "-c", "pass"], check=True, env=launch_env())
    return time.perf_counter() - start


TCP_CONSUMER = """
import asyncio, sys, time
from minibroker.client import AckMode, connect
async def main(url, n):
    async with await connect(url) as conn:
        session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
        consumer = await session.create_consumer("tcp-bench", prefetch=1000)
        print("ready", flush=True)
        first = None
        for _ in range(n):
            msg = await consumer.receive(timeout=60)
            assert msg is not None
            first = first or time.time()
        print(time.time(), flush=True)
asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""

TCP_PRODUCER = """
import asyncio, sys, time
from minibroker.client import connect
async def main(url, n):
    async with await connect(url) as conn:
        producer = await (await conn.create_session()).create_producer("tcp-bench")
        body = "x" * 100
        print(time.time(), flush=True)
        for _ in range(n):
            await producer.send(body, persistent=False)
        await producer.send("end", persistent=True)
asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far, from /proc (clock-tick resolution)."""
    import os

    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class TcpRun:
    #: messages per second from the producer's first send to the consumer's last receive
    rate: float
    #: the broker process's CPU seconds per message over the same span (connections and set-up excluded)
    broker_cpu: float


def tcp_processes(n: int, serve: list[str] | None = None) -> TcpRun:
    """One producer process and one AUTO consumer process (prefetch 1000) through ``minibroker serve`` (or the
    ``serve`` command given: the broker under valgrind for ``--instructions``)."""
    import subprocess

    server = subprocess.Popen(serve or SERVE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        consumer = subprocess.Popen(
            [sys.executable, "-P", "-c", TCP_CONSUMER, url, str(n)], stdout=subprocess.PIPE, text=True
        )
        assert consumer.stdout is not None
        assert consumer.stdout.readline().strip() == "ready"
        cpu_before = process_cpu(server.pid)
        producer = subprocess.run(
            [sys.executable, "-P", "-c", TCP_PRODUCER, url, str(n)], capture_output=True, text=True, check=True
        )
        started = float(producer.stdout.split()[0])
        finished = float(consumer.stdout.readline())
        cpu_after = process_cpu(server.pid)
        consumer.wait(timeout=600)
        if n == 0:  # the --instructions baseline: connections only
            return TcpRun(0.0, 0.0)
        return TcpRun(n / (finished - started), (cpu_after - cpu_before) / n)
    finally:
        server.terminate()
        server.wait(timeout=600)


#: ActiveMQ 5.17 serving stomp.py on these machines (issue 7): 25-36k msg/s with ack:auto, 11-25 us of broker CPU
#: per message. The target: at least that throughput at a quarter of the CPU (the lenient end: 25 / 4 us).
STOMP_REFERENCE_RATE = 25_000
#: issue 21, target 3 (kept by issue 34): broker CPU per message for auto acks; client-individual acks at p1 at most
#: 1.5x the same round trips against a bare asyncio server (issue 34, decision 2)
STOMP_TARGET_CPU_US = 11.0
STOMP_INDIVIDUAL_FLOOR_RATIO = 1.5


#: issue 21, target 2: the native TCP path's broker CPU per message, and its throughput against ActiveMQ 5.17 driven
#: by stomp.py (measured in the same run when ActiveMQ is installed, else the top of issue 7's range)
TCP_TARGET_CPU_US = 10.0
TCP_TARGET_VS_ACTIVEMQ = 2.0  # issue 34
ACTIVEMQ_REFERENCE_RATE = 36_000


def activemq_stomp(messages: int, runs: int) -> dict[tuple[str, int], Any] | None:
    """ActiveMQ 5.17 driven by stomp.py (stomp_bench.py --broker activemq), per (ack, prefetch): the same-run
    reference of the STOMP and TCP rows; None when ActiveMQ is not installed. At least three runs, the best kept:
    the JVM's first pass runs before its JIT has compiled the broker (two to four times the CPU)."""
    import stomp_bench

    if stomp_bench.activemq_classpath() is None:
        print("ActiveMQ 5.17 is not installed: issue 7's figures stand in for the same-run reference", file=sys.stderr)
        return None
    results = stomp_bench.measure(messages, runs=max(runs, 3), broker_kind="activemq")
    return {(r.ack, r.prefetch): r for r in results}


def stomp_rows(messages: int, runs: int, activemq: dict[tuple[str, int], Any] | None) -> list[Row]:
    """The STOMP benchmark (stomp_bench.py): stomp.py against a broker child, per ack mode and prefetch, beside
    ActiveMQ driven the same way in this run (``activemq``) when it is installed."""
    import stomp_bench

    rows: list[Row] = []
    results = stomp_bench.measure(messages, runs=runs)
    for r in results:
        case = f"STOMP {r.ack} p{r.prefetch}"
        reference = None if activemq is None else activemq.get((r.ack, r.prefetch))
        rows.append(
            Row(
                f"{case}: msg/s (send, then receive)",
                r.rate,
                "msg/s",
                "ActiveMQ 5.17: 25-36k msg/s" if reference is None else f"ActiveMQ, this run: {reference.rate:,.0f}/s",
                None if reference is None else r.rate / reference.rate,
                ">= 25k msg/s" if r.ack == "auto" else "-",
                r.rate >= STOMP_REFERENCE_RATE if r.ack == "auto" else None,
            )
        )
        auto = r.ack == "auto"
        rows.append(
            Row(
                f"{case}: broker CPU per message",
                r.broker_us_per_message,
                "us",
                "ActiveMQ 5.17: 11-25 us"
                if reference is None
                else f"ActiveMQ, this run: {reference.broker_us_per_message:.1f} us",
                None if reference is None else r.broker_us_per_message / reference.broker_us_per_message,
                f"<= {STOMP_TARGET_CPU_US:.2f} us" if auto else "-",
                r.broker_us_per_message <= STOMP_TARGET_CPU_US if auto else None,
            )
        )
    by_case = {(r.ack, r.prefetch): r.broker_us_per_message for r in results}
    auto_p1, individual_p1 = by_case.get(("auto", 1)), by_case.get(("client-individual", 1))
    if auto_p1 and individual_p1:
        # issue 34, decision 2: judged against the same round trips with no broker at all (stomp_floor.py), what
        # asyncio alone costs per message; the former "<= 3x auto" is withdrawn (below any asyncio server's floor)
        (floor,) = stomp_bench.measure(messages, runs=runs, cases=(("client-individual", 1),), broker_kind="floor")
        ratio = individual_p1 / floor.broker_us_per_message
        rows.append(
            Row(
                "STOMP client-individual p1: broker CPU vs a bare asyncio server",
                individual_p1,
                "us",
                f"no broker: {floor.broker_us_per_message:.1f} us",
                ratio,
                f"<= {STOMP_INDIVIDUAL_FLOOR_RATIO}x floor",
                ratio <= STOMP_INDIVIDUAL_FLOOR_RATIO,
            )
        )
    return rows


def spark_rows(quick: bool, runs: int) -> list[Row]:
    """The Spark benchmark (spark_bench.py): the minibroker source against the same rows generated in a reader."""
    import spark_bench

    figures = spark_bench.measure(small=quick, repeat=runs)
    if isinstance(figures, str):
        print(f"spark: skipped, {figures}", file=sys.stderr)
        return []
    f = figures
    return [
        Row(
            f"Spark: read {f.n1:,} messages, 1 partition",
            f.broker,
            "s",
            f"generated Arrow rows {f.arrow:.2f} s",
            f.ratio,
            "<= 1.5x",
            f.ratio <= 1.5,
        ),
        Row(
            f"Spark: read {f.n2:,} messages, {f.parts} partitions",
            f.broker_parts,
            "s",
            f"generated Arrow rows {f.arrow_parts:.2f} s",
            f.ratio_parts,
            "<= 1.5x",
            f.ratio_parts <= 1.5,
        ),
    ]


def profile_inprocess(n: int, top: int = 25) -> None:
    """cProfile of the in-process AUTO p1000 scenario: where its time goes, heaviest functions first."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(inprocess_pair(n))
    profiler.disable()
    stats = pstats.Stats(profiler)
    calls = stats.total_calls  # type: ignore[attr-defined]
    print(f"in-process AUTO p1000, {n:,} messages: {calls / n:.1f} Python calls per message")
    stats.sort_stats("tottime").print_stats(top)


#: the in-process scenarios counted by --instructions, the baseline first: (name, call of this module, with ``n``)
INSTRUCTION_SCENARIOS = (
    ("asyncio.Queue pair (the baseline)", "asyncio_queue_pair(n)"),
    ("  layers: the messages alone (Message objects)", "layer_messages(n)"),
    ("  layers: + BrokerCore (send, dispatch, AUTO ack)", "layer_core(n)"),
    ("  layers: + the driver (Broker, routes to a list)", "layer_driver(n)"),
    ("in-process AUTO p1000", "inprocess_pair(n)"),
    ("  of which the cyclic collector (this row: it turned off)", "inprocess_pair(n, collect=False)"),
    ("in-process AUTO p1000, default broker (history on)", "inprocess_pair(n, history=True)"),
    ("  history recorded, one block kept", "inprocess_pair(n, history=True, compact=False)"),
    ("in-process CLIENT p1000 (ack every 100)", "inprocess_pair(n, AckMode.CLIENT_ACKNOWLEDGE)"),
    ("in-process TRANSACTED p1000 (commit every 100)", "inprocess_pair(n, AckMode.SESSION_TRANSACTED)"),
)


def instructions(call: str, n: int) -> int:
    """CPU instructions of a child Python that runs ``call`` (a coroutine call of this module) with ``n``, counted
    by valgrind's callgrind: the same count on a busy machine as on an idle one."""
    import re
    import subprocess
    from pathlib import Path

    code = (
        f"import asyncio, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); from run import *; n = {n}; "
        f"n and asyncio.run({call})"
    )
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-P", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    assert found is not None, done.stderr
    return int(found.group(1))


def tcp_broker_instructions(n: int) -> int:
    """CPU instructions of the ``minibroker serve`` process (under callgrind) while ``n`` messages go from a producer
    process to a consumer process (the TCP scenario), clients outside valgrind."""
    import re
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "callgrind.log"
        valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", f"--log-file={log}"]
        tcp_processes(n, serve=valgrind + SERVE)
        found = re.search(r"Collected : (\d+)", log.read_text())
    assert found is not None, "callgrind wrote no total"
    return int(found.group(1))


#: issue 45's targets: instructions per message in-process (by scenario name; the rest have none)
INSTRUCTION_TARGETS = {
    "in-process AUTO p1000": 47_000,
    "in-process CLIENT p1000 (ack every 100)": 47_000,
    "in-process TRANSACTED p1000 (commit every 100)": 52_000,
}
#: issue 45: the default broker's history costs at most this much, relative to the same scenario without it
HISTORY_TARGET_RATIO = 1.1
HISTORY_ON = "in-process AUTO p1000, default broker (history on)"


def _counted(job: tuple[str, int]) -> int:
    return instructions(*job)


#: what each part of the in-process AUTO p1000 row (and of the history's cost) would take to remove (issue 45)
BREAKDOWN = (
    ("the messages (Message objects)", "  layers: the messages alone (Message objects)", None, "the 16-field value"),
    (
        "BrokerCore: send, dispatch, AUTO ack",
        "  layers: + BrokerCore (send, dispatch, AUTO ack)",
        "  layers: the messages alone (Message objects)",
        "queue entries, windows, counters the statistics read",
    ),
    (
        "the driver: the one door, routes",
        "  layers: + the driver (Broker, routes to a list)",
        "  layers: + BrokerCore (send, dispatch, AUTO ack)",
        "authorization, filters, store and timer steps",
    ),
    (
        "the client and asyncio: coroutines, ReceivedMessage",
        "in-process AUTO p1000",
        "  layers: + the driver (Broker, routes to a list)",
        "the async API, JMS acknowledge modes",
    ),
    (
        "  of all the above: the cyclic collector",
        "in-process AUTO p1000",
        "  of which the cyclic collector (this row: it turned off)",
        "collection of cycles (or fewer live objects)",
    ),
    (
        "history: recording (three records a message)",
        "  history recorded, one block kept",
        "in-process AUTO p1000",
        "the delivery history of test reports",
    ),
    (
        "history: keeping the last 10,000 messages",
        HISTORY_ON,
        "  history recorded, one block kept",
        "a bound on the history's memory",
    ),
)


def print_breakdown(by_name: dict[str, float]) -> None:
    """Where the in-process AUTO p1000 row's instructions go, layer by layer (each the difference of two rows
    measured above), and what removing each would give up: the issue's closing table when a target is not met."""
    rows = [
        (label, by_name[top] - (0.0 if base is None else by_name[base]), cost)
        for label, top, base, cost in BREAKDOWN
        if top in by_name and (base is None or base in by_name)
    ]
    if not rows:
        return
    print()
    title = "where AUTO p1000 goes (differences of the rows above)"
    print(f"{title:<54} {'instructions/msg':>17}   given up to remove it")
    for label, count, cost in rows:
        print(f"{label:<54} {count:>17,.0f}   {cost}")


def print_instructions(n: int, only: list[str] | None = None) -> int:
    """Instructions per message of the in-process scenarios and their baseline (--instructions): a figure that the
    machine's noise does not move, to tell whether a change made the hot path cheaper. The targets are about time:
    a broker's instructions also run slower (more calls, branches and memory) than the baseline's tight loop.
    ``only``: the scenarios whose name contains one of these words (the baseline always; the TCP row when asked)."""
    import shutil
    from concurrent.futures import ThreadPoolExecutor

    if shutil.which("valgrind") is None:
        print("--instructions needs valgrind (callgrind)")
        return 1
    chosen = [
        (name, call)
        for i, (name, call) in enumerate(INSTRUCTION_SCENARIOS)
        if i == 0 or not only or any(word in name for word in only)
    ]
    if any(name == HISTORY_ON for name, _ in chosen) and not any(name == "in-process AUTO p1000" for name, _ in chosen):
        chosen.insert(1, next(row for row in INSTRUCTION_SCENARIOS if row[0] == "in-process AUTO p1000"))
    # two valgrind children at a time (each is single-threaded): the counts do not depend on the machine's load
    # per message: the difference of a run of n messages and a run of n/5, over the messages between, so that what a
    # run does once (imports, a module loaded on first use, set-up and teardown) is in neither figure
    few = n // 5
    jobs = [(call, count) for _, call in chosen for count in (n, few)]
    with ThreadPoolExecutor(2) as pool:
        totals = list(pool.map(_counted, jobs))
    per_item = [(name, (totals[2 * i] - totals[2 * i + 1]) / (n - few)) for i, (name, _) in enumerate(chosen)]
    base = per_item[0][1]
    by_name = dict(per_item)
    title = f"scenario ({n:,} messages, callgrind)"
    print(f"{title:<54} {'instructions/msg':>17} {'baseline/this':>14} {'target':>10} result")
    failed = False
    for name, count in per_item:
        target = INSTRUCTION_TARGETS.get(name)
        verdict = "-" if target is None else ("pass" if count <= target else "FAIL")
        failed = failed or verdict == "FAIL"
        shown = "-" if target is None else f"<= {target // 1000}k"
        print(f"{name:<54} {count:>17,.0f} {base / count:>14.3f} {shown:>10} {verdict}")
    if HISTORY_ON in by_name:
        ratio = by_name[HISTORY_ON] / by_name["in-process AUTO p1000"]
        verdict = "pass" if ratio <= HISTORY_TARGET_RATIO else "FAIL"
        failed = failed or verdict == "FAIL"
        print(f"{'  history on / off (AUTO p1000)':<54} {ratio:>16.3f}x {'-':>14} {'<= 1.1x':>10} {verdict}")
    print_breakdown(by_name)
    if not only or "tcp" in only:
        tcp = (tcp_broker_instructions(n) - tcp_broker_instructions(0)) / n
        print(f"{'TCP: the broker process (producer + consumer processes)':<54} {tcp:>17,.0f} {'-':>14} {'-':>10} -")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer messages and runs (a smoke test)")
    parser.add_argument("--only", nargs="*", help="run only scenarios whose name contains one of these words")
    parser.add_argument(
        "--profile", action="store_true", help="print a cProfile of the in-process AUTO scenario instead of the table"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="instead of the table, count the CPU instructions per message of the in-process "
        "scenarios and their baseline (needs valgrind; a few minutes)",
    )
    args = parser.parse_args(argv)
    if args.profile:
        profile_inprocess(20_000 if args.quick else 100_000)
        return 0
    if args.instructions:
        return print_instructions(5_000 if args.quick else 20_000, args.only)
    rows: list[Row] = []
    try:
        measure_table(args, rows)
    finally:
        print_table(rows)
    return 1 if any(row.ok is False for row in rows) else 0


def measure_table(args: argparse.Namespace, rows: list[Row]) -> None:
    """The table's rows, appended to ``rows`` one by one (what was measured is printed even if a later scenario
    fails)."""
    n = 20_000 if args.quick else 100_000
    runs = 1 if args.quick else 3

    def wanted(name: str) -> bool:
        return not args.only or any(word in name for word in args.only)

    base = best_of(runs, lambda: asyncio_queue_pair(n))
    base_rate = n / base
    base_text = f"asyncio.Queue pair {base_rate:,.0f}/s"
    for name, mode, target, history in (
        ("in-process AUTO p1000", AckMode.AUTO_ACKNOWLEDGE, 0.13, False),  # issue 34: >= 0.13 on a quiet run
        ("in-process AUTO p1000, default broker (history on)", AckMode.AUTO_ACKNOWLEDGE, None, True),
        ("in-process CLIENT p1000 (ack every 100)", AckMode.CLIENT_ACKNOWLEDGE, None, False),
        ("in-process TRANSACTED p1000 (commit every 100)", AckMode.SESSION_TRANSACTED, None, False),
    ):
        if not wanted(name):
            continue
        # the in-process rows take their own baseline, in turns with the scenario (five turns: these are short)
        row_base, elapsed = best_of_pair(
            max(runs, 5),
            lambda: asyncio_queue_pair(n),
            lambda mode=mode, history=history: inprocess_pair(n, mode, history=history),
        )  # type: ignore[misc]
        rate = n / elapsed
        ratio = row_base / elapsed
        rows.append(
            Row(
                name,
                rate,
                "msg/s",
                f"asyncio.Queue pair {n / row_base:,.0f}/s",
                ratio,
                "-" if target is None else f">= {target}",
                None if target is None else ratio >= target,
            )
        )
    if wanted("pull"):
        pulls = n // 10
        elapsed = best_of(runs, lambda: pull_round_trips(pulls))
        rate = pulls / elapsed
        rows.append(
            Row("in-process pull (prefetch 0) round trips", rate, "msg/s", base_text, rate / base_rate, "-", None)
        )
    if wanted("fan"):
        fan_n = n // 10
        elapsed = best_of(runs, lambda: fan_out(fan_n))
        rate = fan_n * 10 / elapsed
        rows.append(
            Row("in-process topic fan-out to 10 consumers", rate, "deliv/s", base_text, rate / base_rate, "-", None)
        )
    if wanted("start"):
        per = best_of(runs, lambda: start_stop(2_000))
        rows.append(Row("broker start+stop, in-process", per * 1e3, "ms", "-", None, "<= 0.1 ms", per <= 1e-4))
    if wanted("serve"):
        serve_launch()  # warm-up: writes the bytecode caches, as an install would
        launches = [serve_launch() for _ in range(max(runs, 3))]
        accept = min(a for a, _, _ in launches)
        reply = min(r for _, r, _ in launches)
        stop = min(s for _, _, s in launches)
        python = min(python_launch() for _ in range(runs))
        baseline = f"python -c pass {python * 1e3:.0f} ms"
        rows.append(
            Row(
                "minibroker serve: launch -> first accept",
                accept * 1e3,
                "ms",
                baseline,
                accept / python,
                "<= 150 ms",
                accept <= 0.150,
            )
        )
        rows.append(
            Row("minibroker serve: launch -> first reply", reply * 1e3, "ms", baseline, reply / python, "-", None)
        )
        rows.append(Row("minibroker serve: SIGTERM -> exit", stop * 1e3, "ms", "-", None, "-", None))
    activemq = activemq_stomp(5_000 if args.quick else 20_000, runs) if wanted("tcp") or wanted("stomp") else None
    if wanted("tcp"):
        tcp_runs = [tcp_processes(n) for _ in range(1 if args.quick else 3)]
        rate = max(r.rate for r in tcp_runs)
        if activemq is not None and ("auto", 1000) in activemq:
            reference = activemq["auto", 1000].rate
            reference_text = f"ActiveMQ+stomp.py, this run {reference:,.0f}/s"
        else:
            reference, reference_text = ACTIVEMQ_REFERENCE_RATE, "ActiveMQ+stomp.py (issue 7) 36k/s"
        rows.append(
            Row(
                "TCP: producer + consumer processes, AUTO p1000",
                rate,
                "msg/s",
                reference_text,
                rate / reference,
                f">= {TCP_TARGET_VS_ACTIVEMQ}x",
                rate / reference >= TCP_TARGET_VS_ACTIVEMQ,
            )
        )
        cpu_us = min(r.broker_cpu for r in tcp_runs) * 1e6
        amq_cpu = None if activemq is None or ("auto", 1000) not in activemq else activemq["auto", 1000]
        rows.append(
            Row(
                "TCP: broker CPU per message (AUTO p1000)",
                cpu_us,
                "us",
                "ActiveMQ 5.17: 11-25 us"
                if amq_cpu is None
                else f"ActiveMQ+stomp.py, this run {amq_cpu.broker_us_per_message:.1f} us",
                None if amq_cpu is None else cpu_us / amq_cpu.broker_us_per_message,
                f"<= {TCP_TARGET_CPU_US:.0f} us",
                cpu_us <= TCP_TARGET_CPU_US,
            )
        )
    if wanted("restart"):
        from restart_bench import measure as measure_restart

        restarted = measure_restart(100_000 if args.quick else 1_000_000)
        rows.append(
            Row(
                f"serve --data-dir, {restarted.messages:,} stored: restart -> first answer",
                restarted.first_answer_s,
                "s",
                "-",
                None,
                "<= 2 s",
                restarted.first_answer_s <= 2,
            )
        )
        rows.append(
            Row(
                f"serve --data-dir, {restarted.messages:,} stored: peak RSS to first answer",
                restarted.peak_rss_mb,
                "MiB",
                "-",
                None,
                "<= 300 MB",
                restarted.peak_rss_mb <= 300,
            )
        )
    if wanted("stomp"):
        rows.extend(stomp_rows(5_000 if args.quick else 20_000, runs, activemq))
    if wanted("spark"):
        rows.extend(spark_rows(args.quick, runs))
    if wanted("suite"):
        from suite_bench import measure as measure_suite

        suite = measure_suite(200 if args.quick else 1000, runs)
        rows.append(
            Row(
                f"pytest: {suite.tests:,} tests on the minibroker fixture",
                suite.minibroker_s,
                "s",
                f"asyncio.Queue fixture {suite.queue_s:.2f} s",
                suite.ratio,
                "<= 1.1x",  # issue 34
                suite.ratio <= 1.1,
            )
        )
    if wanted("conformance"):
        seconds, count = conformance_wall_time()
        rows.append(
            Row(f"conformance suite ({count} scenarios), virtual time", seconds, "s", "-", None, "<= 5 s", seconds <= 5)
        )
    if wanted("scale"):
        small, large = (10_000, 100_000) if args.quick else (100_000, 1_000_000)
        per_small = asyncio.run(scale_queued(small))
        per_large = asyncio.run(scale_queued(large))
        rows.append(
            Row(
                f"scale: enqueue cost {large:,} vs {small:,} queued",
                per_large / per_small,
                "x",
                "-",
                None,
                "~1 (linear)",
                per_large / per_small < 2,
            )
        )
        few = asyncio.run(scale_consumers(10, 20_000))
        many = asyncio.run(scale_consumers(1_000, 20_000))
        rows.append(
            Row(
                "scale: per-message cost, 1,000 vs 10 consumers",
                many / few,
                "x",
                "-",
                None,
                "~1 (linear)",
                many / few < 3,
            )
        )
        # 10 messages per queue at 10,000 queues: the cost of creating a queue is part of what is measured
        d_few = asyncio.run(scale_destinations(10, 100_000))
        d_many = asyncio.run(scale_destinations(10_000, 100_000))
        rows.append(
            Row(
                "scale: per-message cost, 10,000 vs 10 queues",
                d_many / d_few,
                "x",
                "-",
                None,
                "~1 (linear)",
                d_many / d_few < 3,
            )
        )
    if wanted("memory"):
        size = asyncio.run(memory_queued(n))
        per_100k = size * (100_000 / n) / 1e6
        rows.append(
            Row("memory per 100k queued 100-byte messages", per_100k, "MB", "-", None, "<= 60 MB", per_100k <= 60)
        )


def print_table(rows: list[Row]) -> None:
    header = f"{'scenario':<54} {'value':>14} {'unit':<8} {'baseline':<34} {'ratio':>7} {'target':<14} result"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(row.render())


if __name__ == "__main__":
    sys.exit(main())
