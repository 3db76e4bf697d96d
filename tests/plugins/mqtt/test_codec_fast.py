"""The decoder's fast path for PUBLISH and PUBACK (``_fast_packet``) against the reference parser (``_parse``): for
well-formed packets, near misses and random bytes, the same packet or the same error (issue 45)."""

from __future__ import annotations

import random

import pytest

from minibroker.errors import RemoteProtocolError
from minibroker.plugins.mqtt.codec import MqttDecoder, Packet, _parse, encode_publish

PUBLISH, PUBACK = 3, 4


def packet(first: int, body: bytes) -> bytes:
    length, n = bytearray(), len(body)
    while True:
        digit, n = n % 128, n // 128
        length.append(digit | (128 if n else 0))
        if not n:
            return bytes((first, *length)) + body


def both(data: bytes) -> tuple[Packet | str, Packet | str]:
    """(what the decoder reads, what the reference parser reads) from one whole packet; an error as its text."""
    decoder = MqttDecoder()
    decoder.receive_data(data)
    try:
        fast: Packet | str = decoder.next_packet()  # type: ignore[assignment]
        assert decoder.buffered == 0
    except RemoteProtocolError as exc:
        fast = f"error: {exc}"
    head_end = 1
    while data[head_end] & 128:
        head_end += 1
    try:
        reference: Packet | str = _parse(data[0] >> 4, data[0] & 15, data[head_end + 1 :])
    except RemoteProtocolError as exc:
        reference = f"error: {exc}"
    return fast, reference


def bodies(rng: random.Random) -> bytes:
    """A PUBLISH body (or a PUBACK's): well formed, cut short, a bad length, bad UTF-8, U+0000, or random."""
    topic = rng.choice(["a/b", "", "ü/ß", "\x00", "x" * 200, "sensors/+/t"]).encode()
    if rng.random() < 0.1:
        topic = rng.choice([b"\xff\xfe", b"\xed\xa0\x80", b"a\xc3"])  # not UTF-8 (a surrogate is not either)
    length = len(topic) if rng.random() < 0.8 else rng.randrange(0, 300)
    body = length.to_bytes(2, "big") + topic + rng.randrange(0, 3).to_bytes(2, "big") + rng.randbytes(rng.randrange(5))
    if rng.random() < 0.2:
        body = body[: rng.randrange(len(body) + 1)]
    if rng.random() < 0.05:
        body = rng.randbytes(rng.randrange(6))
    return body


def test_random_publish_and_puback_packets_read_alike() -> None:
    rng = random.Random(45)
    for _ in range(20_000):
        kind = rng.choice((PUBLISH, PUBACK))
        first = (kind << 4) | rng.randrange(16)
        body = rng.randbytes(2) if kind == PUBACK and rng.random() < 0.7 else bodies(rng)
        fast, reference = both(packet(first, body))
        assert fast == reference, (first, fast, reference)


@pytest.mark.parametrize("qos", [0, 1, 2])
@pytest.mark.parametrize("size", [0, 100, 200, 20_000])
def test_the_encoder_and_both_readers_agree(qos: int, size: int) -> None:
    data = encode_publish("a/ü", b"p" * size, qos, True, qos > 0, 9 if qos else None)
    fast, reference = both(data)
    assert fast == reference and not isinstance(fast, str) and fast.payload == b"p" * size  # type: ignore[union-attr]
