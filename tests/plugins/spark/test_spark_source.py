"""The ``minibroker`` Spark data source against a real local Spark (one session for the file; skipped without java or
pyspark). Deselect with ``-m 'not spark'`` for a fast run.

The broker is a :class:`ThreadedBroker` (TCP, own thread): Spark's workers are other processes. Streaming tests use
``trigger(availableNow=True)`` and ``foreachBatch`` (the memory sink refuses to restart from a checkpoint).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from minibroker import ConsumerInfo, Destination, Message
from minibroker.plugins.spark.testing import ThreadedBroker

pytestmark = pytest.mark.spark

TIMEOUT = 120


def read(spark: Any, tb: ThreadedBroker, destinations: str, **options: str) -> Any:
    return (
        spark.read.format("minibroker")
        .option("url", tb.url)
        .option("destinations", destinations)
        .options(**options)
        .load()
    )


class Collector:
    """A foreachBatch sink: rows by batch id, each batch kept once (a replayed batch id replaces its rows)."""

    def __init__(self, fail_on_batch: int | None = None) -> None:
        self.batches: dict[int, list[tuple[str, int, str]]] = {}
        self.calls: list[int] = []
        self.fail_on_batch = fail_on_batch

    def __call__(self, df: Any, batch_id: int) -> None:
        self.calls.append(batch_id)
        if batch_id == self.fail_on_batch:
            raise RuntimeError(f"sink failure on batch {batch_id} (injected)")
        self.batches[batch_id] = [(r.destination, r.seq, r.body) for r in df.collect()]

    @property
    def rows(self) -> list[tuple[str, int, str]]:
        return [row for batch in sorted(self.batches) for row in self.batches[batch]]


def stream(
    spark: Any,
    tb: ThreadedBroker,
    destinations: str,
    sink: Callable[[Any, int], None],
    checkpoint: Path,
    **options: str,
) -> Any:
    """An availableNow query into ``sink``, run to its end (its exception, if any, is raised)."""
    query = (
        spark.readStream.format("minibroker")
        .option("url", tb.url)
        .option("destinations", destinations)
        .option("bodyType", "string")
        .options(**options)
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(TIMEOUT), "the query did not finish"
    finally:
        query.stop()
    return query


def dropped_duplicates(tb: ThreadedBroker, entries: list[Any]) -> int:
    """How many re-sends of these messages the broker dropped (and: the injected publish fault did fire)."""
    assert tb.call(lambda: tb.broker.core.replay.cursors().fail_publish) is None, "no publish failed: no retry happened"
    return tb.call(
        lambda: sum(1 for e in entries for r in tb.broker.history(e.message.message_id) if r.event == "dropped")
    )


# -- batch read -----------------------------------------------------------------------------------------------------


def test_batch_read_every_column(minibroker_spark: Any, threaded_minibroker: ThreadedBroker) -> None:
    from minibroker.plugins.spark import schema_for

    tb = threaded_minibroker
    t0 = 1_767_225_600.123456  # 2026-01-01T00:00:00.123456Z

    def fill() -> None:
        q = Destination.queue("orders.eu")
        broker = tb.broker
        broker.publish(
            [
                Message(
                    "ID:a",
                    q,
                    "text body",
                    {"s": "x", "i": 7, "f": 1.5, "b": True, "n": None, "raw": b"\x00\xff"},
                    priority=9,
                    timestamp=t0,
                    correlation_id="corr-1",
                    type="Order",
                    reply_to=Destination.queue("r"),
                ),
                Message("ID:b", q, b"\x00\x01bytes", {}, priority=0, timestamp=t0 + 1, group_id="g", group_seq=2),
                Message("ID:c", q, "held then released", timestamp=t0 + 2),
            ],
        )
        # deliver ID:a and ID:b to a consumer whose transport then fails: both come back redelivered
        conn = broker.connect()
        conn.add_consumer(ConsumerInfo(q, 2), lambda _d: None)
        conn.close(None)
        broker.publish([Message("ID:d", Destination.queue("orders.us"), "us", timestamp=t0 + 3)])
        broker.publish([Message("ID:e", Destination.queue("other"), "not matched", timestamp=t0)])

    tb.call(fill)
    df = read(minibroker_spark, tb, "orders.>")
    assert df.schema == schema_for("binary")
    rows = sorted(df.collect(), key=lambda r: (r.destination, r.seq))
    utc = dt.UTC
    assert [r.asDict() for r in rows] == [
        {
            "message_id": "ID:a",
            "destination": "orders.eu",
            "seq": 0,
            "body": b"text body",
            "properties": {
                "s": "x",
                "i": "7",
                "f": "1.5",
                "b": "true",
                "n": None,
                "raw": "AP8=",
                "JMSCorrelationID": "corr-1",
                "JMSType": "Order",
                "JMSReplyTo": "queue://r",
            },
            "priority": 9,
            "timestamp": dt.datetime.fromtimestamp(t0, utc).replace(tzinfo=None),
            "redelivered": True,
            "delivery_count": 2,
        },
        {
            "message_id": "ID:b",
            "destination": "orders.eu",
            "seq": 1,
            "body": b"\x00\x01bytes",
            "properties": {"JMSXGroupID": "g", "JMSXGroupSeq": "2"},
            "priority": 0,
            "timestamp": dt.datetime.fromtimestamp(t0 + 1, utc).replace(tzinfo=None),
            "redelivered": True,
            "delivery_count": 2,
        },
        {
            "message_id": "ID:c",
            "destination": "orders.eu",
            "seq": 2,
            "body": b"held then released",
            "properties": {},
            "priority": 4,
            "timestamp": dt.datetime.fromtimestamp(t0 + 2, utc).replace(tzinfo=None),
            "redelivered": False,
            "delivery_count": 1,
        },
        {
            "message_id": "ID:d",
            "destination": "orders.us",
            "seq": 0,
            "body": b"us",
            "properties": {},
            "priority": 4,
            "timestamp": dt.datetime.fromtimestamp(t0 + 3, utc).replace(tzinfo=None),
            "redelivered": False,
            "delivery_count": 1,
        },
    ]
    # a browse, not a drain: nothing consumed, the same rows again
    assert tb.size("orders.eu") == 3
    assert sorted(r.message_id for r in df.collect()) == ["ID:a", "ID:b", "ID:c", "ID:d"]

    text = read(minibroker_spark, tb, "orders.eu, orders.us", bodyType="string")
    assert text.schema == schema_for("string")
    assert sorted(r.body for r in text.collect()) == ["\x00\x01bytes", "held then released", "text body", "us"]
    window = read(
        minibroker_spark, tb, "orders.eu", startingOffsets='{"orders.eu": 1}', endingOffsets='{"orders.eu": 2}'
    )
    assert [r.message_id for r in window.collect()] == ["ID:b"]
    projected = (
        minibroker_spark.read.format("minibroker")
        .schema("seq BIGINT, body STRING")
        .option("url", tb.url)
        .option("destinations", "orders.us")
        .load()
    )
    assert [tuple(r) for r in projected.collect()] == [(0, "us")]
    assert read(minibroker_spark, tb, "orders.none").count() == 0


def test_batch_read_splits_long_ranges(minibroker_spark: Any, threaded_minibroker: ThreadedBroker) -> None:
    tb = threaded_minibroker
    tb.send("big", [f"m{i}" for i in range(250)])
    df = read(minibroker_spark, tb, "big", maxMessagesPerPartition="100", pageSize="40", bodyType="string")
    assert df.rdd.getNumPartitions() == 3
    rows = df.select("seq", "body").collect()
    assert sorted((r.seq, r.body) for r in rows) == [(i, f"m{i}") for i in range(250)]


# -- streaming read -------------------------------------------------------------------------------------------------


def test_stream_available_now_in_several_batches_acks_on_commit(
    minibroker_spark: Any, threaded_minibroker: ThreadedBroker, tmp_path: Path
) -> None:
    """maxMessagesPerTrigger shares each trigger between the queues; each commit acks; the last batch is acked by
    ack_final (Spark never commits a query's last batch)."""
    from minibroker.plugins.spark import ack_final

    tb = threaded_minibroker
    tb.send("in.a", [f"a{i}" for i in range(7)])
    tb.send("in.b", [f"b{i}" for i in range(3)])
    sink = Collector()
    query = stream(minibroker_spark, tb, "in.*", sink, tmp_path / "ck", maxMessagesPerTrigger="4")
    assert [len(sink.batches[b]) for b in sorted(sink.batches)] == [4, 4, 2]
    assert sorted(sink.batches[0]) == [("in.a", 0, "a0"), ("in.a", 1, "a1"), ("in.b", 0, "b0"), ("in.b", 1, "b1")]
    assert sorted(sink.rows) == sorted(
        [("in.a", i, f"a{i}") for i in range(7)] + [("in.b", i, f"b{i}") for i in range(3)]
    )
    # batches 0 and 1 were committed (and acked); the last one was not
    end = json.loads(query.lastProgress["sources"][0]["endOffset"])
    assert end["offsets"] == {"in.a": 7, "in.b": 3}
    last = {(d, s) for d, s, _ in sink.batches[2]}
    held = {(e.message.destination.name, e.seq) for q in ("in.a", "in.b") for e in tb.read(q)}
    assert held == last
    acks = ack_final(query, tb.url)
    assert sum(a.removed for a in acks) == len(last)
    assert tb.size("in.a") == tb.size("in.b") == 0
    assert {p.queue: p.cursor_floor for p in tb.info(["in.a", "in.b"], cursor="spark").queues} == {"in.a": 7, "in.b": 3}


def test_stream_a_topic_through_a_durable_subscription(
    minibroker_spark: Any, threaded_minibroker: ThreadedBroker, tmp_path: Path
) -> None:
    """The first run makes the durable subscription; what the topic gets afterwards is kept for the query, read in
    order, and acked by the commits (ack_final for the last batch)."""
    from minibroker.plugins.spark import ack_final

    tb = threaded_minibroker
    options = {"subscriptionName": "feed", "clientId": "etl"}
    first = Collector()
    stream(minibroker_spark, tb, "topic://prices", first, tmp_path / "ck", **options)
    assert first.rows == []
    tb.send("topic://prices", ["p0", "p1", "p2"])
    second = Collector()
    query = stream(minibroker_spark, tb, "topic://prices", second, tmp_path / "ck", **options)
    assert second.rows == [("durable://etl/feed", i, f"p{i}") for i in range(3)]
    assert sum(a.removed for a in ack_final(query, tb.url)) == 3
    (view,) = tb.call(lambda: tb.broker.durable_subscriptions("prices"))
    assert (view.client_id, view.name, view.pending) == ("etl", "feed", 0)


def test_restart_from_checkpoint_loses_nothing_and_duplicates_nothing(
    minibroker_spark: Any, threaded_minibroker: ThreadedBroker, tmp_path: Path
) -> None:
    """The query dies in batch 1; the restart replays batch 1 from the broker (range reads do not consume) and goes
    on with what arrived meanwhile."""
    from minibroker.plugins.spark import ack_final

    tb = threaded_minibroker
    tb.send("jobs", [f"j{i}" for i in range(6)])
    checkpoint = tmp_path / "ck"
    sink = Collector(fail_on_batch=1)
    with pytest.raises(Exception, match="injected"):
        stream(minibroker_spark, tb, "jobs", sink, checkpoint, maxMessagesPerTrigger="2")
    assert [b for b in sink.batches] == [0]
    # batch 0 was committed (so acked) when batch 1 was planned; batch 1 failed: its messages are still there
    assert [e.seq for e in tb.read("jobs")] == [2, 3, 4, 5]
    tb.send("jobs", [f"j{i}" for i in range(6, 9)])
    sink.fail_on_batch = None
    query = stream(minibroker_spark, tb, "jobs", sink, checkpoint, maxMessagesPerTrigger="4")
    assert sink.calls[:2] == [0, 1] and sink.calls[2] == 1  # batch 1 replayed with the same id
    assert [body for _, _, body in sink.rows] == [f"j{i}" for i in range(9)]
    ack_final(query, tb.url)
    assert tb.size("jobs") == 0


def test_broker_restart_is_detected(minibroker_spark: Any, tmp_path: Path) -> None:
    epochs = itertools.count(1)
    with ThreadedBroker(epoch_source=lambda: f"epoch-{next(epochs)}") as tb:
        tb.send("events", ["e0", "e1"])
        checkpoint = tmp_path / "ck"
        sink = Collector()
        stream(minibroker_spark, tb, "events", sink, checkpoint)
        assert tb.epoch == "epoch-1"
        tb.restart()  # messages and sequence numbers are gone: the checkpoint's offsets mean nothing now
        tb.send("events", ["after-0", "after-1", "after-2"])
        assert tb.epoch == "epoch-2"
        with pytest.raises(Exception, match="was restarted") as info:
            stream(minibroker_spark, tb, "events", Collector(), checkpoint)
        assert "failOnDataLoss" in str(info.value)
        again = Collector()
        stream(minibroker_spark, tb, "events", again, checkpoint, failOnDataLoss="false")
        assert [body for _, _, body in again.rows] == ["after-0", "after-1", "after-2"]


# -- writing --------------------------------------------------------------------------------------------------------


def test_batch_write_round_trip_and_a_retried_task_does_not_duplicate(
    minibroker_spark: Any, threaded_minibroker: ThreadedBroker
) -> None:
    tb = threaded_minibroker
    rows = [(f"r{i}", {"n": str(i)}) for i in range(8)]
    df = minibroker_spark.createDataFrame(rows, "body STRING, properties MAP<STRING,STRING>")  # 2 partitions
    # the first publish request takes 2 of its 3 messages and fails: Spark retries that task, which re-sends them
    tb.call(tb.broker.fail_next_publish, 2)
    df.write.format("minibroker").option("url", tb.url).option("destination", "out").option("batchSize", "3").mode(
        "append"
    ).save()
    got = tb.read("out")
    assert sorted((e.message.body, dict(e.message.properties)) for e in got) == sorted(
        (body, props) for body, props in rows
    )
    assert len({e.message.message_id for e in got}) == 8
    assert all(e.message.message_id.startswith("ID:spark:") for e in got)
    assert dropped_duplicates(tb, got) == 2  # the retry re-sent what the failed attempt had published
    # and back through the reader
    back = read(minibroker_spark, tb, "out", bodyType="string")
    assert sorted(r.body for r in back.collect()) == [f"r{i}" for i in range(8)]
    with pytest.raises(Exception, match="only appends"):
        df.write.format("minibroker").option("url", tb.url).option("destination", "out").mode("overwrite").save()


def test_stream_write_round_trip_with_a_retried_task(
    minibroker_spark: Any, threaded_minibroker: ThreadedBroker, tmp_path: Path
) -> None:
    """read 'in' -> upper-case -> write 'out', a task retried midway; then ack the source's last batch."""
    from minibroker.plugins.spark import ack_final

    tb = threaded_minibroker
    tb.send("in", [f"m{i}" for i in range(5)], properties=[{"k": str(i)} for i in range(5)])
    tb.call(tb.broker.fail_next_publish, 1)
    query = (
        minibroker_spark.readStream.format("minibroker")
        .option("url", tb.url)
        .option("destinations", "in")
        .option("bodyType", "string")
        .load()
        .selectExpr("upper(body) AS body", "properties")
        .writeStream.format("minibroker")
        .option("url", tb.url)
        .option("destination", "out")
        .option("batchSize", "2")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(TIMEOUT)
    finally:
        query.stop()
    out = tb.read("out")
    assert sorted((e.message.body, e.message.properties["k"]) for e in out) == [(f"M{i}", str(i)) for i in range(5)]
    assert len({e.message.message_id for e in out}) == 5
    assert dropped_duplicates(tb, out) == 1
    ack_final(query, tb.url)
    assert tb.size("in") == 0
