"""The same client scenario against an embedded ActiveMQ 5.17.2 (java/EmbeddedActiveMQ.java, its connector offering
what minibroker offers: loose encoding, no cache) and against minibroker, both through a socket tap: what each
broker sends the client, command by command (normalized: ids, times and the broker's own names left out), is the
same."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import subprocess
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import pytest

from minibroker import Broker
from minibroker.message import Destination
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire import start_openwire_server
from minibroker.plugins.openwire.codec import OpenWireDecoder
from minibroker.plugins.openwire.messages import broker_message
from minibroker.plugins.openwire.primitives import unmarshal_primitive_map


class Tap:
    """A TCP proxy that keeps what the server side sent on each connection."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.sent: list[bytearray] = []
        self._tasks: set[asyncio.Task[Any]] = set()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        sent = bytearray()
        self.sent.append(sent)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, keep: bytearray | None) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    if keep is not None:
                        keep += data
                    dst.write(data)
            dst.close()

        await asyncio.gather(pipe(reader, up_writer, None), pipe(up_reader, writer, sent))

    @contextlib.asynccontextmanager
    async def listening(self) -> AsyncIterator[int]:
        def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.ensure_future(self._handle(reader, writer))
            self._tasks.add(task)

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        try:
            yield server.sockets[0].getsockname()[1]
        finally:
            server.close()
            await server.wait_closed()
            await asyncio.gather(*self._tasks, return_exceptions=True)


def normalized(command: ow.DataStructure) -> tuple[Any, ...]:
    """What a client acts on in a command from the broker."""
    name = type(command).__name__
    if isinstance(command, ow.ExceptionResponse):
        return (name, command.correlation_id, command.exception and command.exception.class_name)
    if isinstance(command, ow.Response):
        return (name, command.correlation_id)
    if isinstance(command, ow.ProducerAck):
        return (name, command.producer_id and command.producer_id.value, command.size)
    if isinstance(command, ow.MessageDispatch):
        consumer = command.consumer_id
        ids = None if consumer is None else (consumer.session_id, consumer.value)
        message = command.message
        if message is None:
            return (name, ids, None)
        data = message.data_structure
        if data is not None:  # an advisory: what it advises
            return (name, ids, type(data).__name__, getattr(data, "operation_type", None))
        seen = broker_message(message)
        properties = unmarshal_primitive_map(message.marshalled_properties or b"\0\0\0\0") or {}
        return (
            name,
            ids,
            type(message).__name__,
            _named(seen.destination),
            sorted(seen.body.items()) if isinstance(seen.body, Mapping) else seen.body,
            sorted((k, repr(v)) for k, v in properties.items()),
            (seen.persistent, seen.priority, seen.expiration > 0, seen.correlation_id, seen.type, seen.group_id),
            None if message.message_id is None else message.message_id.producer_sequence_id,
            command.redelivery_counter,
            message.redelivery_counter,
        )
    return (name,)


def _named(destination: Destination) -> str:
    """A temporary destination's name without the client's connection id (it differs from run to run)."""
    if destination.name.startswith("ID:"):
        return f"{destination.kind.value}://<temporary>:{destination.name.rsplit(':', 1)[-1]}"
    return str(destination)


def received(tap: Tap) -> list[list[tuple[Any, ...]]]:
    """Per connection, the normalized commands the broker sent (keep-alives left out: they follow the clock):
    the dispatches in the order they came, the producer acks in theirs, then everything else in its order. ActiveMQ
    writes a command's Response from the connection's thread and the dispatches and acks it caused from others:
    which comes first varies from run to run there, and a client handles both."""
    out = []
    for data in tap.sent:
        decoder = OpenWireDecoder()
        decoder.receive_data(bytes(data))
        commands = []
        while (command := decoder.next_command()) is not None:
            # (ActiveMQ writes ConnectionInfo's ConnectionControl from another thread than its Response: either
            # may come first there, so only its presence is compared)
            if not isinstance(command, (ow.KeepAliveInfo, ow.ConnectionControl)):
                commands.append(normalized(command))
            elif isinstance(command, ow.ConnectionControl):
                commands.insert(0, ("ConnectionControl",))
        apart = ("MessageDispatch", "ProducerAck")  # each in its own order
        out.append([c for kind in apart for c in commands if c[0] == kind] + [c for c in commands if c[0] not in apart])
    return out


@pytest.fixture(scope="module")
def activemq_port(openwire_java: str) -> Iterator[int]:
    """An embedded ActiveMQ for the module's scenarios (each uses its own destinations; queues end empty)."""
    proc = subprocess.Popen(
        ["java", "-cp", openwire_java, "EmbeddedActiveMQ"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield int(line.split()[1])
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


#: every scenario of java/OpenWireClient.java whose outcome ActiveMQ and minibroker share ("bodies" sends a plain
#: Message, which minibroker refuses: bodiless-message; "errors" and "xa" are about refusals too)
SCENARIOS = [
    ("connect", ""),
    ("messages", ""),
    ("browse", ""),
    ("pull", "?jms.prefetchPolicy.all=0"),
    ("temp", ""),
    ("tempreply", ""),
    ("rollback", ""),
    ("acks", ""),
    ("selector", ""),
    ("nolocal", ""),
    ("options", ""),
    ("window", "?jms.producerWindowSize=1024&jms.useAsyncSend=true"),
    ("durable", ""),
]


@pytest.mark.parametrize(("scenario", "options"), SCENARIOS, ids=[s for s, _ in SCENARIOS])
async def test_minibroker_answers_as_activemq(java_run: Any, activemq_port: int, scenario: str, options: str) -> None:
    activemq = Tap(activemq_port)
    async with activemq.listening() as port:
        expected_lines = await java_run("OpenWireClient", f"tcp://127.0.0.1:{port}{options}", scenario)
    async with Broker() as broker, await start_openwire_server(broker) as server:
        mini = Tap(server.port)
        async with mini.listening() as port:
            lines = await java_run("OpenWireClient", f"tcp://127.0.0.1:{port}{options}", scenario)
    assert lines[1:] == expected_lines[1:]
    theirs, ours = received(activemq), received(mini)
    assert len(ours) == len(theirs)
    for connection, (expected, got) in enumerate(zip(theirs, ours, strict=True)):
        diff = difflib.unified_diff([repr(c) for c in expected], [repr(c) for c in got], "activemq", "minibroker")
        assert got == expected, f"connection {connection}:\n" + "\n".join(diff)
