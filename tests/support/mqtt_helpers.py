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


def _mqtt_string(data: bytes) -> bytes:
    return len(data).to_bytes(2, "big") + data


def _remaining_length(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


class RawMqtt:
    """A hand-driven MQTT 3.1.1 client on a plain socket, for what paho-mqtt will not do in a test (leave a PUBLISH
    unacknowledged, fall silent past its keep-alive, send a filter it refuses) or does not show (CONNACK's session
    present flag)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._packet_id = 0

    @classmethod
    async def connect(
        cls,
        port: int,
        client_id: str,
        *,
        clean_session: bool = True,
        keepalive: int = 0,
        will: tuple[str, bytes, int] | None = None,
    ) -> tuple[RawMqtt, dict[str, Any]]:
        """Connect; the client and what came back: ``{"code": ..., "session_present": ...}`` or ``{"closed": True}``."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        self = cls(reader, writer)
        flags = 0x02 if clean_session else 0
        payload = _mqtt_string(client_id.encode())
        if will is not None:
            topic, message, qos = will
            flags |= 0x04 | (qos << 3)
            payload += _mqtt_string(topic.encode()) + _mqtt_string(message)
        body = _mqtt_string(b"MQTT") + bytes([4, flags]) + keepalive.to_bytes(2, "big") + payload
        await self._send(0x10, body)
        packet = await self.read_packet()
        if packet is None or packet[0] != 0x20:
            return self, {"closed": True}
        return self, {"code": packet[1][1], "session_present": bool(packet[1][0] & 1)}

    async def _send(self, first: int, body: bytes) -> None:
        self.writer.write(bytes([first]) + _remaining_length(len(body)) + body)
        await self.writer.drain()

    async def read_packet(self, timeout: float = TIMEOUT) -> tuple[int, bytes] | None:
        """The next packet's first byte and body; None when the socket closed or nothing came in time."""
        try:
            first = await asyncio.wait_for(self.reader.readexactly(1), timeout)
            length, shift = 0, 0
            while True:
                byte = (await asyncio.wait_for(self.reader.readexactly(1), timeout))[0]
                length |= (byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            return first[0], await asyncio.wait_for(self.reader.readexactly(length), timeout)
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            return None

    async def subscribe(self, topic_filter: str, qos: int) -> list[int] | str:
        """SUBSCRIBE one filter: the SUBACK's return codes, or what happened instead."""
        self._packet_id += 1
        await self._send(0x82, self._packet_id.to_bytes(2, "big") + _mqtt_string(topic_filter.encode()) + bytes([qos]))
        packet = await self.read_packet()
        if packet is None:
            return "closed"
        if packet[0] != 0x90:
            return f"packet 0x{packet[0]:02x}"
        return list(packet[1][2:])

    async def next_publish(self, timeout: float = TIMEOUT) -> dict[str, Any] | None:
        """The next PUBLISH, not acknowledged: topic, payload, QoS, dup and retain flags."""
        packet = await self.read_packet(timeout)
        while packet is not None and packet[0] >> 4 != 3:
            packet = await self.read_packet(timeout)
        if packet is None:
            return None
        first, body = packet
        qos = (first >> 1) & 3
        n = int.from_bytes(body[:2], "big")
        topic = body[2 : 2 + n].decode()
        payload = body[2 + n + (2 if qos else 0) :]
        return {
            "topic": topic,
            "payload": payload.decode(),
            "qos": qos,
            "dup": bool(first & 8),
            "retain": bool(first & 1),
        }

    def close(self) -> None:
        """Close the socket without DISCONNECT."""
        self.writer.close()
