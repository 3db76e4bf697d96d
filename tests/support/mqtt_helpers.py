"""paho-mqtt (a threaded client) driven from asyncio tests: each callback is handed to the test's event loop, and
every wait is on an event with a timeout."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import paho.mqtt.client as mqtt

TIMEOUT = 10.0


@attrs.frozen
class Received:
    topic: str
    payload: bytes
    qos: int
    retain: bool
    dup: bool


class Paho:
    """One paho-mqtt client; ``await Paho.connect(port, "id")``, then ``subscribe``/``publish``/``next``."""

    def __init__(self, client_id: str, clean_session: bool, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id, clean_session=clean_session)
        self.messages: asyncio.Queue[Received] = asyncio.Queue()
        self._connected: asyncio.Future[int] = loop.create_future()
        self._acks: dict[int, asyncio.Future[Any]] = {}
        self.disconnected = asyncio.Event()
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self.client.on_subscribe = self._on_subscribe
        self.client.on_unsubscribe = self._on_unsubscribe
        self.client.on_disconnect = lambda *a: loop.call_soon_threadsafe(self.disconnected.set)

    @classmethod
    async def connect(
        cls,
        port: int,
        client_id: str = "",
        *,
        clean_session: bool = True,
        keepalive: int = 0,
        username: str | None = None,
        password: str | None = None,
        will: tuple[str, bytes, int, bool] | None = None,
        tls_ca: str | None = None,
    ) -> Paho:
        """Connect and wait for CONNACK; ``.return_code`` is its code (0: accepted)."""
        self = cls(client_id, clean_session, asyncio.get_running_loop())
        if username is not None:
            self.client.username_pw_set(username, password)
        if will is not None:
            self.client.will_set(*will)
        if tls_ca is not None:
            self.client.tls_set(ca_certs=tls_ca)
        # in a thread: a TLS handshake would block the event loop the broker answers on
        await asyncio.to_thread(self.client.connect, "127.0.0.1", port, keepalive)
        self.client.loop_start()
        self.return_code = await asyncio.wait_for(self._connected, TIMEOUT)
        return self

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        code = reason.value if hasattr(reason, "value") else int(reason)
        self.reason = str(reason)  # paho 2 names a 3.1.1 CONNACK code as MQTT 5 does ("Not authorized")
        self.loop.call_soon_threadsafe(lambda: self._connected.done() or self._connected.set_result(code))

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        item = Received(message.topic, message.payload, message.qos, bool(message.retain), bool(message.dup))
        self.loop.call_soon_threadsafe(self.messages.put_nowait, item)

    def _settle(self, mid: int, value: Any) -> None:
        future = self._acks.get(mid)
        if future is not None and not future.done():
            future.set_result(value)

    def _on_subscribe(self, client: Any, userdata: Any, mid: int, reasons: Any, properties: Any) -> None:
        codes = [r.value if hasattr(r, "value") else int(r) for r in reasons]
        self.loop.call_soon_threadsafe(self._settle, mid, codes)

    def _on_unsubscribe(self, client: Any, userdata: Any, mid: int, reasons: Any, properties: Any) -> None:
        self.loop.call_soon_threadsafe(self._settle, mid, None)

    async def subscribe(self, topic: str, qos: int = 0) -> list[int]:
        """Subscribe and wait for SUBACK: the granted QoS (128: refused)."""
        future = self.loop.create_future()
        result, mid = self.client.subscribe(topic, qos)
        assert result == mqtt.MQTT_ERR_SUCCESS
        self._acks[mid] = future
        codes: list[int] = await asyncio.wait_for(future, TIMEOUT)
        return codes

    async def unsubscribe(self, topic: str) -> None:
        future = self.loop.create_future()
        _, mid = self.client.unsubscribe(topic)
        self._acks[mid] = future
        await asyncio.wait_for(future, TIMEOUT)

    async def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> None:
        """Publish and, for QoS 1 and 2, wait until the broker has answered (PUBACK, PUBCOMP)."""
        info = self.client.publish(topic, payload, qos, retain)
        await asyncio.to_thread(info.wait_for_publish, TIMEOUT)

    async def next(self, timeout: float = TIMEOUT) -> Received:
        return await asyncio.wait_for(self.messages.get(), timeout)

    async def disconnect(self) -> None:
        self.client.disconnect()
        await asyncio.wait_for(self.disconnected.wait(), TIMEOUT)
        self.client.loop_stop()

    def drop(self) -> None:
        """Break the socket without DISCONNECT (the broker then publishes the will)."""
        self.client.loop_stop()
        sock = self.client.socket()
        if sock is not None:
            sock.close()
