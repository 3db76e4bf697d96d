"""The PySpark data source (format ``minibroker``): batch and streaming reads of queues, batch and streaming writes.

Imports pyspark and pyarrow: install the ``spark`` extra. Everything here runs in Spark's Python processes (the
planner, the streaming runner, the executors), never in the process that built the query, so every connection is
made over TCP (option ``url``) by :class:`~minibroker.plugins.spark._wire.BlockingClient`, lazily, and nothing that
holds a socket is pickled.
"""

from __future__ import annotations

import itertools
import json
import logging
import sys
import time
import uuid
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamArrowWriter,
    DataSourceStreamReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from minibroker import BrokerInfo, CursorAck, RangeEntry
from minibroker._core.replay import string_properties
from minibroker.errors import InvalidAcknowledge, InvalidConfiguration, StaleEpoch
from minibroker.message import Destination, Message
from minibroker.wire import RangeColumns

from ._options import (
    SourceOptions,
    WriterOptions,
    fair_share,
    is_pattern,
    make_offset,
    parse_offset,
    resolve_destinations,
    split_range,
)
from ._wire import BlockingClient

__all__ = [
    "SCHEMA",
    "MinibrokerDataSource",
    "MinibrokerPartition",
    "WriteResult",
    "ack_final",
    "arrow_schema",
    "register",
    "schema_for",
]

log = logging.getLogger("minibroker.spark")

_BIG_ENDIAN = sys.byteorder == "big"

#: the columns a read produces (``body`` is STRING with option ``bodyType=string``)
SCHEMA = (
    "message_id STRING, destination STRING, seq BIGINT, body BINARY, properties MAP<STRING,STRING>, "
    "priority INT, timestamp TIMESTAMP, redelivered BOOLEAN, delivery_count INT"
)
COLUMNS = (
    "message_id",
    "destination",
    "seq",
    "body",
    "properties",
    "priority",
    "timestamp",
    "redelivered",
    "delivery_count",
)

#: JMS headers copied into the ``properties`` column when set
_HEADER_PROPERTIES = ("JMSCorrelationID", "JMSType", "JMSReplyTo", "JMSXGroupID", "JMSXGroupSeq")


def schema_for(body_type: str = "binary") -> StructType:
    """The read schema, with ``body`` as BINARY (default) or STRING (built by hand: parsing DDL needs a session,
    which Spark's Python workers do not have)."""
    return StructType(
        [
            StructField("message_id", StringType()),
            StructField("destination", StringType()),
            StructField("seq", LongType()),
            StructField("body", StringType() if body_type == "string" else BinaryType()),
            StructField("properties", MapType(StringType(), StringType())),
            StructField("priority", IntegerType()),
            StructField("timestamp", TimestampType()),
            StructField("redelivered", BooleanType()),
            StructField("delivery_count", IntegerType()),
        ]
    )


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark requires of the record batches for ``schema`` (UTC microsecond timestamps)."""
    return to_arrow_schema(schema, timezone="UTC")


# -- reading --------------------------------------------------------------------------------------------------------


class MinibrokerPartition(InputPartition):
    """One task's work: messages ``from_seq <= seq < to_seq`` of one queue, in one broker epoch. Plain attributes
    only: partitions are pickled to the executors."""

    def __init__(
        self,
        url: str,
        queue: str,
        from_seq: int,
        to_seq: int,
        epoch: str,
        page_size: int = 10_000,
        timeout: float = 60.0,
    ) -> None:
        super().__init__((queue, from_seq, to_seq))
        self.url = url
        self.queue = queue
        self.from_seq = from_seq
        self.to_seq = to_seq
        self.epoch = epoch
        self.page_size = page_size
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"MinibrokerPartition({self.queue!r}, [{self.from_seq}, {self.to_seq}), epoch={self.epoch})"


def _body_column(entries: Sequence[RangeEntry], as_string: bool) -> pa.Array:
    bodies = [e.message.body for e in entries]
    if as_string:
        return pa.array([b if isinstance(b, str) else b.decode("utf-8", "replace") for b in bodies], pa.string())
    return pa.array([b.encode() if type(b) is str else b for b in bodies], pa.binary())


def _map_column(entries: Sequence[RangeEntry], field_type: pa.DataType) -> pa.Array:
    offsets = [0]
    keys: list[str] = []
    values: list[str | None] = []
    total = 0
    for e in entries:
        m = e.message
        if (
            m.properties
            or m.correlation_id is not None
            or m.type is not None
            or m.reply_to is not None
            or (m.group_id is not None)
        ):
            for k, v in string_properties(m):
                keys.append(k)
                values.append(v)
                total += 1
        offsets.append(total)
    arr = pa.MapArray.from_arrays(
        pa.array(offsets, pa.int32()), pa.array(keys, pa.string()), pa.array(values, pa.string())
    )
    return arr.cast(field_type) if arr.type != field_type else arr


def to_record_batch(queue: str, entries: Sequence[RangeEntry], schema: pa.Schema) -> pa.RecordBatch:
    """Rows for ``entries`` in exactly ``schema`` (the columns a user schema asks for, in its order): the slow,
    message by message way (the reader uses :func:`columns_to_record_batch`; this one checks it in the tests)."""
    n = len(entries)
    arrays: list[pa.Array] = []
    for field in schema:
        name = field.name
        if name == "message_id":
            arr = pa.array([e.message.message_id for e in entries], pa.string())
        elif name == "destination":
            arr = pa.array([queue] * n, pa.string())
        elif name == "seq":
            arr = pa.array([e.seq for e in entries], pa.int64())
        elif name == "body":
            arr = _body_column(entries, pa.types.is_string(field.type))
        elif name == "properties":
            arr = _map_column(entries, field.type)
        elif name == "priority":
            arr = pa.array([e.message.priority for e in entries], pa.int32())
        elif name == "timestamp":
            arr = pa.array([round(e.message.timestamp * 1_000_000) for e in entries], pa.int64()).cast(field.type)
        elif name == "redelivered":
            arr = pa.array([e.redelivery_counter > 0 for e in entries], pa.bool_())
        elif name == "delivery_count":
            arr = pa.array([e.redelivery_counter + 1 for e in entries], pa.int32())
        else:  # pragma: no cover - checked when the reader is made
            raise InvalidConfiguration(f"unknown column {name!r}")
        if arr.type != field.type:
            arr = arr.cast(field.type)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _buffer(data: bytes, width: int) -> pa.Buffer:
    """A wire column (little-endian) as an Arrow buffer of this machine's byte order."""
    if _BIG_ENDIAN and width > 1:
        values = array({4: "i", 8: "q"}[width], data)
        values.byteswap()
        data = values.tobytes()
    return pa.py_buffer(data)


def _var(kind: pa.DataType, n: int, offsets: bytes, data: bytes) -> pa.Array:
    arr = pa.Array.from_buffers(kind, n, [None, _buffer(offsets, 4), pa.py_buffer(data)])
    arr.validate(full=True)  # the offsets come from the network: never trust them blindly
    return arr


def columns_to_record_batch(queue: str, part: RangeColumns, schema: pa.Schema) -> pa.RecordBatch:
    """Rows for a columnar range read, in exactly ``schema``, from the wire buffers without a per-message step
    (except for text bodies that are not valid UTF-8 and null property values, which take the slow way)."""
    n = part.count
    arrays: list[pa.Array] = []
    counters: pa.Array | None = None
    for field in schema:
        name = field.name
        if name == "message_id":
            arr = _var(pa.string(), n, part.id_offsets, part.id_data)
        elif name == "destination":
            arr = pa.array([queue] * n, pa.string())
        elif name == "seq":
            arr = pa.Array.from_buffers(pa.int64(), n, [None, _buffer(part.seq, 8)])
        elif name == "body":
            arr = _var(pa.binary(), n, part.body_offsets, part.body_data)
            if pa.types.is_string(field.type):
                try:
                    arr = _var(pa.string(), n, part.body_offsets, part.body_data)
                except pa.ArrowInvalid:  # bytes bodies that are not UTF-8
                    arr = pa.array([b.decode("utf-8", "replace") for b in arr.to_pylist()], pa.string())
        elif name == "properties":
            m = part.property_count
            keys = _var(pa.string(), m, part.key_offsets, part.key_data)
            values = _var(pa.string(), m, part.value_offsets, part.value_data)
            if 1 in part.value_nulls:
                values = pa.array(
                    [None if null else v for v, null in zip(values.to_pylist(), part.value_nulls, strict=True)],
                    pa.string(),
                )
            offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, _buffer(part.prop_offsets, 4)])
            arr = pa.MapArray.from_arrays(offsets, keys, values)
            arr.validate(full=True)
        elif name == "priority":
            arr = pa.Array.from_buffers(pa.int32(), n, [None, _buffer(part.priority, 4)])
        elif name == "timestamp":
            arr = pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), n, [None, _buffer(part.timestamp, 8)])
        elif name in ("redelivered", "delivery_count"):
            if counters is None:
                counters = pa.Array.from_buffers(pa.int32(), n, [None, _buffer(part.redelivery_counter, 4)])
            arr = pc.greater(counters, 0) if name == "redelivered" else pc.add(counters, 1)
        else:  # pragma: no cover - checked when the reader is made
            raise InvalidConfiguration(f"unknown column {name!r}")
        if arr.type != field.type:
            arr = arr.cast(field.type)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _check_schema(schema: StructType) -> None:
    for field in schema.fields:
        if field.name not in COLUMNS:
            raise InvalidConfiguration(
                f"the minibroker source has no column {field.name!r} (it has: {', '.join(COLUMNS)})"
            )
        if field.name == "body" and not isinstance(field.dataType, BinaryType | StringType):
            raise InvalidConfiguration(f"column body is BINARY or STRING, not {field.dataType.simpleString()}")


def read_partition(partition: MinibrokerPartition, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """The record batches of one partition, one per page of messages (columnar reads); changes nothing at the
    broker."""
    try:
        with BlockingClient(partition.url, timeout=partition.timeout) as client:
            for part in client.iter_range_columns(
                partition.queue, partition.from_seq, partition.to_seq, page=partition.page_size, epoch=partition.epoch
            ):
                yield columns_to_record_batch(partition.queue, part, schema)
    except StaleEpoch as exc:
        raise StaleEpoch(f"cannot read {partition!r}: {exc}") from None


def _positions(client: BlockingClient, specs: Sequence[str], cursor: str | None = None) -> BrokerInfo:
    """The broker info for the queues ``specs`` name (wildcards resolved against the broker's queues)."""
    if any(is_pattern(s) for s in specs):
        every = client.broker_info(None, cursor)
        names = resolve_destinations(specs, [p.queue for p in every.queues])
        wanted = {p.queue: p for p in every.queues}
        missing = [n for n in names if n not in wanted]
        if missing:
            extra = client.broker_info(missing, cursor)
            wanted.update({p.queue: p for p in extra.queues})
        return BrokerInfo(every.epoch, every.name, tuple(wanted[n] for n in names))
    return client.broker_info(sorted(set(specs)), cursor)


def _start_positions(info: BrokerInfo, starting: str | dict[str, int]) -> dict[str, int]:
    out = {}
    for p in info.queues:
        if starting == "latest":
            out[p.queue] = p.next_seq
        elif isinstance(starting, dict) and p.queue in starting:
            out[p.queue] = starting[p.queue]
        else:
            out[p.queue] = p.first_seq
    return out


def _plan(
    url: str, epoch: str, ranges: Mapping[str, tuple[int, int]], options: SourceOptions
) -> list[MinibrokerPartition]:
    parts = []
    for queue in sorted(ranges):
        start, end = ranges[queue]
        for a, b in split_range(start, end, options.max_messages_per_partition):
            parts.append(MinibrokerPartition(url, queue, a, b, epoch, options.page_size, options.timeout))
    return parts


class MinibrokerReader(DataSourceReader):
    """Batch read: a snapshot of ``[startingOffsets, endingOffsets)`` per queue, taken when Spark plans the query,
    read by browsing (non-destructive: run the DataFrame twice, get the same rows twice)."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        _check_schema(schema)
        self.options = options
        self.schema = schema

    def partitions(self) -> list[MinibrokerPartition]:
        o = self.options
        with BlockingClient(o.url, timeout=o.timeout) as client:
            info = _positions(client, o.destinations)
        start = _start_positions(info, o.starting_offsets)
        ranges = {}
        for p in info.queues:
            end = p.next_seq
            if isinstance(o.ending_offsets, dict) and p.queue in o.ending_offsets:
                end = min(end, o.ending_offsets[p.queue])
            if end > start[p.queue]:
                ranges[p.queue] = (start[p.queue], end)
        return _plan(o.url, info.epoch, ranges, o)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, MinibrokerPartition):  # Spark plans InputPartition(None) when there is none
            yield from read_partition(partition, arrow_schema(self.schema))


class MinibrokerStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming read. Offsets are ``{"epoch": E, "offsets": {queue: next seq}}``; ``commit(end)`` acks below
    ``end`` for the ``cursor`` (option, default ``spark``), so the broker drops what Spark has processed.

    Spark's checkpoint decides where a query resumes, not the broker: a restarted query re-reads its uncommitted
    batch from the broker (range reads are non-destructive). Spark commits batch N only while planning batch N+1, so
    the last batch of a query stays un-acked: use :func:`ack_final` after the query.
    """

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        _check_schema(schema)
        self.options = options
        self.schema = schema
        self._client: BlockingClient | None = None
        self._target: tuple[str, dict[str, int]] | None = None

    # the runner process is killed without stop(): the connection is lazy and replaced whenever it fails
    def _broker(self) -> BlockingClient:
        client = self._client
        if client is None or client.closed:
            client = self._client = BlockingClient(self.options.url, timeout=self.options.timeout)
        return client

    def _info(self) -> BrokerInfo:
        try:
            return _positions(self._broker(), self.options.destinations)
        except Exception:
            self._client = None
            raise

    def initialOffset(self) -> dict[str, object]:
        info = self._info()
        return make_offset(info.epoch, _start_positions(info, self.options.starting_offsets))

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_messages_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        info = self._info()
        self._target = (info.epoch, {p.queue: p.next_seq for p in info.queues})

    def _restarted(self, start_epoch: str, info: BrokerInfo, why: str) -> dict[str, int]:
        """The broker lost its state since ``start``: fail, or (failOnDataLoss=false) go on from its first messages."""
        if self.options.fail_on_data_loss:
            raise StaleEpoch(
                f"the minibroker at {self.options.url} was restarted ({why}): the query's offsets (epoch "
                f"{start_epoch}) belong to messages that are gone. Start the query again with a new checkpoint, or "
                "set the option failOnDataLoss=false to go on from the broker's first messages",
                expected=start_epoch,
                actual=info.epoch,
            )
        log.warning("minibroker at %s was restarted (%s): going on from its first messages", self.options.url, why)
        return {p.queue: p.first_seq for p in info.queues}

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, object]:
        info = self._info()
        start_epoch, begin = parse_offset(start)
        heads = {p.queue: p.next_seq for p in info.queues}
        if start_epoch != info.epoch:
            begin = self._restarted(start_epoch, info, f"epoch {start_epoch} -> {info.epoch}")
        elif any(begin.get(q, 0) > head for q, head in heads.items()):
            begin = self._restarted(start_epoch, info, "its sequence numbers went back")
        for p in info.queues:  # queues that appeared since (a wildcard) start at their first message
            begin.setdefault(p.queue, p.first_seq)
        if self._target is not None:
            target_epoch, target = self._target
            if target_epoch != info.epoch:
                target = self._target_now(info)
            heads = {q: min(h, target.get(q, begin[q])) for q, h in heads.items()}
        available = {q: max(0, heads[q] - begin[q]) for q in heads}
        if isinstance(limit, ReadMaxRows):
            share = fair_share(available, limit.max_rows, rotate=sum(begin.values()))
        else:
            share = available
        end = {q: begin[q] + share.get(q, 0) for q in begin}
        return make_offset(info.epoch, end)

    def _target_now(self, info: BrokerInfo) -> dict[str, int]:
        target = {p.queue: p.next_seq for p in info.queues}
        self._target = (info.epoch, target)
        return target

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[MinibrokerPartition]:
        start_epoch, begin = parse_offset(start)
        end_epoch, finish = parse_offset(end)
        if start_epoch != end_epoch:  # a reset after a restart (failOnDataLoss=false): from the first message
            begin = {}
        ranges = {q: (begin.get(q, 0), n) for q, n in finish.items() if n > begin.get(q, 0)}
        return _plan(self.options.url, end_epoch, ranges, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if isinstance(partition, MinibrokerPartition):  # Spark plans InputPartition(None) when there is none
            yield from read_partition(partition, arrow_schema(self.schema))

    def commit(self, end: dict[str, Any]) -> None:
        if not self.options.ack_on_commit:
            return
        acks = ack_offsets(self._broker(), end, self.options.cursor)
        if acks is None:
            self._client = None

    def stop(self) -> None:  # not called by Spark 4.3 (it kills the runner); here for completeness
        client, self._client = self._client, None
        if client is not None:
            client.close()


def ack_offsets(client: BlockingClient, end: Mapping[str, Any] | str, cursor: str) -> list[CursorAck] | None:
    """Ack below each queue's offset in ``end`` for ``cursor``. An offset of another epoch (the broker was restarted)
    acks nothing: its messages are gone. Returns the acks (None when the broker's epoch differs)."""
    epoch, offsets = parse_offset(end)
    acks = []
    for queue, seq in offsets.items():
        try:
            acks.append(client.ack_below(queue, cursor, seq, epoch))
        except StaleEpoch:
            log.warning("not acking %s below %d: the broker was restarted since (epoch %s)", queue, seq, epoch)
            return None
        except InvalidAcknowledge as exc:
            log.warning("not acking %s below %d: %s", queue, seq, exc)
    return acks


def ack_final(query: Any, url: str, *, cursor: str = "spark", timeout: float = 60.0) -> list[CursorAck]:
    """Ack what a finished (or stopped) streaming query read last: Spark commits batch N only when it plans batch
    N+1, so the final batch of a query is never committed, hence never acked by ``commit``. Call this after
    ``query.awaitTermination()``; it acks below the query's last end offset for each minibroker source. Acking is
    idempotent: calling it on a query whose offsets were all acked does nothing."""
    progress = query.lastProgress
    if progress is None:
        return []
    sources = progress["sources"] if isinstance(progress, Mapping) else progress.sources
    acks: list[CursorAck] = []
    with BlockingClient(url, timeout=timeout) as client:
        for source in sources:
            raw = source["endOffset"] if isinstance(source, Mapping) else source.endOffset
            if raw is None:
                continue
            try:
                value = json.loads(raw) if isinstance(raw, str) else raw
                parse_offset(value)
            except (InvalidConfiguration, ValueError, TypeError):
                continue  # not a minibroker source
            acks.extend(ack_offsets(client, value, cursor) or [])
    return acks


# -- writing --------------------------------------------------------------------------------------------------------


class WriteResult(WriterCommitMessage):
    """What one write task did: messages the broker took, and re-sent ones it dropped as duplicates."""

    def __init__(self, partition: int, accepted: int, duplicates: int) -> None:
        self.partition = partition
        self.accepted = accepted
        self.duplicates = duplicates

    def __repr__(self) -> str:
        return f"WriteResult(partition={self.partition}, accepted={self.accepted}, duplicates={self.duplicates})"


def _task_context() -> tuple[int, Any]:
    from pyspark import TaskContext

    context = TaskContext.get()
    return (0 if context is None else context.partitionId()), context


def _batch_messages(
    batch: pa.RecordBatch, options: WriterOptions, id_prefix: str, first_row: int, now: float
) -> list[Message]:
    names = batch.schema.names
    if "body" not in names:
        raise InvalidConfiguration(
            "the minibroker sink needs a body column (STRING or BINARY); optional: "
            "properties MAP<STRING,STRING>, destination STRING, message_id STRING, priority INT"
        )
    bodies = batch.column("body").to_pylist()
    n = len(bodies)
    props = batch.column("properties").to_pylist() if "properties" in names else [None] * n
    dests = batch.column("destination").to_pylist() if "destination" in names else [None] * n
    ids = batch.column("message_id").to_pylist() if "message_id" in names else [None] * n
    prios = batch.column("priority").to_pylist() if "priority" in names else [None] * n
    messages = []
    default = options.destination
    parsed: dict[str, Destination] = {}
    for i in range(n):
        name = dests[i] or default
        if name is None:
            raise InvalidConfiguration(
                "a row has no destination: set the option destination or fill the destination column"
            )
        dest = parsed.get(name)
        if dest is None:
            dest = parsed[name] = Destination.queue(name[len("queue://") :] if name.startswith("queue://") else name)
        body = bodies[i]
        if body is None:
            body = b""
        raw_props = props[i]
        properties = dict(raw_props) if raw_props else {}
        priority = prios[i]
        messages.append(
            Message(
                message_id=ids[i] or f"{id_prefix}:{first_row + i}",
                destination=dest,
                body=body,
                properties=properties,
                priority=4 if priority is None else int(priority),
                persistent=options.persistent,
                timestamp=now,
                producer_id=id_prefix,
                producer_seq=first_row + i,
            )
        )
    return messages


def _publish_all(
    options: WriterOptions, id_prefix: str, batches: Iterator[pa.RecordBatch], partition: int
) -> WriteResult:
    """Publish every row, ``batchSize`` messages per request; ids ``<id_prefix>:<row>`` unless given."""
    accepted = duplicates = row = 0
    size = options.batch_size
    pending: list[Message] = []
    with BlockingClient(options.url, timeout=options.timeout) as client:
        for batch in itertools.chain(batches, [None]):
            if batch is not None:
                if batch.num_rows == 0:
                    continue
                messages = _batch_messages(batch, options, id_prefix, row, time.time())
                row += len(messages)
                pending.extend(messages)
            while len(pending) >= size or (batch is None and pending):
                chunk, pending = pending[:size], pending[size:]
                result = client.publish(chunk, dedupe=options.dedupe)
                accepted += result.accepted
                duplicates += result.duplicates
    return WriteResult(partition, accepted, duplicates)


class MinibrokerWriter(DataSourceArrowWriter):
    """Batch write: each task publishes its rows in batches of ``batchSize``. Message ids are
    ``ID:spark:<writeId>:<partition>:<row>`` (or the ``message_id`` column), and the broker drops ids it has seen
    (``dedupe``, default on), so a retried task does not duplicate what its failed attempt sent."""

    def __init__(self, options: WriterOptions) -> None:
        self.options = options
        self.write_id = options.write_id or uuid.uuid4().hex[:12]

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        partition, _ = _task_context()
        return _publish_all(self.options, f"ID:spark:{self.write_id}:{partition}", iterator, partition)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        results = [m for m in messages if isinstance(m, WriteResult)]
        log.info(
            "minibroker write %s: %d messages sent, %d duplicates dropped",
            self.write_id,
            sum(r.accepted for r in results),
            sum(r.duplicates for r in results),
        )


class MinibrokerStreamWriter(DataSourceStreamArrowWriter):
    """Streaming write: like the batch writer, with ids ``ID:spark:<queryId>:<batchId>:<partition>:<row>``. The
    query id survives restarts from the same checkpoint, so a micro-batch that is run again after a crash re-sends
    the same ids, and the broker drops them."""

    def __init__(self, options: WriterOptions) -> None:
        self.options = options
        self.fallback_id = options.write_id or uuid.uuid4().hex[:12]

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        partition, context = _task_context()
        query = batch = None
        if context is not None:
            query = context.getLocalProperty("sql.streaming.queryId")
            batch = context.getLocalProperty("streaming.sql.batchId")
        prefix = f"ID:spark:{self.options.write_id or query or self.fallback_id}:{batch or 0}:{partition}"
        return _publish_all(self.options, prefix, iterator, partition)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        results = [m for m in messages if isinstance(m, WriteResult)]
        log.info(
            "minibroker stream write, batch %d: %d messages sent, %d duplicates dropped",
            batchId,
            sum(r.accepted for r in results),
            sum(r.duplicates for r in results),
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("minibroker stream write, batch %d aborted", batchId)


# -- the data source ------------------------------------------------------------------------------------------------


class MinibrokerDataSource(DataSource):
    """``spark.read.format("minibroker")`` / ``readStream`` / ``write`` / ``writeStream`` on a minibroker queue.

    Read options: ``url`` (tcp://HOST:PORT, required), ``destinations`` (queue names separated by commas, or ActiveMQ
    wildcards such as ``orders.>``), ``startingOffsets`` (``earliest``: the first message not yet acked, the
    default; ``latest``; or JSON ``{"queue": seq}``), ``endingOffsets`` (batch: ``latest`` or JSON), ``bodyType``
    (``binary`` or ``string``), ``maxMessagesPerTrigger``, ``maxMessagesPerPartition`` (default 100000), ``cursor``
    (the name streaming commits ack under, default ``spark``), ``ackOnCommit`` (default true),
    ``failOnDataLoss`` (default true: a broker restart fails the query; false: go on from the new broker's first
    messages), ``pageSize`` (messages per request, default 10000).

    Write options: ``url``, ``destination`` (or a ``destination`` column), ``batchSize`` (default 1000),
    ``dedupe`` (default true), ``writeId``, ``persistent``.
    """

    @classmethod
    def name(cls) -> str:
        return "minibroker"

    def schema(self) -> StructType:
        body = str(self.options.get("bodyType", self.options.get("bodytype", "binary"))).lower()
        return schema_for("string" if body == "string" else "binary")

    def reader(self, schema: StructType) -> MinibrokerReader:
        return MinibrokerReader(SourceOptions.parse(self.options), schema)

    def streamReader(self, schema: StructType) -> MinibrokerStreamReader:
        return MinibrokerStreamReader(SourceOptions.parse(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> MinibrokerWriter:
        _check_overwrite(overwrite)
        return MinibrokerWriter(WriterOptions.parse(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> MinibrokerStreamWriter:
        _check_overwrite(overwrite)
        return MinibrokerStreamWriter(WriterOptions.parse(self.options))


def _check_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise InvalidConfiguration(
            "the minibroker sink only appends (a queue cannot be overwritten): use mode('append')"
        )


def register(spark: Any) -> None:
    """Register the ``minibroker`` format with ``spark`` (a SparkSession)."""
    spark.dataSource.register(MinibrokerDataSource)
