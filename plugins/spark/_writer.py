"""Writing: rows to messages with deterministic ids (``<writeId>:<row>``), published in batches that the broker
de-duplicates, so a retried Spark task or a re-run batch never sends a message twice."""

from __future__ import annotations

import itertools
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from minibroker.errors import InvalidConfiguration
from minibroker.message import Destination, Message

from ._options import (
    WriterOptions,
)
from ._wire import BlockingClient

__all__ = ["MinibrokerStreamWriter", "MinibrokerWriter", "WriteResult"]

log = logging.getLogger("minibroker.spark")


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
