"""The three edges as the crash actors use them: a producer that says when a send is confirmed, and an inbox that
receives, acks in one of four modes, and proves its acks arrived.

Acks are one-way on every edge (native, STOMP, MQTT), so an ack is only *sent* when the call returns. Each inbox has
a ``fence()``: a round trip on the same connection, behind the acks. The broker reads a connection's frames in
order and writes the store before it answers, so once the fence's answer is back every ack before it is on disk:
that is when the ledger calls an ack confirmed.

What is confirmed where:

* native: a persistent send outside a transaction returns once stored; ``commit()`` returns once committed; the
  fence is a queue-statistics request.
* STOMP: every SEND, ACK, COMMIT carries a ``receipt``; a RECEIPT answers it after the broker acted on it.
* MQTT: a QoS 1 PUBLISH is confirmed by its PUBACK; a subscriber acks by hand (paho's manual acks) and fences with a
  QoS 1 publish of its own.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping
from typing import Any

import attrs

from minibroker.client import AckMode, Connection, Consumer, Producer, ReceivedMessage, Session, connect

__all__ = ["Got", "Inbox", "NativeInbox", "NativeProducer", "OutBox"]

NATIVE_MODES = {
    "auto": AckMode.AUTO_ACKNOWLEDGE,
    "client": AckMode.CLIENT_ACKNOWLEDGE,
    "individual": AckMode.INDIVIDUAL_ACKNOWLEDGE,
    "transacted": AckMode.SESSION_TRANSACTED,
}
#: a queue no actor uses: the native fence asks for its statistics
FENCE_QUEUE = "crash.fence"
_names = itertools.count(1)


@attrs.define(slots=True)
class Got:
    """A message an inbox handed out: its body as text, the broker's redelivered flag, the edge's own handle."""

    body: str
    redelivered: bool
    handle: Any = None


def _text(body: object) -> str:
    if isinstance(body, bytes):
        return body.decode()
    assert isinstance(body, str), body
    return body


class OutBox:
    """What a producer actor needs of an edge."""

    async def send(self, body: str, properties: Mapping[str, Any] | None = None) -> None:
        raise NotImplementedError

    async def commit(self) -> None:
        raise NotImplementedError

    async def rollback(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class Inbox:
    """What a consumer or subscriber actor needs of an edge."""

    mode: str

    async def receive(self, timeout: float) -> Got | None:
        raise NotImplementedError

    async def ack(self, gots: list[Got]) -> None:
        """Ack ``gots`` as the mode does: client mode acks everything delivered up to the last of them."""
        raise NotImplementedError

    async def commit(self) -> None:
        raise NotImplementedError

    async def rollback(self) -> None:
        raise NotImplementedError

    async def fence(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


# -- native ---------------------------------------------------------------------------------------------------------


@attrs.define(slots=True, eq=False)
class NativeProducer(OutBox):
    conn: Connection
    session: Session
    producer: Producer

    @classmethod
    async def open(cls, url: str, destination: str, *, transacted: bool) -> NativeProducer:
        conn = await connect(url)
        try:
            mode = AckMode.SESSION_TRANSACTED if transacted else AckMode.AUTO_ACKNOWLEDGE
            session = await conn.create_session(mode)
            return cls(conn, session, await session.create_producer(destination))
        except BaseException:
            await _close_quietly(conn)
            raise

    async def send(self, body: str, properties: Mapping[str, Any] | None = None) -> None:
        await self.producer.send(body, persistent=True, properties=properties)

    async def commit(self) -> None:
        await self.session.commit()

    async def rollback(self) -> None:
        await self.session.rollback()

    async def close(self) -> None:
        await _close_quietly(self.conn)


@attrs.define(slots=True, eq=False)
class NativeInbox(Inbox):
    conn: Connection
    session: Session
    consumer: Consumer
    mode: str

    @classmethod
    async def open(
        cls,
        url: str,
        destination: str,
        mode: str,
        *,
        client_id: str | None = None,
        subscription: str | None = None,
        prefetch: int = 50,
    ) -> NativeInbox:
        conn = await connect(url, client_id=client_id, prefetch=prefetch)
        try:
            session = await conn.create_session(NATIVE_MODES[mode])
            if subscription is not None:
                consumer = await session.create_durable_subscriber(destination, subscription)
            else:
                consumer = await session.create_consumer(destination)
            return cls(conn, session, consumer, mode)
        except BaseException:
            await _close_quietly(conn)
            raise

    async def receive(self, timeout: float) -> Got | None:
        msg = await self.consumer.receive(timeout=timeout)
        if msg is None:
            return None
        return Got(_text(msg.body), msg.redelivered, msg)

    async def ack(self, gots: list[Got]) -> None:
        if self.mode == "client" and gots:
            handle: ReceivedMessage = gots[-1].handle
            await handle.acknowledge()
        elif self.mode == "individual":
            for got in gots:
                await got.handle.acknowledge()

    async def commit(self) -> None:
        await self.session.commit()

    async def rollback(self) -> None:
        await self.session.rollback()

    async def fence(self) -> None:
        # an AUTO ack over TCP goes out at the end of the loop's turn: let it be written before the request
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        await self.conn.queue_statistics(FENCE_QUEUE)

    async def close(self) -> None:
        await _close_quietly(self.conn)


async def _close_quietly(conn: Connection) -> None:
    try:
        await asyncio.wait_for(conn.close(), 5.0)
    except Exception:
        pass  # the broker is gone: nothing to close
