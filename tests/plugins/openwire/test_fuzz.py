"""Hostile bytes: the real client's frames, mutated (seeded, so every run is the same), through the decoder and a
logged-in converter. The decoder refuses with OpenWireFormatError (or FrameTooLarge) and nothing else; whatever
decodes, the converter answers (a Response, an ExceptionResponse, a ConnectionError) without raising: a bug would
reach the listener as an internal error."""

from __future__ import annotations

import random
from pathlib import Path

from minibroker import Broker
from minibroker.errors import RemoteProtocolError
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire.codec import OpenWireDecoder
from minibroker.plugins.openwire.converter import OpenWireConverter
from minibroker.plugins.openwire.primitives import marshal_primitive_map

FRAMES = [
    bytes.fromhex(line.split()[1]) for line in Path(__file__).with_name("frames.txt").read_text().splitlines() if line
]
MUTATIONS = 4000


def mutate(rng: random.Random, frame: bytes) -> bytes:
    data = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        choice = rng.random()
        at = rng.randrange(4, len(data)) if len(data) > 4 else 4
        if choice < 0.5 and at < len(data):
            data[at] = rng.randrange(256)
        elif choice < 0.7:
            del data[at : at + rng.randint(1, 8)]
        elif choice < 0.9:
            data[at:at] = rng.randbytes(rng.randint(1, 8))
        else:
            data[at : at + 1] = b"\x01"  # a present flag where there was none, or a boolean turned on
    data[0:4] = (len(data) - 4).to_bytes(4, "big")  # a consistent size: the body is what is hostile
    return bytes(data)


async def test_mutated_frames_are_refused_or_answered() -> None:
    rng = random.Random(44)
    decoded = refused = 0
    async with Broker() as broker:
        converter = login(broker)
        for n in range(MUTATIONS):
            decoder = OpenWireDecoder()
            decoder.receive_data(mutate(rng, rng.choice(FRAMES)))
            try:
                command = decoder.next_command()
            except RemoteProtocolError:
                refused += 1
                continue
            if command is None:
                continue
            decoded += 1
            converter.receive(command)  # never raises
            converter.take_commands()
            if converter.close_after_output or converter.closed or n % 200 == 0:
                converter.connection_lost()
                converter = login(broker)
        converter.connection_lost()
    assert decoded > 500 and refused > 500, (decoded, refused)


def login(broker: Broker) -> OpenWireConverter:
    converter = OpenWireConverter(broker)
    converter.receive(ow.WireFormatInfo(version=12, marshalled_properties=marshal_primitive_map({})))
    connection = ow.ConnectionId("ID:host-40000-1700000000000-0:1")  # the frames' connection
    converter.receive(ow.ConnectionInfo(1, True, connection))
    converter.receive(ow.SessionInfo(2, False, ow.SessionId(connection.value, 1)))
    converter.take_commands()
    assert converter.connection is not None
    return converter
