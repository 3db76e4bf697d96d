"""A tiny HTTP/1.1 client over asyncio streams for the HTTP listener's tests (no third-party client: the tests read
exactly what the server wrote, status line and headers included), and a broker with users."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import attrs

from minibroker import Broker
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User
from minibroker.plugins.http import HttpServer


@attrs.frozen
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def read_answer(reader: asyncio.StreamReader) -> Answer:
    """One response (Content-Length framed, or up to EOF), headers' names in lower case."""
    line = await reader.readline()
    if not line:
        raise ConnectionError("closed before a response")
    status = int(line.split()[1])
    headers: dict[str, str] = {}
    while (header := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif status in (100, 204, 304):
        body = b""
    else:
        body = await reader.read()
    return Answer(status, headers, body)


async def request(
    server: HttpServer,
    method: str,
    target: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    *,
    auth: tuple[str, str] | None = None,
) -> Answer:
    """One request on a fresh connection."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        lines = [f"{method} {target} HTTP/1.1", f"Host: {server.host}:{server.port}", "Connection: close"]
        if auth is not None:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            lines.append(f"Authorization: Basic {token}")
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        if body or method == "POST":
            lines.append(f"Content-Length: {len(body)}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()
        return await asyncio.wait_for(read_answer(reader), 30)
    finally:
        writer.close()


ENTRIES = [
    AuthorizationEntry(">", read="admins,readers", write="admins", admin="admins"),
    AuthorizationEntry("topic://ActiveMQ.Advisory.>", read="*", write="*", admin="*"),
]


def secured_broker() -> Broker:
    """A broker with an administrator (admin/secret) and a user who may only read (reader/password)."""
    users = {"admin": User("secret", "admins"), "reader": User("password", "readers")}
    return Broker(plugins=[AuthPlugin(users, ENTRIES)])
