"""ActiveMQ's JMS client (Debian's activemq-client 5.17.2) on a ``failover:`` URL across broker failures (issue 44,
item 5; java/FailoverClient.java): in-flight sends resent after a restart and dropped as duplicates by the broker's
producer audit, and the client's connection audit poison-acking what the broker dispatches again after a reconnect
("Suppressing duplicate delivery on connection": the DLQ entries every failover user meets)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.servekit import Served, serve

from minibroker import Broker
from minibroker.client import connect
from minibroker.plugins.openwire import start_openwire_server

#: what every failover URL here adds: reconnect at once, and the client's consumers keep their prefetch
RECONNECT = "initialReconnectDelay=10&maxReconnectDelay=100"


class JavaClient:
    """FailoverClient.java running a scenario: its lines as they come, and the line on stdin that says go on."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []

    async def until_line(self, wanted: str, timeout: float = 60.0) -> None:
        assert self.proc.stdout is not None
        async with asyncio.timeout(timeout):
            while wanted not in self.lines:
                line = await self.proc.stdout.readline()
                assert line, f"the client ended before {wanted!r}: {self.lines}"
                self.lines.append(line.decode().rstrip("\n"))

    def go_on(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"GO\n")

    async def finish(self, timeout: float = 90.0) -> list[str]:
        out, _ = await asyncio.wait_for(self.proc.communicate(), timeout)
        self.lines += out.decode().splitlines()
        assert self.proc.returncode == 0, self.lines
        return self.lines


class Proxy:
    """A TCP proxy in front of a broker's OpenWire port: the test cuts its connections (a network failure), points
    it at another port (a restarted broker) and can make it swallow what the broker says (a broker that dies before
    its answer leaves)."""

    def __init__(self, target: int) -> None:
        self.target = target
        #: drop everything the broker sends from now on
        self.swallow = False
        self.pairs: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:  # no broker there (yet): the client tries again
            writer.close()
            return
        pair = (writer, up_writer)
        self.pairs.add(pair)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, from_broker: bool) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    if not (from_broker and self.swallow):
                        dst.write(data)
            dst.close()

        try:
            await asyncio.gather(pipe(reader, up_writer, False), pipe(up_reader, writer, True))
        finally:
            self.pairs.discard(pair)

    def cut(self) -> int:
        """Break every connection through the proxy now; how many."""
        pairs = list(self.pairs)
        for client, broker in pairs:
            client.transport.abort()
            broker.transport.abort()
        return len(pairs)

    @contextlib.asynccontextmanager
    async def listening(self) -> AsyncIterator[str]:
        def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.ensure_future(self._handle(reader, writer))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        try:
            yield f"tcp://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        finally:
            server.close()
            self.cut()
            await asyncio.gather(*self._tasks, return_exceptions=True)


@contextlib.asynccontextmanager
async def embedded_activemq(classpath: str) -> AsyncIterator[int]:
    """A real ActiveMQ 5.17.2 (java/EmbeddedActiveMQ.java, in memory): its OpenWire port."""
    proc = await asyncio.create_subprocess_exec(
        "java", "-cp", classpath, "EmbeddedActiveMQ", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert line.startswith("PORT "), line
        yield int(line.split()[1])
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 60)
        except TimeoutError:
            proc.kill()
            await proc.wait()


@contextlib.asynccontextmanager
async def java_client(classpath: str, url: str, scenario: str) -> AsyncIterator[JavaClient]:
    proc = await asyncio.create_subprocess_exec(
        "java",
        "-cp",
        classpath,
        "FailoverClient",
        url,
        scenario,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        yield JavaClient(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.parametrize("backend", ["minibroker", "activemq"])
async def test_redispatched_deliveries_are_poison_acked_by_the_clients_audit(openwire_java: str, backend: str) -> None:
    """The client delivered five messages and, with ``optimizeAcknowledge``, has not acked them when its transport
    fails. After the reconnect the broker dispatches them again; the client's connection audit has seen them, so it
    answers each with a POISON ack whose cause is "Suppressing duplicate delivery on connection, consumer <id>",
    never hands them to the application again, and the broker moves them to the DLQ with that cause in
    ``dlqDeliveryFailureCause`` (ActiveMQ semantics §7, §10.7). The same on an embedded ActiveMQ 5.17.2."""
    options = "jms.optimizeAcknowledge=true&jms.optimizeAcknowledgeTimeOut=0&jms.prefetchPolicy.queuePrefetch=10"
    async with contextlib.AsyncExitStack() as stack:
        broker: Broker | None = None
        if backend == "minibroker":
            broker = await stack.enter_async_context(Broker())
            server = await stack.enter_async_context(await start_openwire_server(broker))
            port = int(server.url.rsplit(":", 1)[1])
        else:
            port = await stack.enter_async_context(embedded_activemq(openwire_java))
        proxy = Proxy(port)
        proxied = await stack.enter_async_context(proxy.listening())
        url = f"failover:({proxied})?{RECONNECT}&{options}"
        client = await stack.enter_async_context(java_client(openwire_java, url, "duplicates"))
        await client.until_line("DELIVERED")
        if broker is not None:
            stats = broker.queue_statistics("ow.duplicates")
            assert stats is not None and stats.inflight == 5 and stats.dequeued == 0  # delivered, none acked
        assert proxy.cut() == 1
        client.go_on()
        lines = await client.finish()
    consumer = re.search(r"consumer (ID:\S+)", lines[-2])
    assert consumer is not None, lines
    cause = f"java.lang.Throwable: Suppressing duplicate delivery on connection, consumer {consumer[1]}"
    assert lines == [
        *(f"RECEIVED d{i}" for i in range(1, 6)),
        "DELIVERED",
        "AGAIN null",  # the duplicates never reach the application
        "RECEIVED d6",
        *(f"DLQ d{i} cause={cause}" for i in range(1, 6)),
        "DONE",
    ]
    if broker is not None:
        assert [record.cause for record in broker.dead_letters()] == [cause] * 5


async def openwire_port(served: Served) -> int:
    """The OpenWire port ``serve --openwire-port 0`` printed (its second line)."""
    assert served.proc.stdout is not None
    line = (await asyncio.wait_for(served.proc.stdout.readline(), 30)).decode().strip()
    assert line.startswith("openwire://127.0.0.1:"), line
    return int(line.rsplit(":", 1)[1])


async def queue_holds(url: str, queue: str, *, size: int, dequeued: int, timeout: float = 30.0) -> None:
    """Wait until the served broker's ``queue`` holds ``size`` messages and counts ``dequeued`` acked."""
    async with await connect(url) as conn, asyncio.timeout(timeout):
        while True:
            stats = await conn.queue_statistics(queue)
            if stats is not None and stats.size == size and stats.dequeued == dequeued:
                return  # else ask again: each answer is a round trip to the broker, no timer


@pytest.mark.parametrize("consumed", [False, True], ids=["still-queued", "consumed-before-the-kill"])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
async def test_an_in_flight_send_resent_after_a_restart_is_dropped(
    openwire_java: str, tmp_path: Path, consumed: bool, sig: int
) -> None:
    """``serve --data-dir``: the broker stores p2 and dies before its answer reaches the client (the proxy swallows
    it). The client's failover transport reconnects to the restarted broker, replays its state and sends p2 again;
    the broker's producer audit, kept in the store, knows p2's producer sequence and drops it, answering, so p2 is
    on the queue once. ``consumed-before-the-kill``: another client had taken and acked p2 before the broker died;
    only the store's audit (not the queue) can know it then, as KahaDB's producerSequenceIdTracker does."""
    options = ("--data-dir", str(tmp_path / "data"), "--openwire-port", "0")
    served = await serve(tmp_path, *options)
    try:
        proxy = Proxy(await openwire_port(served))
        async with proxy.listening() as proxied:
            url = f"failover:({proxied})?{RECONNECT}"
            async with java_client(openwire_java, url, "inflight") as client:
                await client.until_line("SENT p1")
                proxy.swallow = True  # the broker's answers are lost from now on
                client.go_on()
                if consumed:
                    async with await connect(served.url) as python:
                        consumer = await (await python.create_session()).create_consumer("ow.inflight")
                        for expected in ("p1", "p2"):
                            message = await consumer.receive(timeout=30)
                            assert message is not None and message.body == expected
                    await queue_holds(served.url, "ow.inflight", size=0, dequeued=2)
                else:
                    await queue_holds(served.url, "ow.inflight", size=2, dequeued=0)
                if sig == signal.SIGKILL:
                    await served.kill()
                else:
                    assert await served.stop(sig) == 0
                served = await serve(tmp_path, *options)
                proxy.target, proxy.swallow = await openwire_port(served), False
                proxy.cut()
                lines = await client.finish()
        received = ["RECEIVED p3"] if consumed else ["RECEIVED p1", "RECEIVED p2", "RECEIVED p3"]
        assert lines == ["SENT p1", "SENT p2", "SENT p3", *received, "DONE"]
        await queue_holds(served.url, "ow.inflight", size=0, dequeued=len(received))
    finally:
        await served.kill()
