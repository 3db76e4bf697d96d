"""Small helpers for tests written against the client API."""

from __future__ import annotations

from typing import Any

from minibroker.client import AckMode, Connection, ReceivedMessage


async def fill(conn: Connection, n: int, queue: str = "q", **kw: Any) -> list[str]:
    """Send m1..mn to ``queue`` from a throwaway AUTO session; returns the message ids."""
    session = await conn.create_session(AckMode.AUTO)
    producer = await session.create_producer(queue)
    ids = [await producer.send(f"m{i}", **kw) for i in range(1, n + 1)]
    await session.close()
    return ids


async def take(consumer: Any, n: int = 100) -> list[ReceivedMessage]:
    """Whatever ``consumer`` can hand out without waiting, up to ``n`` messages."""
    out = []
    for _ in range(n):
        msg = await consumer.receive(timeout=0)
        if msg is None:
            break
        out.append(msg)
    return out
