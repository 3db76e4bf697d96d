"""The replayable reads' frames to bytes (the Spark source's range reads, cursor acks, broker info and batch
publishes: :mod:`minibroker._core.replay`), apart from the JMS-style frames of :mod:`~minibroker.wire.encoders`,
whose field writers they use. The columnar range answer is :mod:`~minibroker.wire.columns`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .._core.replay import BrokerInfo, CursorAck, PublishResult, RangeEntry
from ..errors import LocalProtocolError
from ..message import Message
from . import layouts as _layouts
from .encoders import write_message, write_ostr, write_str
from .errors import ENCODE_FAILURES, cannot_encode
from .frames import FrameType
from .layouts import READ_RANGE_COLUMNAR

__all__ = [
    "encode_ack_below",
    "encode_broker_info",
    "encode_cursor_acked",
    "encode_get_broker_info",
    "encode_publish",
    "encode_published",
    "encode_range_result",
    "encode_range_results",
    "encode_read_range",
]

# bound by assignment, not imported (see encoders.py: a method call on an imported name allocates a bound method)
BROKER_INFO = _layouts.BROKER_INFO
CURSOR_ACKED = _layouts.CURSOR_ACKED
GET_BROKER_INFO = _layouts.GET_BROKER_INFO
LEN = _layouts.LEN
POSITION = _layouts.POSITION
PUBLISH = _layouts.PUBLISH
PUBLISHED = _layouts.PUBLISHED
RANGE_ENTRY = _layouts.RANGE_ENTRY
RANGE_RESULT = _layouts.RANGE_RESULT
READ_RANGE = _layouts.READ_RANGE
REQ_Q = _layouts.REQ_Q


def _opt_i64(value: int | None) -> int:
    return -1 if value is None else value


def encode_read_range(
    request_id: int,
    queue: str,
    from_seq: int = 0,
    to_seq: int | None = None,
    limit: int | None = None,
    epoch: str | None = None,
    columnar: bool = False,
) -> bytes:
    try:
        if from_seq < 0 or (to_seq is not None and to_seq < 0) or (limit is not None and limit < 0):
            raise ValueError(f"negative range bounds: from {from_seq}, to {to_seq}, limit {limit}")
        parts: list[bytes] = [b""]
        size = write_str(queue, parts) + write_ostr(epoch, parts)
        parts[0] = READ_RANGE.pack(
            READ_RANGE.size - 4 + size,
            FrameType.READ_RANGE,
            request_id,
            from_seq,
            _opt_i64(to_seq),
            _opt_i64(limit),
            READ_RANGE_COLUMNAR if columnar else 0,
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("READ_RANGE", exc)


def _range_entry(entry: RangeEntry, parts: list[bytes]) -> int:
    parts.append(RANGE_ENTRY.pack(entry[0], entry[2]))
    return RANGE_ENTRY.size + write_message(entry[1], parts)


def encode_range_result(
    request_id: int, epoch: str, next_seq: int, entries: Sequence[RangeEntry], last: bool = True
) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_str(epoch, parts)
        for entry in entries:
            size += _range_entry(entry, parts)
        parts[0] = RANGE_RESULT.pack(
            RANGE_RESULT.size - 4 + size, FrameType.RANGE_RESULT, request_id, 1 if last else 0, next_seq, len(entries)
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("RANGE_RESULT", exc)


def encode_range_results(
    request_id: int, epoch: str, next_seq: int, entries: Iterable[RangeEntry], max_frame_size: int
) -> list[bytes]:
    """A range read's answer as RANGE_RESULT frames of at most ``max_frame_size`` bytes each (the last flagged)."""
    frames: list[bytes] = []
    head = RANGE_RESULT.size + 4 + len(epoch.encode())
    room = max_frame_size - head
    parts: list[bytes] = []
    count = size = 0

    def flush(last: bool) -> None:
        epoch_parts: list[bytes] = [b""]
        esize = write_str(epoch, epoch_parts)
        epoch_parts[0] = RANGE_RESULT.pack(
            RANGE_RESULT.size - 4 + esize + size, FrameType.RANGE_RESULT, request_id, 1 if last else 0, next_seq, count
        )
        frames.append(b"".join(epoch_parts + parts))

    for entry in entries:
        one: list[bytes] = []
        try:
            n = _range_entry(entry, one)
        except ENCODE_FAILURES as exc:
            cannot_encode("RANGE_RESULT", exc)
        if n > room:
            raise LocalProtocolError(
                f"message {entry[1].message_id} ({n} bytes) does not fit in a frame of {max_frame_size} bytes",
                size=n,
                maximum=max_frame_size,
            )
        if count and size + n > room:
            flush(False)
            parts, count, size = [], 0, 0
        parts.extend(one)
        count += 1
        size += n
    flush(True)
    return frames


def encode_ack_below(request_id: int, queue: str, cursor: str, seq: int, epoch: str | None = None) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_str(queue, parts) + write_str(cursor, parts) + write_ostr(epoch, parts)
        parts[0] = REQ_Q.pack(REQ_Q.size - 4 + size, FrameType.ACK_BELOW, request_id, seq)
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("ACK_BELOW", exc)


def encode_cursor_acked(request_id: int, result: CursorAck) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_str(result.epoch, parts) + write_str(result.queue, parts) + write_str(result.cursor, parts)
        parts[0] = CURSOR_ACKED.pack(
            CURSOR_ACKED.size - 4 + size,
            FrameType.CURSOR_ACKED,
            request_id,
            result.floor,
            result.removed,
            result.skipped,
            result.next_seq,
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("CURSOR_ACKED", exc)


def encode_get_broker_info(request_id: int, queues: Sequence[str] | None = None, cursor: str | None = None) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_ostr(cursor, parts)
        if queues is not None:
            parts.append(LEN.pack(len(queues)))
            size += 4
            for name in queues:
                size += write_str(name, parts)
        parts[0] = GET_BROKER_INFO.pack(
            GET_BROKER_INFO.size - 4 + size, FrameType.GET_BROKER_INFO, request_id, 0 if queues is None else 1
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("GET_BROKER_INFO", exc)


def encode_broker_info(request_id: int, info: BrokerInfo) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = write_str(info.epoch, parts) + write_str(info.name, parts)
        for p in info.queues:
            size += write_str(p.queue, parts) + POSITION.size
            parts.append(POSITION.pack(p.first_seq, p.next_seq, p.size, _opt_i64(p.cursor_floor)))
        parts[0] = BROKER_INFO.pack(BROKER_INFO.size - 4 + size, FrameType.BROKER_INFO, request_id, len(info.queues))
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("BROKER_INFO", exc)


def encode_publish(request_id: int, messages: Sequence[Message], dedupe: bool = False) -> bytes:
    try:
        parts: list[bytes] = [b""]
        size = 0
        for m in messages:
            size += write_message(m, parts)
        parts[0] = PUBLISH.pack(
            PUBLISH.size - 4 + size, FrameType.PUBLISH, request_id, 1 if dedupe else 0, len(messages)
        )
        return b"".join(parts)
    except ENCODE_FAILURES as exc:
        cannot_encode("PUBLISH", exc)


def encode_published(request_id: int, result: PublishResult) -> bytes:
    try:
        return PUBLISHED.pack(PUBLISHED.size - 4, FrameType.PUBLISHED, request_id, result.accepted, result.duplicates)
    except ENCODE_FAILURES as exc:
        cannot_encode("PUBLISHED", exc)
