"""Reading: the batch and streaming readers Spark's planner and executors run, their partitions and offsets, and
the acks a streaming query's commits make (:func:`ack_final` for the last batch, which Spark never commits)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import (
    StructType,
)

from minibroker import BrokerInfo, CursorAck
from minibroker.errors import ConnectionClosed, InvalidAcknowledge, InvalidConfiguration, LimitExceeded, StaleEpoch

from ._columns import arrow_schema, check_schema, columns_to_record_batch
from ._options import (
    SourceOptions,
    fair_share,
    is_pattern,
    make_offset,
    parse_offset,
    resolve_destinations,
    split_range,
)
from ._wire import BlockingClient

__all__ = ["MinibrokerPartition", "MinibrokerReader", "MinibrokerStreamReader", "ack_final", "ack_offsets"]

log = logging.getLogger("minibroker.spark")

#: seconds a stream reader keeps using its connection between micro-batches (below the broker's idle timeout)
REUSE_FOR = 20.0


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


#: the durable subscriptions this process has made sure of: (url, client id, subscription name, topic)
_SUBSCRIBED: set[tuple[str, str, str | None, str]] = set()


def _positions(client: BlockingClient, options: SourceOptions, cursor: str | None = None) -> BrokerInfo:
    """The broker info for the queues the options name (wildcards resolved against the broker's queues; a topic's
    durable subscription made first, if it is not there)."""
    for topic in options.topics:
        key = (options.url, options.client_id, options.subscription_name, topic)
        if key not in _SUBSCRIBED:  # once per process: a durable subscription stays until unsubscribed
            with BlockingClient(options.url, timeout=options.timeout, client_id=options.client_id) as subscriber:
                subscriber.ensure_durable_subscription(topic, options.subscription_name or "")
            _SUBSCRIBED.add(key)
    specs = options.queue_specs()
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
        check_schema(schema)
        self.options = options
        self.schema = schema

    def partitions(self) -> list[MinibrokerPartition]:
        o = self.options
        with BlockingClient(o.url, timeout=o.timeout) as client:
            info = _positions(client, o)
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
        check_schema(schema)
        self.options = options
        self.schema = schema
        self._client: BlockingClient | None = None
        self._used = 0.0
        self._target: tuple[str, dict[str, int]] | None = None

    # the runner process is killed without stop(): the connection is lazy and replaced whenever it fails, and after a
    # quiet spell: this client sends no keep-alives between micro-batches, and the broker closes a native connection
    # it hears nothing from for its idle timeout (30 s by default)
    def _broker(self) -> BlockingClient:
        client = self._client
        now = time.monotonic()
        if client is not None and (client.closed or now - self._used > REUSE_FOR):
            client.close()
            client = None
        if client is None:
            client = self._client = BlockingClient(self.options.url, timeout=self.options.timeout)
        self._used = now
        return client

    def _forget_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def _info(self) -> BrokerInfo:
        try:
            return _positions(self._broker(), self.options)
        except (ConnectionClosed, LimitExceeded):  # the broker closed it meanwhile (its idle timeout): once more, anew
            self._forget_client()
            return _positions(self._broker(), self.options)
        except Exception:
            self._forget_client()
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
            self._forget_client()

    def stop(self) -> None:  # not called by Spark 4.3 (it kills the runner); here for completeness
        self._forget_client()


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
