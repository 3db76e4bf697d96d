"""A socket fuzz of the HTTP listener: thousands of mutated and random requests from attacking connections, while a
victim sends and consumes through the REST API; the victim loses nothing, the broker keeps serving, and every bad
request is a 4xx or a closed socket, never a crash (no ERROR logged)."""

from __future__ import annotations

import asyncio
import json
import logging
import random

import pytest
from support.http_helpers import request

from minibroker import Broker
from minibroker.plugins.http import start_http_server

REQUESTS = 3000
VICTIM_MESSAGES = 50
MBEAN = "org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=fuzz"


def valid_requests(rng: random.Random) -> list[bytes]:
    body = json.dumps({"type": rng.choice(["read", "exec", "list", "search"]), "mbean": MBEAN, "operation": "purge()"})
    return [
        b"GET /api/jolokia/read/" + MBEAN.encode() + b"/QueueSize HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"POST /api/jolokia HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body.encode()),
        b"POST /api/message/fuzz?type=queue HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n4\r\nfuzz\r\n0\r\n\r\n",
        b"GET /api/message/fuzz?type=queue&readTimeout=0 HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"GET /console/api/messages?queue=fuzz&page=%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % rng.randrange(3),
        b'POST /console/api/purge HTTP/1.1\r\nHost: localhost\r\nContent-Length: 17\r\n\r\n{"queue": "fuzz"}',
        b"GET /static/console.js HTTP/1.0\r\n\r\n",
    ]


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    choice = rng.random()
    if choice < 0.3 and out:
        out[rng.randrange(len(out))] = rng.randrange(256)
    elif choice < 0.45:
        out = out[: rng.randrange(len(out) + 1)]
    elif choice < 0.55:
        out = bytearray(rng.randbytes(rng.randrange(1, 60)))
    elif choice < 0.65:
        at = rng.randrange(len(out) + 1)
        out[at:at] = rng.choice([b"\r\n", b"\n\n", b":", b"%", b"!/", b"Content-Length: 3\r\n", b"\x00"])
    return bytes(out)


async def attack(port: int, rng: random.Random, budget: list[int]) -> None:
    while budget[0] > 0:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(rng.randrange(1, 8)):
            writer.write(mutate(rng, rng.choice(valid_requests(rng))))
            budget[0] -= 1
        try:
            await writer.drain()
            await asyncio.wait_for(reader.read(65536), 0.05)
        except (OSError, TimeoutError):
            pass
        writer.close()


async def test_fuzzed_requests_harm_no_one(caplog: pytest.LogCaptureFixture) -> None:
    async with Broker() as broker:
        server = await start_http_server(broker, handshake_timeout=1.0, idle_timeout=1.0)
        async with server:
            budget = [REQUESTS]
            attackers = [asyncio.create_task(attack(server.port, random.Random(seed), budget)) for seed in range(4)]
            form = {"Content-Type": "application/x-www-form-urlencoded"}
            for i in range(VICTIM_MESSAGES):
                sent = await request(server, "POST", "/api/message/victim?type=queue", f"body=v{i}".encode(), form)
                assert sent.status == 200
            await asyncio.gather(*attackers)
            got = []
            for _ in range(VICTIM_MESSAGES):
                answer = await request(server, "GET", "/api/message/victim?type=queue&readTimeout=2000")
                got.append(answer.body.decode())
            assert got == [f"v{i}" for i in range(VICTIM_MESSAGES)]
            assert budget[0] <= 0
            version = await request(server, "GET", "/api/jolokia/version")
            assert version.json()["status"] == 200
    bugs = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not bugs, [r.getMessage() for r in bugs]
