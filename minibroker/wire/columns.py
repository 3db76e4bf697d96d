"""The columnar range encoding (RANGE_COLUMNS frames, read by the Spark source): a range read's messages as
Apache Arrow-shaped column buffers, built from messages, encoded, split to fit a frame, and parsed back."""

from __future__ import annotations

import itertools
import struct
import typing
from array import array
from collections.abc import Iterable, Sequence

from .._core.replay import RangeEntry
from ..errors import LocalProtocolError
from ..message import Message, body_as_bytes, string_properties
from .encoders import write_str
from .errors import ENCODE_FAILURES, Malformed, cannot_encode
from .frames import FrameType, RangeColumns
from .layouts import BIG_ENDIAN, LE_I32, LEN, RANGE_COLUMNS, RANGE_RESULT_BODY
from .parsers import U32_UNPACK, done, read_bool, read_str

#: the buffers of a RANGE_COLUMNS frame, in their order on the wire (each a u32 length + bytes, after the epoch)
COLUMN_SECTIONS = (
    "seq",
    "redelivery_counter",
    "priority",
    "timestamp",
    "flags",
    "id_offsets",
    "id_data",
    "body_offsets",
    "body_data",
    "prop_offsets",
    "key_offsets",
    "key_data",
    "value_offsets",
    "value_data",
    "value_nulls",
)


def _le(values: array[int]) -> bytes:
    if BIG_ENDIAN:
        values.byteswap()
    return values.tobytes()


def _offsets(lengths: Iterable[int]) -> bytes:
    # struct.pack of the sums: about 40% fewer instructions than an array built from the iterator
    sums = list(itertools.accumulate(lengths, initial=0))
    return struct.pack(f"<{len(sums)}i", *sums)


#: a message's persistent flag (0 or 1) to its bit in the flags column
_PERSISTENT_BIT = bytes([0]) + bytes([2]) * 255


def range_columns(
    request_id: int,
    epoch: str,
    next_seq: int,
    seqs: Sequence[int],
    messages: Sequence[Message],
    redelivery_counters: Sequence[int],
    last: bool = True,
) -> RangeColumns:
    """The columnar form of a range read's messages (see :class:`RangeColumns`), from parallel lists.

    The Spark source's broker side. Attributes are read by comprehensions (CPython 3.11 specialises a slot's read
    there; ``operator.attrgetter`` costs more), ids are encoded in one call when they are ASCII, bytes bodies joined
    without a check each, and the properties column is built only when a message has one."""
    n = len(messages)
    id_texts = [m.message_id for m in messages]
    joined = "".join(id_texts)
    if joined.isascii():
        id_data = joined.encode("ascii")
        id_lengths: Iterable[int] = map(len, id_texts)
    else:
        ids = [i.encode() for i in id_texts]
        id_data = b"".join(ids)
        id_lengths = map(len, ids)
    raw_bodies = [m.body for m in messages]
    flags = bytes([m.persistent for m in messages]).translate(_PERSISTENT_BIT)
    try:  # bytes bodies only (a text, map, stream or object body is no buffer: TypeError)
        body_data = b"".join(typing.cast(list[bytes], raw_bodies))
        bodies = typing.cast(list[bytes], raw_bodies)
    except TypeError:
        flags = bytes(f | (type(b) is str) for f, b in zip(flags, raw_bodies, strict=True))
        bodies = [b if type(b) is bytes else body_as_bytes(b) for b in raw_bodies]
        body_data = b"".join(bodies)
    keys: list[bytes] = []
    values: list[bytes] = []
    nulls = bytearray()
    with_properties = [
        m
        for m in messages
        if m.properties
        or m.correlation_id is not None
        or m.type is not None
        or m.reply_to is not None
        or (m.group_id is not None)
    ]
    if with_properties:
        chosen = set(map(id, with_properties))
        prop_counts: list[int] = []
        for m in messages:
            if id(m) in chosen:
                pairs = string_properties(m)
                for k, v in pairs:
                    keys.append(k.encode())
                    values.append(b"" if v is None else v.encode())
                    nulls.append(v is None)
                prop_counts.append(len(pairs))
            else:
                prop_counts.append(0)
        prop_offsets = _offsets(prop_counts)
    else:
        prop_offsets = bytes(4 * (n + 1))
    return RangeColumns(
        request_id,
        epoch,
        next_seq,
        n,
        seq=_le(array("q", seqs)),
        redelivery_counter=_le(array("i", redelivery_counters)),
        priority=_le(array("i", [m.priority for m in messages])),
        timestamp=_le(array("q", [round(m.timestamp * 1_000_000) for m in messages])),
        flags=flags,
        id_offsets=_offsets(id_lengths),
        id_data=id_data,
        body_offsets=_offsets(map(len, bodies)),
        body_data=body_data,
        prop_offsets=prop_offsets,
        key_offsets=_offsets(map(len, keys)),
        key_data=b"".join(keys),
        value_offsets=_offsets(map(len, values)),
        value_data=b"".join(values),
        value_nulls=bytes(nulls),
        last=last,
    )


def range_columns_of(
    request_id: int, epoch: str, next_seq: int, entries: Sequence[RangeEntry], last: bool = True
) -> RangeColumns:
    """:func:`range_columns` of ``(seq, message, redelivery_counter)`` entries."""
    return range_columns(
        request_id, epoch, next_seq, [e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries], last
    )


def encode_range_columns(frame: RangeColumns) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_str(frame.epoch, parts)
        for name in COLUMN_SECTIONS:
            section: bytes = getattr(frame, name)
            parts.append(LEN.pack(len(section)))
            parts.append(section)
            size += 4 + len(section)
        parts[0] = RANGE_COLUMNS.pack(
            RANGE_COLUMNS.size - 4 + size,
            FrameType.RANGE_COLUMNS,
            frame.request_id,
            1 if frame.last else 0,
            frame.next_seq,
            frame.count,
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("RANGE_COLUMNS", exc)


def encode_range_columns_results(
    request_id: int,
    epoch: str,
    next_seq: int,
    seqs: Sequence[int],
    messages: Sequence[Message],
    redelivery_counters: Sequence[int],
    max_frame_size: int,
) -> list[bytes]:
    """A columnar range read's answer as RANGE_COLUMNS frames of at most ``max_frame_size`` bytes each (the messages
    are halved until each part fits)."""
    frames: list[bytes] = []

    def add(lo: int, hi: int, last: bool) -> None:
        frame = encode_range_columns(
            range_columns(request_id, epoch, next_seq, seqs[lo:hi], messages[lo:hi], redelivery_counters[lo:hi], last)
        )
        if len(frame) - 4 <= max_frame_size:
            frames.append(frame)
        elif hi - lo == 1:
            raise LocalProtocolError(
                f"message {messages[lo].message_id} ({len(frame)} bytes) does not fit in a "
                f"frame of {max_frame_size} bytes",
                size=len(frame),
                maximum=max_frame_size,
            )
        else:
            mid = (lo + hi) // 2
            add(lo, mid, False)
            add(mid, hi, last)

    add(0, len(messages), True)
    return frames


def parse_range_columns(_parser: object, frame: bytes) -> RangeColumns:
    """A RANGE_COLUMNS frame (``frame`` starts with the type byte), every buffer's size and offsets ends checked
    (the parser of its table row: it needs nothing a :class:`~minibroker.wire.parsers.FrameParser` remembers)."""
    request_id, last, next_seq, count = RANGE_RESULT_BODY.unpack_from(frame, 1)
    epoch, pos = read_str(frame, 1 + RANGE_RESULT_BODY.size, "epoch")
    sections: dict[str, bytes] = {}
    for name in COLUMN_SECTIONS:
        (n,) = U32_UNPACK(frame, pos)
        pos += 4
        end = pos + n
        if end > len(frame):
            raise Malformed(f"column {name} is truncated: {n} bytes announced, {len(frame) - pos} left")
        sections[name] = frame[pos:end]
        pos = end
    done(frame, pos)
    if len(sections["key_offsets"]) < 4 or len(sections["key_offsets"]) % 4:
        raise Malformed("column key_offsets is not a list of offsets")
    nprops = len(sections["key_offsets"]) // 4 - 1
    expected = {
        "seq": 8 * count,
        "redelivery_counter": 4 * count,
        "priority": 4 * count,
        "timestamp": 8 * count,
        "flags": count,
        "id_offsets": 4 * (count + 1),
        "body_offsets": 4 * (count + 1),
        "prop_offsets": 4 * (count + 1),
        "value_offsets": 4 * (nprops + 1),
        "value_nulls": nprops,
    }
    for name, size in expected.items():
        if len(sections[name]) != size:
            raise Malformed(f"column {name} holds {len(sections[name])} bytes, {size} expected for {count} messages")
    for offsets, data, total in (
        ("id_offsets", "id_data", 0),
        ("body_offsets", "body_data", 0),
        ("prop_offsets", "", nprops),
        ("key_offsets", "key_data", 0),
        ("value_offsets", "value_data", 0),
    ):
        raw = sections[offsets]
        first = LE_I32.unpack_from(raw, 0)[0]
        final = LE_I32.unpack_from(raw, len(raw) - 4)[0]
        want = len(sections[data]) if data else total
        if first != 0 or final != want:
            raise Malformed(f"column {offsets} runs from {first} to {final}, not from 0 to {want}")
    return RangeColumns(request_id, epoch, next_seq, count, **sections, last=read_bool(last, "the last flag"))
