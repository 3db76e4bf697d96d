"""MQTT 3.1 / 3.1.1 packets, sans I/O: bytes in, packets out (:class:`MqttDecoder`), packets to bytes (``encode_*``).

Only what a broker reads and writes: it decodes what clients send (CONNECT, PUBLISH, PUBACK, PUBREC, PUBREL,
PUBCOMP, SUBSCRIBE, UNSUBSCRIBE, PINGREQ, DISCONNECT) and encodes what it answers. A malformed packet raises
:class:`~minibroker.errors.RemoteProtocolError`, after which the connection is closed (MQTT has no error packet).
"""

from __future__ import annotations

import struct

import attrs

from minibroker._java.utf8 import java_utf8
from minibroker.errors import FrameTooLarge, RemoteProtocolError

__all__ = [
    "Connect",
    "Disconnect",
    "MqttDecoder",
    "Packet",
    "PingReq",
    "PubAck",
    "PubComp",
    "PubRec",
    "PubRel",
    "Publish",
    "Subscribe",
    "Unsubscribe",
    "encode_connack",
    "encode_pingresp",
    "encode_puback",
    "encode_pubcomp",
    "encode_publish",
    "encode_publish_to",
    "encode_pubrec",
    "encode_pubrel",
    "encode_suback",
    "encode_topic",
    "encode_unsuback",
]

CONNECT, CONNACK, PUBLISH, PUBACK, PUBREC, PUBREL, PUBCOMP = 1, 2, 3, 4, 5, 6, 7
SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK, PINGREQ, PINGRESP, DISCONNECT = 8, 9, 10, 11, 12, 13, 14

#: the largest remaining length MQTT can express (four length bytes)
MAX_REMAINING = 268_435_455
_U16 = struct.Struct(">H")


@attrs.frozen(slots=True)
class Connect:
    protocol_name: str
    protocol_level: int
    client_id: str
    clean_session: bool
    keep_alive: int
    will_topic: str | None = None
    will_message: bytes | None = None
    will_qos: int = 0
    will_retain: bool = False
    username: str | None = None
    password: bytes | None = None


@attrs.frozen(slots=True)
class Publish:
    topic: str
    payload: bytes
    qos: int = 0
    retain: bool = False
    dup: bool = False
    packet_id: int | None = None


@attrs.frozen(slots=True)
class PubAck:
    packet_id: int


@attrs.frozen(slots=True)
class PubRec:
    packet_id: int


@attrs.frozen(slots=True)
class PubRel:
    packet_id: int


@attrs.frozen(slots=True)
class PubComp:
    packet_id: int


@attrs.frozen(slots=True)
class Subscribe:
    packet_id: int
    #: (topic filter, requested QoS) in the packet's order
    topics: tuple[tuple[str, int], ...]


@attrs.frozen(slots=True)
class Unsubscribe:
    packet_id: int
    topics: tuple[str, ...]


@attrs.frozen(slots=True)
class PingReq:
    pass


@attrs.frozen(slots=True)
class Disconnect:
    pass


Packet = Connect | Publish | PubAck | PubRec | PubRel | PubComp | Subscribe | Unsubscribe | PingReq | Disconnect


class _Reader:
    """Reads the fields of one packet's variable header and payload, refusing to read past its end."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise RemoteProtocolError("MQTT packet truncated")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def u16(self) -> int:
        if self.pos + 2 > len(self.data):
            raise RemoteProtocolError("MQTT packet truncated")
        value: int = _U16.unpack_from(self.data, self.pos)[0]
        self.pos += 2
        return value

    def blob(self) -> bytes:
        n = self.u16()
        if self.pos + n > len(self.data):
            raise RemoteProtocolError("MQTT packet truncated")
        value = self.data[self.pos : self.pos + n]
        self.pos += n
        return value

    def text(self) -> str:
        raw = self.blob()
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise RemoteProtocolError("MQTT string is not valid UTF-8") from None
        if "\x00" in value:
            raise RemoteProtocolError("MQTT string holds U+0000")
        return value

    def rest(self) -> bytes:
        value = self.data[self.pos :]
        self.pos = len(self.data)
        return value


def _packet_id(reader: _Reader) -> int:
    value = reader.u16()
    if value == 0:
        raise RemoteProtocolError("MQTT packet identifier 0")
    return value


def _parse(kind: int, flags: int, body: bytes) -> Packet:
    r = _Reader(body)
    if kind == PUBLISH:
        qos = (flags >> 1) & 3
        if qos == 3:
            raise RemoteProtocolError("PUBLISH with QoS 3")
        topic = r.text()
        packet_id = _packet_id(r) if qos else None
        return Publish(topic, r.rest(), qos, bool(flags & 1), bool(flags & 8), packet_id)
    if kind in (PUBACK, PUBREC, PUBCOMP, PUBREL):
        if kind == PUBREL and flags != 2:
            raise RemoteProtocolError("PUBREL with reserved flags other than 0010")
        packet_id = _packet_id(r)
        if kind == PUBACK:
            return PubAck(packet_id)
        if kind == PUBREC:
            return PubRec(packet_id)
        if kind == PUBCOMP:
            return PubComp(packet_id)
        return PubRel(packet_id)
    if kind == SUBSCRIBE:
        if flags != 2:
            raise RemoteProtocolError("SUBSCRIBE with reserved flags other than 0010")
        packet_id = _packet_id(r)
        topics = []
        while r.left():
            topic = r.text()
            qos = r.byte()
            if qos & ~3 or qos == 3:
                raise RemoteProtocolError(f"SUBSCRIBE with requested QoS byte {qos}")
            topics.append((topic, qos))
        if not topics:
            raise RemoteProtocolError("SUBSCRIBE without a topic filter")
        return Subscribe(packet_id, tuple(topics))
    if kind == UNSUBSCRIBE:
        if flags != 2:
            raise RemoteProtocolError("UNSUBSCRIBE with reserved flags other than 0010")
        packet_id = _packet_id(r)
        names = []
        while r.left():
            names.append(r.text())
        if not names:
            raise RemoteProtocolError("UNSUBSCRIBE without a topic filter")
        return Unsubscribe(packet_id, tuple(names))
    if kind == PINGREQ:
        return PingReq()
    if kind == DISCONNECT:
        return Disconnect()
    if kind == CONNECT:
        return _parse_connect(r)
    raise RemoteProtocolError(f"MQTT packet type {kind} is not one a client sends")


def _parse_connect(r: _Reader) -> Connect:
    name = r.text()
    level = r.byte()
    flags = r.byte()
    if flags & 1:
        raise RemoteProtocolError("CONNECT with the reserved flag set")
    keep_alive = r.u16()
    client_id = r.text()
    will_topic = will_message = None
    will_qos = (flags >> 3) & 3
    if flags & 4:
        will_topic = r.text()
        will_message = r.blob()
    elif will_qos or flags & 32:
        raise RemoteProtocolError("CONNECT with will QoS or retain but no will")
    if will_qos == 3:
        raise RemoteProtocolError("CONNECT with will QoS 3")
    username = r.text() if flags & 128 else None
    password = r.blob() if flags & 64 else None
    return Connect(
        name,
        level,
        client_id,
        bool(flags & 2),
        keep_alive,
        will_topic,
        will_message,
        will_qos,
        bool(flags & 32),
        username,
        password,
    )


def _fast_packet(buf: bytearray, first: int, pos: int, end: int) -> Publish | PubAck | None:
    """A well-formed PUBLISH or PUBACK read straight from the decoder's buffer (``buf[pos:end]`` is its body),
    without the reader object and its calls: about a tenth of the broker's instructions per MQTT message (issue 45).
    None for anything unusual (a short body, bad UTF-8, U+0000, QoS 3, packet id 0): then :func:`_parse`, the
    reference path, reads it and raises its error. ``tests/plugins/mqtt/test_codec_fast.py`` checks both agree."""
    if first >> 4 == PUBACK:
        if end - pos != 2:
            return None
        acked = (buf[pos] << 8) | buf[pos + 1]
        return PubAck(acked) if acked else None
    qos = (first >> 1) & 3
    if qos == 3 or end - pos < 2:
        return None
    topic_end = pos + 2 + ((buf[pos] << 8) | buf[pos + 1])
    payload_at = topic_end + 2 if qos else topic_end
    if payload_at > end:
        return None
    try:
        topic = buf[pos + 2 : topic_end].decode()
    except UnicodeDecodeError:
        return None
    if "\x00" in topic:
        return None
    packet_id = None
    if qos:
        packet_id = (buf[topic_end] << 8) | buf[topic_end + 1]
        if not packet_id:
            return None
    return Publish(topic, bytes(buf[payload_at:end]), qos, bool(first & 1), bool(first & 8), packet_id)


class MqttDecoder:
    """Splits a byte stream into packets. ``max_packet_size`` bounds a packet (remaining length) before it is read
    whole, so a stranger cannot make the broker buffer a huge partial packet."""

    def __init__(self, max_packet_size: int | None = None) -> None:
        self._buffer = bytearray()
        self.max_packet_size = max_packet_size

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def receive_data(self, data: bytes) -> None:
        self._buffer += data

    def next_packet(self) -> Packet | None:
        """The next whole packet, or None until more bytes come."""
        buf = self._buffer
        if len(buf) < 2:
            return None
        remaining = 0
        multiplier = 1
        pos = 1
        while True:
            if pos >= len(buf):
                return None
            digit = buf[pos]
            remaining += (digit & 127) * multiplier
            pos += 1
            if not digit & 128:
                break
            multiplier *= 128
            if pos > 4:
                raise RemoteProtocolError("MQTT remaining length longer than four bytes")
        limit = self.max_packet_size
        if limit is not None and remaining > limit:
            raise FrameTooLarge(f"MQTT packet of {remaining} bytes exceeds the limit of {limit}")
        end = pos + remaining
        if len(buf) < end:
            return None
        first = buf[0]
        kind = first >> 4
        if kind in (PUBLISH, PUBACK):  # the per-message packets: read in place (see _fast_packet)
            packet = _fast_packet(buf, first, pos, end)
            if packet is not None:
                del buf[:end]
                return packet
        body = bytes(buf[pos:end])
        del buf[:end]
        return _parse(kind, first & 15, body)

    def __iter__(self) -> _DecoderIterator:
        return _DecoderIterator(self)


class _DecoderIterator:
    __slots__ = ("decoder",)

    def __init__(self, decoder: MqttDecoder) -> None:
        self.decoder = decoder

    def __iter__(self) -> _DecoderIterator:
        return self

    def __next__(self) -> Packet:
        packet = self.decoder.next_packet()
        if packet is None:
            raise StopIteration
        return packet


def _fixed(first: int, body: bytes) -> bytes:
    n = len(body)
    length = bytearray()
    while True:
        digit = n % 128
        n //= 128
        length.append(digit | (128 if n else 0))
        if not n:
            break
    return bytes((first,)) + bytes(length) + body


def _text(value: str) -> bytes:
    try:
        raw = value.encode()
    except UnicodeEncodeError:  # a lone surrogate (a topic named in process): "?", as Java's encoder writes it
        raw = java_utf8(value)
    return _U16.pack(len(raw)) + raw


def encode_connack(return_code: int, session_present: bool = False) -> bytes:
    return bytes((CONNACK << 4, 2, 1 if session_present else 0, return_code))


def encode_publish(
    topic: str, payload: bytes, qos: int = 0, retain: bool = False, dup: bool = False, packet_id: int | None = None
) -> bytes:
    return encode_publish_to(encode_topic(topic), payload, qos, retain, dup, packet_id)


def encode_topic(topic: str) -> bytes:
    """A topic name as PUBLISH carries it (length and UTF-8): what a session keeps per topic it writes to."""
    return _text(topic)


def encode_publish_to(
    topic: bytes, payload: bytes, qos: int = 0, retain: bool = False, dup: bool = False, packet_id: int | None = None
) -> bytes:
    """:func:`encode_publish` with the topic already encoded (:func:`encode_topic`)."""
    first = 0x30 | (8 if dup else 0) | (qos << 1) | (1 if retain else 0)  # PUBLISH << 4
    if qos:
        assert packet_id is not None
        topic += _U16.pack(packet_id)
    n = len(topic) + len(payload)
    if n < 128:  # one or two length bytes: most packets; _fixed writes any length
        return b"".join((bytes((first, n)), topic, payload))
    if n < 16384:
        return b"".join((bytes((first, (n & 127) | 128, n >> 7)), topic, payload))
    return _fixed(first, topic + payload)


def encode_puback(packet_id: int) -> bytes:
    return bytes((PUBACK << 4, 2)) + _U16.pack(packet_id)


def encode_pubrec(packet_id: int) -> bytes:
    return bytes((PUBREC << 4, 2)) + _U16.pack(packet_id)


def encode_pubrel(packet_id: int) -> bytes:
    return bytes(((PUBREL << 4) | 2, 2)) + _U16.pack(packet_id)


def encode_pubcomp(packet_id: int) -> bytes:
    return bytes((PUBCOMP << 4, 2)) + _U16.pack(packet_id)


def encode_suback(packet_id: int, granted: list[int]) -> bytes:
    return _fixed(SUBACK << 4, _U16.pack(packet_id) + bytes(granted))


def encode_unsuback(packet_id: int) -> bytes:
    return bytes((UNSUBACK << 4, 2)) + _U16.pack(packet_id)


def encode_pingresp() -> bytes:
    return bytes((PINGRESP << 4, 0))


def encode_connect(connect: Connect) -> bytes:
    """A client's CONNECT (for tests and the fuzzer; the broker never sends one)."""
    flags = (2 if connect.clean_session else 0) | (connect.will_qos << 3)
    payload = _text(connect.client_id)
    if connect.will_topic is not None:
        flags |= 4 | (32 if connect.will_retain else 0)
        payload += (
            _text(connect.will_topic) + _U16.pack(len(connect.will_message or b"")) + (connect.will_message or b"")
        )
    if connect.username is not None:
        flags |= 128
        payload += _text(connect.username)
    if connect.password is not None:
        flags |= 64
        payload += _U16.pack(len(connect.password)) + connect.password
    head = _text(connect.protocol_name) + bytes((connect.protocol_level, flags)) + _U16.pack(connect.keep_alive)
    return _fixed(CONNECT << 4, head + payload)
