"""The Spark plugin's parts that need no Spark: options, offsets, fair sharing, the blocking wire client and the
threaded broker (fast; not marked ``spark``)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minibroker import Destination, Message
from minibroker.errors import ConnectionClosed, InvalidConfiguration, StaleEpoch
from minibroker.plugins.spark._options import (
    SourceOptions,
    WriterOptions,
    fair_share,
    make_offset,
    parse_offset,
    resolve_destinations,
    split_range,
    stringify,
)
from minibroker.plugins.spark._wire import BlockingClient
from minibroker.plugins.spark.testing import ThreadedBroker


class TestOptions:
    def test_defaults_and_case_insensitive_keys(self) -> None:
        o = SourceOptions.parse({"URL": "tcp://h:1", "Destinations": "a, queue://b ,a"})
        assert (o.url, o.destinations, o.starting_offsets, o.ending_offsets, o.body_type, o.cursor) == (
            "tcp://h:1",
            ("a", "b"),
            "earliest",
            "latest",
            "binary",
            "spark",
        )
        assert (o.max_messages_per_trigger, o.ack_on_commit, o.fail_on_data_loss) == (None, True, True)

    def test_everything(self) -> None:
        o = SourceOptions.parse(
            {
                "url": "tcp://h:1",
                "destinations": "x.>",
                "startingoffsets": "latest",
                "endingOffsets": '{"x.a": 4}',
                "bodyType": "STRING",
                "maxMessagesPerTrigger": "10",
                "maxMessagesPerPartition": "7",
                "cursor": "c",
                "ackOnCommit": "false",
                "failOnDataLoss": "false",
                "pageSize": "3",
            }
        )
        assert (
            o.starting_offsets,
            o.ending_offsets,
            o.body_type,
            o.max_messages_per_trigger,
            o.max_messages_per_partition,
            o.cursor,
            o.ack_on_commit,
            o.fail_on_data_loss,
            o.page_size,
        ) == ("latest", {"x.a": 4}, "string", 10, 7, "c", False, False, 3)

    def test_a_streaming_offset_is_accepted_as_starting_offsets(self) -> None:
        offset = json.dumps(make_offset("e", {"a": 3}))
        assert SourceOptions.parse(
            {"url": "tcp://h:1", "destinations": "a", "startingOffsets": offset}
        ).starting_offsets == {"a": 3}

    @pytest.mark.parametrize(
        ("options", "match"),
        [
            ({}, "url is required"),
            ({"url": "http://x"}, "tcp://"),
            ({"url": "tcp://h:1"}, "destinations is required"),
            ({"url": "tcp://h:1", "destinations": "topic://t"}, "topic"),
            ({"url": "tcp://h:1", "destinations": "a", "bodyType": "xml"}, "bodyType"),
            ({"url": "tcp://h:1", "destinations": "a", "maxMessagesPerTrigger": "0"}, ">= 1"),
            ({"url": "tcp://h:1", "destinations": "a", "maxMessagesPerTrigger": "many"}, "integer"),
            ({"url": "tcp://h:1", "destinations": "a", "startingOffsets": '{"a": -1}'}, "sequence number"),
            ({"url": "tcp://h:1", "destinations": "a", "startingOffsets": "soon"}, "JSON"),
            ({"url": "tcp://h:1", "destinations": "a", "ackOnCommit": "maybe"}, "true or false"),
        ],
    )
    def test_bad_options(self, options: dict[str, str], match: str) -> None:
        with pytest.raises(InvalidConfiguration, match=match):
            SourceOptions.parse(options)

    def test_writer_options(self) -> None:
        w = WriterOptions.parse(
            {"url": "tcp://h:1", "destination": "queue://out", "batchSize": "5", "dedupe": "false", "writeId": "w1"}
        )
        assert (w.destination, w.batch_size, w.dedupe, w.write_id) == ("out", 5, False, "w1")
        assert WriterOptions.parse({"url": "tcp://h:1"}).destination is None
        with pytest.raises(InvalidConfiguration, match="one queue"):
            WriterOptions.parse({"url": "tcp://h:1", "destination": "a.>"})


class TestPlanning:
    def test_resolve_destinations(self) -> None:
        queues = ["orders.eu", "orders.us", "orders.eu.dlq", "audit", "ActiveMQ.DLQ"]
        assert resolve_destinations(["orders.*"], queues) == ["orders.eu", "orders.us"]
        assert resolve_destinations(["orders.>"], queues) == ["orders.eu", "orders.eu.dlq", "orders.us"]
        assert resolve_destinations(["new", "audit"], queues) == ["audit", "new"]  # plain names need not exist

    def test_offsets_have_a_stable_key_order(self) -> None:
        a = make_offset("e", {"b": 2, "a": 1})
        b = make_offset("e", {"a": 1, "b": 2})
        assert json.dumps(a) == json.dumps(b) == '{"epoch": "e", "offsets": {"a": 1, "b": 2}}'
        assert parse_offset(json.dumps(a)) == ("e", {"a": 1, "b": 2})
        with pytest.raises(InvalidConfiguration):
            parse_offset({"a": 1})

    def test_fair_share(self) -> None:
        assert fair_share({"a": 100, "b": 100}, 10) == {"a": 5, "b": 5}
        assert fair_share({"a": 2, "b": 100, "c": 100}, 10) == {"a": 2, "b": 4, "c": 4}
        assert fair_share({"a": 0, "b": 3}, 10) == {"a": 0, "b": 3}
        assert fair_share({"a": 5, "b": 5, "c": 5}, 2, rotate=0) == {"a": 1, "b": 1, "c": 0}
        assert fair_share({"a": 5, "b": 5, "c": 5}, 2, rotate=2) == {"a": 1, "b": 0, "c": 1}

    @given(
        st.dictionaries(st.text(min_size=1, max_size=3), st.integers(0, 50), max_size=6),
        st.integers(0, 200),
        st.integers(0, 10),
    )
    def test_fair_share_properties(self, available: dict[str, int], limit: int, rotate: int) -> None:
        share = fair_share(available, limit, rotate)
        assert set(share) == set(available)
        assert all(0 <= share[d] <= available[d] for d in available)
        assert sum(share.values()) == min(limit, sum(available.values()))
        # max-min fairness: a destination below another's share got all it had
        for d in available:
            for e in available:
                if share[d] + 1 < share[e]:
                    assert share[d] == available[d]

    def test_split_range(self) -> None:
        assert split_range(0, 250, 100) == [(0, 100), (100, 200), (200, 250)]
        assert split_range(5, 5, 100) == []

    def test_stringify(self) -> None:
        assert [stringify(v) for v in (None, True, False, 3, 2.5, "s", b"\x00\xff")] == [
            None,
            "true",
            "false",
            "3",
            "2.5",
            "s",
            "AP8=",
        ]


@pytest.fixture
def tb() -> Iterator[ThreadedBroker]:
    with ThreadedBroker(epoch_source=iter(["e1", "e2"]).__next__) as broker:
        yield broker


class TestWireAndThreadedBroker:
    def test_blocking_client(self, tb: ThreadedBroker) -> None:
        tb.send("q", [f"m{i}" for i in range(25)], properties={"k": "v"})
        with BlockingClient(tb.url) as client:
            info = client.broker_info(["q"])
            assert (info.epoch, info.queues[0].next_seq) == ("e1", 25)
            pages = list(client.iter_range("q", 3, 25, page=10, epoch="e1"))
            assert [len(p) for p in pages] == [10, 10, 2]
            assert [e.seq for p in pages for e in p] == list(range(3, 25))
            assert pages[0].entries[0].message.properties == {"k": "v"}
            assert client.ack_below("q", "c", 10).removed == 10
            result = client.publish([Message("x", Destination.queue("q"), "x")] * 2, dedupe=True)
            assert (result.accepted, result.duplicates) == (1, 1)
            with pytest.raises(StaleEpoch):
                client.read_range("q", epoch="other")
            assert client.broker_info(["q"]).queues[0].size == 16  # the connection survives a refused request
        assert tb.size("q") == 16
        assert [e.seq for e in tb.read("q", 20, 23)] == [20, 21, 22]

    def test_restart_keeps_the_url_and_changes_the_epoch(self, tb: ThreadedBroker) -> None:
        tb.send("q", ["a"])
        url = tb.url
        tb.restart()
        assert (tb.url, tb.epoch, tb.size("q")) == (url, "e2", 0)
        with BlockingClient(url) as client:
            assert client.broker_info().epoch == "e2"

    def test_a_topic_is_read_through_a_durable_subscription(self, tb: ThreadedBroker) -> None:
        """A topic source makes its durable subscription once, then reads and acks its queue like any queue."""
        o = SourceOptions.parse(
            {"url": tb.url, "destinations": "topic://prices", "subscriptionName": "feed", "clientId": "etl"}
        )
        assert (o.topics, o.queue_specs()) == (("prices",), ("durable://etl/feed",))
        with BlockingClient(tb.url, client_id="etl") as subscriber:
            subscriber.ensure_durable_subscription("prices", "feed")
            subscriber.ensure_durable_subscription("prices", "feed")  # there already: kept, as it was
        tb.send("topic://prices", ["p0", "p1", "p2"])
        with BlockingClient(tb.url) as client:
            (position,) = client.broker_info(list(o.queue_specs())).queues
            assert (position.first_seq, position.next_seq) == (0, 3)
            assert [e.message.body for e in client.read_range("durable://etl/feed")] == ["p0", "p1", "p2"]
            assert client.ack_below("durable://etl/feed", "spark", 2).removed == 2
        (view,) = tb.call(lambda: tb.broker.durable_subscriptions("prices"))
        assert (view.client_id, view.name, view.active, view.pending) == ("etl", "feed", False, 1)

    def test_topic_options_need_a_subscription_and_one_plain_topic(self) -> None:
        with pytest.raises(InvalidConfiguration, match="subscriptionName"):
            SourceOptions.parse({"url": "tcp://h:1", "destinations": "topic://prices"})
        with pytest.raises(InvalidConfiguration, match="wildcard"):
            SourceOptions.parse({"url": "tcp://h:1", "destinations": "topic://prices.>", "subscriptionName": "s"})
        with pytest.raises(InvalidConfiguration, match="one topic"):
            SourceOptions.parse({"url": "tcp://h:1", "destinations": "topic://a,topic://b", "subscriptionName": "s"})

    def test_a_broker_that_is_not_there(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with pytest.raises(ConnectionClosed, match="cannot connect"):
            BlockingClient(f"tcp://127.0.0.1:{port}", timeout=2)


def test_minibroker_imports_without_pyspark() -> None:
    """The data source needs the spark extra, the rest of minibroker (and the fixtures module) does not."""
    code = (
        "import sys; sys.modules['pyspark'] = None; sys.modules['pyarrow'] = None\n"
        "import minibroker, minibroker.client, minibroker.plugins.pytest_plugin, minibroker.plugins.spark.testing\n"
        "import minibroker.plugins.spark as s\n"
        "try:\n    s.MinibrokerDataSource\nexcept ImportError as e:\n    print('ImportError', e)\n"
        "print(minibroker.plugins.spark.testing.spark_unavailable())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONSAFEPATH": "1", "PATH": ""},
    ).stdout
    assert "ImportError" in out and "minibroker[spark]" in out


def test_columnar_and_message_by_message_rows_agree() -> None:
    """The reader's fast path (wire column buffers wrapped as Arrow arrays) builds exactly the rows of the slow path,
    in the schema Spark requires, for both body types and a projected user schema."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from minibroker import wire
    from minibroker._core.replay import RangeEntry
    from minibroker.plugins.spark._columns import arrow_schema, columns_to_record_batch, schema_for, to_record_batch

    q = Destination.queue("q")
    entries = [
        RangeEntry(
            0,
            Message(
                "ID:a",
                q,
                "text ✓",
                {"n": 1, "none": None},
                9,
                True,
                1_767_225_600.5,
                correlation_id="c",
                type="T",
                reply_to=Destination.queue("r"),
            ),
            0,
        ),
        RangeEntry(3, Message("ID:b", q, b"\xff\xfe not utf-8", {}, 0, False, 0.000001, group_id="g"), 3),
        RangeEntry(4, Message("ID:c", q, "", {}), 0),
    ]
    projected = StructType([StructField("body", StringType()), StructField("seq", LongType())])
    for spark_schema in (schema_for("binary"), schema_for("string"), projected):
        schema = arrow_schema(spark_schema)
        [frame] = wire.encode_range_columns_results(1, "e", 5, *zip(*entries, strict=True), 1 << 20)
        decoder = wire.FrameDecoder(sender="server", handshake=False)
        decoder.receive_data(frame)
        [part] = decoder.next_frames()
        assert isinstance(part, wire.RangeColumns)
        fast = columns_to_record_batch("q", part, schema)
        slow = to_record_batch("q", entries, schema)
        assert fast.schema.equals(schema) and slow.schema.equals(schema)
        assert fast.equals(slow), (fast.to_pylist(), slow.to_pylist())


def test_a_stream_reader_outlives_the_broker_s_idle_timeout() -> None:
    """The stream reader keeps one connection between micro-batches and sends nothing meanwhile; the broker closes
    a native connection it hears nothing from for its idle timeout. The reader asks again on a new connection (and
    does not keep one past 20 s). Real time: network liveness is what is under test."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    import time

    from pyspark.sql.types import StringType, StructField, StructType

    from minibroker.plugins.spark._reader import MinibrokerStreamReader

    with ThreadedBroker(idle_timeout=0.2) as tb:
        tb.send("q", ["m"])
        options = SourceOptions.parse({"url": tb.url, "destinations": "q"})
        reader = MinibrokerStreamReader(options, StructType([StructField("body", StringType())]))
        assert reader._info().queues[0].next_seq == 1
        time.sleep(0.6)  # the broker closes the quiet connection
        tb.send("q", ["n"])
        assert reader._info().queues[0].next_seq == 2
        reader.stop()
