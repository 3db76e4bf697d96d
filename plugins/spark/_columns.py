"""The read schema and the conversion of the broker's range replies into Arrow record batches: the hot path of a
Spark read, kept apart from the Spark classes that call it (``tests/benchmarks/spark_bench.py`` measures it alone).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
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

from minibroker import RangeEntry
from minibroker.errors import InvalidConfiguration
from minibroker.message import body_as_bytes, string_properties
from minibroker.wire import RangeColumns

__all__ = [
    "COLUMNS",
    "SCHEMA",
    "arrow_schema",
    "check_schema",
    "columns_to_record_batch",
    "schema_for",
    "to_record_batch",
]

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


def _body_column(entries: Sequence[RangeEntry], as_string: bool) -> pa.Array:
    bodies = [e.message.body for e in entries]
    if as_string:
        return pa.array(
            [b if isinstance(b, str) else body_as_bytes(b).decode("utf-8", "replace") for b in bodies], pa.string()
        )
    return pa.array([body_as_bytes(b) for b in bodies], pa.binary())


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


def check_schema(schema: StructType) -> None:
    for field in schema.fields:
        if field.name not in COLUMNS:
            raise InvalidConfiguration(
                f"the minibroker source has no column {field.name!r} (it has: {', '.join(COLUMNS)})"
            )
        if field.name == "body" and not isinstance(field.dataType, BinaryType | StringType):
            raise InvalidConfiguration(f"column body is BINARY or STRING, not {field.dataType.simpleString()}")
