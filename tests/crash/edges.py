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
from urllib.parse import urlsplit

import attrs
import paho.mqtt.client as mqtt
from support.stomp_helpers import RawStompClient

from minibroker.client import AckMode, Connection, Consumer, Producer, ReceivedMessage, Session, connect
from minibroker.message import Destination, Message

__all__ = [
    "Got",
    "Inbox",
    "MqttClient",
    "MqttInbox",
    "MqttProducer",
    "NativeBulk",
    "NativeInbox",
    "NativeProducer",
    "OutBox",
    "StompInbox",
    "StompProducer",
]

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
    #: the broker took it as acked when it sent it (an MQTT QoS 0 delivery): nothing to ack, nothing to come back
    acked: bool = False
    #: the dispatch's broker sequence id, where the edge tells it (native): what decides, when its consumer closes
    #: without acking it, whether it comes back marked redelivered (checker.py, "repeats")
    broker_seq: int | None = None


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
    #: a rollback sends the transaction's messages again (native); False: the edge never rolls back an ack (STOMP's
    #: ABORT keeps them delivered and unacked, as ActiveMQ does, which the actors do not model)
    rolls_back = True

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
        """A producer of ``destination`` (``topic://NAME`` or a queue's name) on a connection of its own."""
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
            if self.conn.closed:
                raise ConnectionError("the connection is closed")
            return None
        return Got(_text(msg.body), msg.redelivered, msg, broker_seq=msg.broker_seq)

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


@attrs.define(slots=True, eq=False)
class NativeBulk:
    """Many messages in one request (``Connection.publish``): the broker stores the batch before it answers, so the
    return confirms every message of it. What fills a topic's log or a queue past a page in a few seconds."""

    conn: Connection
    destination: Destination
    producer: str

    @classmethod
    async def open(cls, url: str, destination: str, producer: str) -> NativeBulk:
        return cls(await connect(url), Destination.parse(destination), producer)

    async def publish(self, bodies: list[tuple[int, str]]) -> None:
        messages = [
            Message(
                f"ID:{self.producer}-1:1:1:1:{seq}", self.destination, body, producer_id=self.producer, producer_seq=seq
            )
            for seq, body in bodies
        ]
        await self.conn.publish(messages)

    async def close(self) -> None:
        await _close_quietly(self.conn)


async def _close_quietly(conn: Connection) -> None:
    try:
        await asyncio.wait_for(conn.close(), 5.0)
    except Exception:
        pass  # the broker is gone: nothing to close


# -- STOMP ----------------------------------------------------------------------------------------------------------


def stomp_destination(destination: str) -> str:
    """A native destination name as STOMP spells it."""
    if destination.startswith("topic://"):
        return "/topic/" + destination.removeprefix("topic://")
    return "/queue/" + destination


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None, url
    return port


STOMP_MODES = {"auto": "auto", "client": "client", "individual": "client-individual", "transacted": "client-individual"}
_transactions = itertools.count(1)


async def _stomp_request(client: RawStompClient, command: str, headers: Mapping[str, str], body: str = "") -> None:
    frame = await client.request(command, headers, body, timeout=10.0)
    if frame.command != "RECEIPT":
        raise ConnectionError(f"STOMP {command} answered {frame.command}: {frame.headers} {frame.body!r}")


async def _stomp_close(client: RawStompClient) -> None:
    try:
        await asyncio.wait_for(_stomp_request(client, "DISCONNECT", {}), 2.0)
    except Exception:
        pass  # the broker is gone
    client.writer.close()


@attrs.define(slots=True, eq=False)
class StompProducer(OutBox):
    """SENDs with a receipt each (persistent); in a transaction, BEGIN, SENDs, and a COMMIT (or ABORT) with a
    receipt."""

    client: RawStompClient
    destination: str
    transacted: bool
    tx: str | None = None

    @classmethod
    async def open(cls, url: str, destination: str, *, transacted: bool) -> StompProducer:
        client = await RawStompClient.open(_port(url))
        if client.connected is None:
            raise ConnectionError("STOMP CONNECT refused")
        return cls(client, stomp_destination(destination), transacted)

    async def send(self, body: str, properties: Mapping[str, Any] | None = None) -> None:
        headers = {"destination": self.destination, "persistent": "true"}
        headers.update({k: str(v) for k, v in (properties or {}).items()})
        if self.transacted:
            if self.tx is None:
                self.tx = f"ptx-{next(_transactions)}"
                self.client.send_frame("BEGIN", {"transaction": self.tx})
            headers["transaction"] = self.tx
        await _stomp_request(self.client, "SEND", headers, body)

    async def commit(self) -> None:
        tx, self.tx = self.tx, None
        if tx is not None:
            await _stomp_request(self.client, "COMMIT", {"transaction": tx})

    async def rollback(self) -> None:
        tx, self.tx = self.tx, None
        if tx is not None:
            await _stomp_request(self.client, "ABORT", {"transaction": tx})

    async def close(self) -> None:
        await _stomp_close(self.client)


@attrs.define(slots=True, eq=False)
class StompInbox(Inbox):
    """A subscription in one of STOMP's ack modes (``client-individual`` for transactions, with ACKs inside the
    transaction); a durable subscription with ``activemq.subscriptionName`` and CONNECT's ``client-id``."""

    client: RawStompClient
    mode: str
    tx: str | None = None
    rolls_back = False

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
    ) -> StompInbox:
        connect_headers = {"client_id": client_id} if client_id else {}
        client = await RawStompClient.open(_port(url), **connect_headers)
        if client.connected is None:
            raise ConnectionError("STOMP CONNECT refused")
        headers = {
            "destination": stomp_destination(destination),
            "id": "1",
            "ack": STOMP_MODES[mode],
            "activemq.prefetchSize": str(prefetch),
        }
        if subscription is not None:
            headers["activemq.subscriptionName"] = subscription
        try:
            await _stomp_request(client, "SUBSCRIBE", headers)
        except BaseException:
            client.writer.close()
            raise
        return cls(client, mode)

    async def receive(self, timeout: float) -> Got | None:
        try:
            frame = await self.client.message(timeout)
        except TimeoutError:
            return None
        got = Got(frame.body.decode(), frame.headers.get("redelivered") == "true", frame.headers.get("ack"))
        if self.mode == "transacted":
            self._ack(got)  # taken inside the open transaction, as a JMS transacted session takes it
        return got

    def _ack(self, got: Got) -> None:
        headers = {"id": got.handle}
        if self.mode == "transacted":
            if self.tx is None:
                self.tx = f"ctx-{next(_transactions)}"
                self.client.send_frame("BEGIN", {"transaction": self.tx})
            headers["transaction"] = self.tx
        self.client.send_frame("ACK", headers)

    async def ack(self, gots: list[Got]) -> None:
        if self.mode == "client" and gots:
            self._ack(gots[-1])  # cumulative: every message of the subscription up to this one
        elif self.mode == "individual":
            for got in gots:
                self._ack(got)

    async def commit(self) -> None:
        tx, self.tx = self.tx, None
        if tx is not None:
            await _stomp_request(self.client, "COMMIT", {"transaction": tx})

    async def rollback(self) -> None:
        raise AssertionError("STOMP consumers never roll back (rolls_back is False)")

    async def fence(self) -> None:
        await self.client.barrier()

    async def close(self) -> None:
        await _stomp_close(self.client)


# -- MQTT -----------------------------------------------------------------------------------------------------------


class MqttClient:
    """paho-mqtt (a thread of its own) seen from the event loop: CONNACK, SUBACK and PUBACK as futures, PUBLISHes in
    a queue, manual PUBACKs (so an ack is sent when the actor says, and fenced like any other), no reconnects (a
    kill is the end of the connection, as for the other edges)."""

    def __init__(self, client_id: str, clean: bool) -> None:
        self.loop = asyncio.get_running_loop()
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=client_id,
            clean_session=clean,
            reconnect_on_failure=False,
            manual_ack=True,
        )
        self.inbox: asyncio.Queue[mqtt.MQTTMessage] = asyncio.Queue()
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.connected: asyncio.Future[int] = self.loop.create_future()
        self.gone = asyncio.Event()
        self.client.on_connect = self._on_connect
        self.client.on_message = lambda c, u, m: self.loop.call_soon_threadsafe(self.inbox.put_nowait, m)
        self.client.on_publish = lambda c, u, mid, rc, p: self.loop.call_soon_threadsafe(self._settle, mid, rc)
        self.client.on_subscribe = lambda c, u, mid, rcs, p: self.loop.call_soon_threadsafe(self._settle, mid, rcs)
        self.client.on_disconnect = lambda c, u, f, rc, p: self.loop.call_soon_threadsafe(self._on_gone, rc)
        self.why = ""

    @classmethod
    async def open(cls, url: str, client_id: str, *, clean: bool) -> MqttClient:
        self = cls(client_id, clean)
        await asyncio.to_thread(self.client.connect, "127.0.0.1", _port(url), 60)
        self.client.loop_start()
        try:
            code = await asyncio.wait_for(self.connected, 10.0)
        except BaseException:
            self.close()
            raise
        if code != 0:
            self.close()
            raise ConnectionError(f"MQTT CONNACK {code}")
        return self

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        code = reason.value if hasattr(reason, "value") else int(reason)
        self.loop.call_soon_threadsafe(lambda: self.connected.done() or self.connected.set_result(code))

    def _settle(self, mid: int, value: Any) -> None:
        future = self.waiting.pop(mid, None)
        if future is not None and not future.done():
            future.set_result(value)

    def _on_gone(self, reason: Any) -> None:
        self.gone.set()
        self.why = str(reason)
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(ConnectionError(f"MQTT connection lost: {reason}"))
        self.waiting.clear()

    async def _wait(self, result: int, mid: int) -> Any:
        if result != mqtt.MQTT_ERR_SUCCESS or self.gone.is_set():
            raise ConnectionError(f"MQTT not connected ({result})")
        future = self.waiting[mid] = self.loop.create_future()
        return await asyncio.wait_for(future, 10.0)

    async def publish(self, topic: str, payload: str, *, retain: bool = False) -> None:
        """QoS 1: returns once the broker's PUBACK is in."""
        info = self.client.publish(topic, payload.encode(), 1, retain)
        await self._wait(info.rc, info.mid)

    async def subscribe(self, topic: str) -> None:
        result, mid = self.client.subscribe(topic, 1)
        codes = await self._wait(result, mid)
        if any((c.value if hasattr(c, "value") else int(c)) >= 0x80 for c in codes):
            raise ConnectionError(f"SUBSCRIBE {topic} refused: {codes}")

    async def next(self, timeout: float) -> mqtt.MQTTMessage | None:
        if self.inbox.empty() and self.gone.is_set():
            raise ConnectionError(f"MQTT connection lost: {self.why}")
        try:
            return await asyncio.wait_for(self.inbox.get(), timeout)
        except TimeoutError:
            return None

    def close(self) -> None:
        if not self.gone.is_set():
            self.client.disconnect()
        self.client.loop_stop()


@attrs.define(slots=True, eq=False)
class MqttProducer(OutBox):
    client: MqttClient
    topic: str

    @classmethod
    async def open(cls, url: str, topic: str, client_id: str) -> MqttProducer:
        return cls(await MqttClient.open(url, client_id, clean=True), topic)

    async def send(self, body: str, properties: Mapping[str, Any] | None = None) -> None:
        await self.client.publish(self.topic, body)

    async def commit(self) -> None:
        raise AssertionError("MQTT has no transactions")

    async def rollback(self) -> None:
        raise AssertionError("MQTT has no transactions")

    async def close(self) -> None:
        self.client.close()


@attrs.define(slots=True, eq=False)
class MqttInbox(Inbox):
    """A persistent session (clean session 0) subscribed at QoS 1; ``auto`` PUBACKs each message as it is taken,
    ``individual`` when the actor acks it. The fence is a QoS 1 publish of its own."""

    client: MqttClient
    mode: str

    @classmethod
    async def open(cls, url: str, topic: str, mode: str, client_id: str) -> MqttInbox:
        client = await MqttClient.open(url, client_id, clean=False)
        try:
            await client.subscribe(topic)
        except BaseException:
            client.close()
            raise
        return cls(client, mode)

    async def receive(self, timeout: float) -> Got | None:
        msg = await self.client.next(timeout)
        if msg is None:
            return None
        if msg.qos == 0:  # the broker acked it as it sent it
            return Got(msg.payload.decode(), bool(msg.dup), None, acked=True)
        if self.mode == "auto":
            self.client.client.ack(msg.mid, 1)
        return Got(msg.payload.decode(), bool(msg.dup), msg.mid)

    async def ack(self, gots: list[Got]) -> None:
        if self.mode != "auto":
            for got in gots:
                if not got.acked:
                    self.client.client.ack(got.handle, 1)

    async def commit(self) -> None:
        raise AssertionError("MQTT has no transactions")

    async def rollback(self) -> None:
        raise AssertionError("MQTT has no transactions")

    async def fence(self) -> None:
        await self.client.publish("crash/fence", "fence")

    async def close(self) -> None:
        self.client.close()
