"""Fuzzing the connector over real sockets: random and mutated frames on several connections at once.

Before the storm, a native producer puts persistent "ledger" messages on a queue the fuzzers also consume from (and
ACK, NACK, abort and drop connections on). Afterwards the broker must be intact: no connection or consumer leaked,
every ledger message accounted for exactly once (still queued, dead-lettered, or consumed by an ack the broker
recorded), queue counters consistent, and a healthy STOMP client and a native client still work.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any

import pytest
from support.stomp_helpers import RawStompClient

from minibroker import Broker, ManualClock
from minibroker.client import AckMode, connect
from minibroker.clock import settle
from minibroker.plugins.stomp import StompConverter, start_stomp_server
from minibroker.plugins.stomp.codec import CLIENT_COMMANDS, StompDecoder, StompFrame, encode_frame

SEED = 20260501
CONNECTIONS = 8
FRAMES = 10_000
LEDGER = 1000
TIME_LIMIT = 60.0

DESTINATIONS = [
    "/queue/ledger",
    "/queue/fuzz-a",
    "/queue/fuzz-b",
    "/topic/fuzz",
    "/temp-queue/t1",
    "fuzz-plain",
    "/queue/ActiveMQ.DLQ",
    "/queue/",
    "/queue/a b",
    "/queue/x,/queue/y",
    "",
    "/bogus/x",
]
COMMANDS = (
    ["SEND"] * 12
    + ["SUBSCRIBE"] * 6
    + ["ACK"] * 6
    + ["NACK"] * 2
    + ["UNSUBSCRIBE", "BEGIN", "BEGIN", "COMMIT", "ABORT", "CONNECT", "STOMP"]
)
#: fatal for the connection: rarer, so that most connections live long enough to matter
RARE_COMMANDS = ["DISCONNECT", "FOO", "send", "MESSAGE"]
VERSIONS = ["1.2", "1.1", "1.0", "1.0,1.1,1.2", "2.0", "", "1.2,1.1"]


class Fuzzer:
    """One fuzzing connection (reconnecting when the broker closes it)."""

    def __init__(self, port: int, seed: int, handled: dict[str, int]) -> None:
        self.port = port
        self.rng = random.Random(seed)
        #: frames the broker decoded so far, all connections together (the fuzzers stop at FRAMES)
        self.handled = handled
        self.sent = 0
        self.reconnects = 0
        self.acks: list[str] = []
        self.ids: list[tuple[str, str]] = []  # (subscription, message-id) for 1.1 acks
        self.errors = 0
        self.messages = 0

    def pick(self, items: list[Any]) -> Any:
        return items[self.rng.randrange(len(items))]

    def frame(self) -> bytes:
        rng = self.rng
        roll = rng.random()
        if roll < 0.005:
            return bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 300)))
        command = self.pick(RARE_COMMANDS if rng.random() < 0.01 else COMMANDS)
        headers: dict[str, str] = {}
        body = b""
        if command == "SEND":
            headers["destination"] = self.pick(DESTINATIONS) if rng.random() < 0.9 else "/queue/fuzz-a"
            body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 200)))
            if rng.random() < 0.5:
                headers["content-length"] = str(len(body))
            else:
                body = body.replace(b"\0", b"")
            for name, values in (
                ("persistent", ["true", "false", "TRUE"]),
                ("priority", ["0", "9", "4", "x"]),
                ("expires", ["0", "1", "9999999999999"]),
                ("x-prop", ["1", "a:b", "\\n"]),
                ("amq-msg-type", ["text", "bytes", "map"]),
                ("reply-to", DESTINATIONS),
                ("JMSXGroupID", ["g1", "g2"]),
            ):
                if rng.random() < 0.15:
                    headers[name] = self.pick(values)
        elif command == "SUBSCRIBE":
            headers["id"] = f"s{rng.randrange(6)}"
            headers["destination"] = self.pick(DESTINATIONS)
            headers["ack"] = self.pick(["auto", "client", "client-individual", "bogus"])
            if headers["destination"] in ("/queue/ledger", "/queue/ActiveMQ.DLQ"):
                headers["ack"] = self.pick(["client", "client-individual"])  # consumed only by explicit ACKs
                headers["activemq.prefetchSize"] = self.pick(["1", "2", "5", "20"])
            if rng.random() < 0.5 and "activemq.prefetchSize" not in headers:
                headers["activemq.prefetchSize"] = self.pick(["0", "1", "5", "1000", "-3", "many"])
            if rng.random() < 0.1:
                headers["selector"] = self.pick(["x-prop = '1'", "a =", "JMSPriority > 3", "(("])
            if rng.random() < 0.05:
                headers["browser"] = "true"
        elif command in ("ACK", "NACK"):
            if self.acks and rng.random() < 0.7:
                headers["id"] = self.acks.pop(rng.randrange(len(self.acks)))
            elif self.ids and rng.random() < 0.5:
                sub, mid = self.ids.pop(rng.randrange(len(self.ids)))
                headers["subscription"], headers["message-id"] = sub, mid
            else:
                headers["id"] = str(rng.randrange(1000))
            if rng.random() < 0.1:
                headers["transaction"] = f"tx{rng.randrange(3)}"
        elif command in ("BEGIN", "COMMIT", "ABORT"):
            if rng.random() < 0.9:
                headers["transaction"] = f"tx{rng.randrange(3)}"
        elif command == "UNSUBSCRIBE":
            headers["id"] = f"s{rng.randrange(6)}"
        elif command in ("CONNECT", "STOMP"):
            headers["accept-version"] = self.pick(VERSIONS)
            if rng.random() < 0.2:
                headers["heart-beat"] = self.pick(["0,0", "1,1", "0", "x,y", "10,10,10"])
        if rng.random() < 0.3:
            headers["receipt"] = f"r{rng.randrange(10**6)}"
        wire = encode_frame(StompFrame(command, headers, body), self.pick(["1.2", "1.1", "1.0"]))
        if rng.random() < 0.05:
            wire = self.mutate(bytearray(wire))
        return wire

    def mutate(self, wire: bytearray) -> bytes:
        rng = self.rng
        for _ in range(rng.randrange(1, 5)):
            pos = rng.randrange(len(wire) + 1)
            action = rng.randrange(4)
            if action == 0 and pos < len(wire):
                wire[pos] = self.pick([0, 10, 13, 58, 92, 255, rng.getrandbits(8)])
            elif action == 1:
                wire[pos:pos] = self.pick([b"\0", b"\n", b":", b"\\", b"\\q", b"content-length:7\n", b"\xff\xfe"])
            elif action == 2 and pos < len(wire):
                del wire[pos]
            else:
                wire[pos:pos] = wire[: rng.randrange(1, 20)]
        return bytes(wire)

    def done(self) -> bool:
        return sum(self.handled.values()) >= FRAMES

    async def run(self) -> None:
        while not self.done():
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            decoder = StompDecoder(role="client", version="1.2")
            reading = asyncio.get_running_loop().create_task(self.read(reader, decoder))
            try:
                if self.rng.random() < 0.9:
                    writer.write(encode_frame(StompFrame("CONNECT", {"accept-version": self.pick(VERSIONS[:4])})))
                for _ in range(self.rng.randrange(20, 400)):
                    if self.done() or reading.done() or writer.is_closing():
                        break
                    self.sent += 1
                    writer.write(self.frame())
                    if self.sent % 8 == 0:
                        await writer.drain()
                        await asyncio.sleep(0)
                if self.rng.random() < 0.2 or reading.done():
                    writer.transport.abort()  # a dropped client: what the broker has not read is lost
                else:
                    writer.write(b"DISCONNECT\n\n\0")
                    async with asyncio.timeout(10):
                        await asyncio.shield(reading)  # the broker closes after DISCONNECT
                    writer.close()
                await writer.wait_closed()
            except (ConnectionError, OSError):
                pass
            finally:
                if not writer.is_closing():
                    writer.transport.abort()
                reading.cancel()
                try:
                    await reading
                except asyncio.CancelledError:
                    pass
            self.reconnects += 1

    async def read(self, reader: asyncio.StreamReader, decoder: StompDecoder) -> None:
        try:
            while data := await reader.read(65536):
                decoder.receive_data(data)
                for frame in decoder:
                    if frame.command == "CONNECTED":
                        decoder.version = frame.headers.get("version", "1.0")
                    elif frame.command == "MESSAGE":
                        self.messages += 1
                        if "ack" in frame.headers:
                            self.acks.append(frame.headers["ack"])
                        elif "subscription" in frame.headers:
                            self.ids.append((frame.headers["subscription"], frame.headers["message-id"]))
                    elif frame.command == "ERROR":
                        self.errors += 1
        except (ConnectionError, OSError):
            pass


def consumed(broker: Broker, message_id: str) -> bool:
    """The broker recorded a consuming ack for this message (outside a transaction, or committed), or dropped it
    for a NACK on the dead-letter queue itself (ActiveMQ's RegionBroker does not re-add a message to the DLQ it is
    on: "loop"; a fuzz client may subscribe to ActiveMQ.DLQ and NACK what it gets)."""
    for record in broker.history(message_id):
        if record.event == "ack" and record.ack_type in ("STANDARD", "INDIVIDUAL") and record.transaction_id is None:
            return True
        if record.event == "committed" and record.consumer_id is not None:
            return True
        if record.event == "dropped" and str(record.detail).startswith("loop"):
            return True
    return False


@pytest.mark.usefixtures("loop_errors")
async def test_fuzz_then_healthy_clients_and_every_ledger_message_accounted_for(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    started = time.monotonic()
    handled: dict[str, int] = {}
    receive_frame = StompConverter.receive_frame

    def counting(self: StompConverter, frame: StompFrame) -> None:
        handled[frame.command] = handled.get(frame.command, 0) + 1
        receive_frame(self, frame)

    monkeypatch.setattr(StompConverter, "receive_frame", counting)
    clock = ManualClock()
    async with Broker(clock=clock, history_limit=1_000_000) as broker:
        server = await start_stomp_server(broker, max_frame_size=64 * 1024)
        async with await connect(broker) as native:
            producer = await (await native.create_session()).create_producer("ledger")
            ledger = [await producer.send(f"ledger-{i}", persistent=True) for i in range(LEDGER)]
        fuzzers = [Fuzzer(server.port, SEED + i, handled) for i in range(CONNECTIONS)]
        async with asyncio.timeout(TIME_LIMIT):
            await asyncio.gather(*(f.run() for f in fuzzers))
            await server.wait_connection_count(0, timeout=TIME_LIMIT)
        # no frame made the connector fail internally (it logs and closes in that case)
        assert not [r for r in caplog.records if r.name == "minibroker.stomp" and r.levelno >= logging.ERROR]
        sent = sum(f.sent for f in fuzzers)
        decoded = sum(handled.values())
        known = {k: v for k, v in sorted(handled.items()) if k in CLIENT_COMMANDS}
        print(
            f"\nfuzz: {sent} frames sent on {sum(f.reconnects for f in fuzzers)} connections "
            f"({CONNECTIONS} at a time), {decoded} decoded by the broker ({known}, "
            f"{decoded - sum(known.values())} with other commands), {sum(f.messages for f in fuzzers)} MESSAGEs "
            f"and {sum(f.errors for f in fuzzers)} ERRORs received, {time.monotonic() - started:.1f} s, seed {SEED}"
        )
        assert decoded >= FRAMES

        # nothing leaked: every fuzz connection and its consumers and transactions are gone
        await settle()
        stats = broker.statistics()
        assert (stats.connections, stats.consumers, stats.transactions) == (0, 0, 0), stats

        # every queue's counters add up
        for name in broker.queue_names():
            q = broker.queue(name)
            assert q.size == q.enqueued - q.dequeued, (name, q.statistics())
            assert q.inflight == 0, (name, q.statistics())

        # every ledger message exactly once: still queued, dead-lettered, or consumed
        queued = [m.message_id for m in broker.queue("ledger").browse()]
        dead = [m.message_id for m in broker.queue("ActiveMQ.DLQ").browse()]
        assert len(set(queued)) == len(queued)
        for message_id in ledger:
            places = (message_id in queued) + (message_id in dead)
            assert places <= 1, message_id
            assert places == 1 or consumed(broker, message_id), f"{message_id} lost: {broker.history(message_id)}"
        queued_set, dead_set = set(queued), set(dead)
        print(
            f"ledger of {LEDGER}: {len(queued_set.intersection(ledger))} still queued, "
            f"{len(dead_set.intersection(ledger))} dead-lettered, "
            f"{len([m for m in ledger if m not in queued_set and m not in dead_set])} consumed"
        )

        # a healthy STOMP client still works, and drains exactly what is left of the ledger
        healthy = await RawStompClient.open(server.port)
        await healthy.send("/queue/after", "ok", persistent="true")
        await healthy.request("SUBSCRIBE", {"id": "after", "destination": "/queue/after"})
        assert (await healthy.message()).body == b"ok"
        await healthy.request("SUBSCRIBE", {"id": "ledger", "destination": "/queue/ledger", "ack": "client-individual"})
        drained = []
        live = [m.message_id for m in broker.queue("ledger").browse() if not m.is_expired(clock.now())]
        for _ in live:
            frame = await healthy.message()
            drained.append(frame.headers["message-id"])
            await healthy.request("ACK", {"id": frame.headers["ack"]})
        await healthy.no_message()
        assert sorted(drained) == sorted(live)
        assert set(queued) & set(ledger) <= set(drained)
        assert broker.queue("ledger").size == 0
        await healthy.disconnect()

        # and so does a native client
        async with await connect(broker) as conn:
            session = await conn.create_session(AckMode.CLIENT_ACKNOWLEDGE)
            await (await session.create_producer("native-after")).send("native-ok")
            consumer = await session.create_consumer("native-after")
            await settle()
            msg = await consumer.receive(timeout=0)
            assert msg is not None and msg.body == "native-ok"
            await msg.acknowledge()
        await server.close()
    assert time.monotonic() - started < TIME_LIMIT
