"""Issue 17: every input ActiveMQ gives a meaning to is reproduced or refused with UnsupportedFeature, never misread.

The first class enumerates the audit table (minibroker/features.py) through its check functions; the others drive
the silent cases of the issue through real edges: the in-process client, the native TCP protocol and STOMP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest
import pytest_asyncio
from support.transports import TRANSPORTS, close_servers, connect_to

from minibroker import Broker, DestinationPolicy, ManualClock
from minibroker.client import AckMode, Connection, Session, connect
from minibroker.errors import MessageFormatError, MinibrokerError, UnsupportedFeature
from minibroker.features import FEATURES, Kind, Status
from minibroker.message import Destination, PropertyValue
from minibroker.refusals import (
    body_refusal,
    check_browser_destination,
    check_connection_url,
    check_consumer_destination,
    check_durable_destination,
    check_message_properties,
    check_send_destination,
    check_stomp_subscribe_headers,
    refuse,
)
from minibroker.wire.errors import error_for

#: refused rows whose only edge is the STOMP converter (driven in tests/plugins/stomp/test_unsupported_features.py)
STOMP_ONLY = {"stomp-object-transformation-class", "stomp-advisory"}
#: refused rows whose only edge is OpenWire: tests/plugins/openwire/test_converter.py sends each
OPENWIRE_ONLY = {r.id for r in FEATURES if r.kind is Kind.OPENWIRE and r.status is Status.REFUSED}


def refusals(row_kind: Kind, example: str, row_id: str = "") -> set[str]:
    """The feature ids the checks of ``row_kind`` raise for ``example`` (empty: accepted everywhere); a row whose
    id ends in ``-send`` or ``-consumer`` is about that edge only."""
    raised: set[str] = set()
    calls: list[Callable[[], None]] = []
    if row_kind in (Kind.DESTINATION_NAME, Kind.DESTINATION_OPTION):
        try:
            dest = Destination.parse(example)
        except UnsupportedFeature as exc:
            return {exc.feature}
        calls = [lambda: check_consumer_destination(dest), lambda: check_send_destination(dest)]
        if row_id.endswith("-durable"):
            calls = [lambda: check_durable_destination(dest)]
        elif row_id.endswith("-browser"):
            calls = [lambda: check_browser_destination(dest)]
        elif row_id.endswith("-send"):
            calls = calls[1:]
        elif row_id.endswith("-consumer") or row_id.startswith("advisory-"):  # advisories are read, never sent
            calls = calls[:1]
    elif row_kind is Kind.MESSAGE_PROPERTY:
        calls = [lambda: check_message_properties({example: 1000}, True)]
    elif row_kind is Kind.STOMP_HEADER:
        calls = [lambda: check_stomp_subscribe_headers({example: "true"})]
    elif row_kind is Kind.MESSAGE_BODY:
        body = None if example == "None" else example
        if body is None:
            raised.add(body_refusal(body).feature)
    elif row_kind is Kind.CONNECTION_URI:
        calls = [lambda: check_connection_url(example)]
    for call in calls:
        try:
            call()
        except UnsupportedFeature as exc:
            raised.add(exc.feature)
    return raised


class TestTheAudit:
    def test_ids_are_unique_and_every_row_is_complete(self) -> None:
        ids = [row.id for row in FEATURES]
        assert len(ids) == len(set(ids))
        for row in FEATURES:
            assert row.input and row.note, row.id
            if row.status is Status.VERIFIED:
                assert row.recordings, f"{row.id}: a verified row names its recordings"
            if row.status is Status.IMPLEMENTED:
                assert row.tests, f"{row.id}: an implemented row names its tests"

    @pytest.mark.parametrize(
        "row",
        [r for r in FEATURES if r.status is Status.REFUSED and r.id not in STOMP_ONLY | OPENWIRE_ONLY],
        ids=lambda r: r.id,
    )
    def test_every_refused_row_is_refused_by_its_check(self, row: object) -> None:
        from minibroker.features import Feature

        assert isinstance(row, Feature)
        assert row.example is not None, f"{row.id}: a refused row needs an example to prove it"
        assert row.id in refusals(row.kind, row.example, row.id)

    def test_the_openwire_refusals_are_each_sent_by_the_converter_test(self) -> None:
        """Each OpenWire row is refused by the converter, which answers the command with an ExceptionResponse naming
        it: the converter test sends one of each."""
        from pathlib import Path

        source = (Path(__file__).parent / "plugins" / "openwire" / "test_converter.py").read_text()
        assert len(OPENWIRE_ONLY) >= 7
        for feature in OPENWIRE_ONLY:
            assert f'"{feature}"' in source, feature

    def test_the_stomp_only_refusals_are_driven_over_stomp(self) -> None:
        """Rows whose only edge is the STOMP converter have their ERROR-frame test in tests/plugins/stomp."""
        from pathlib import Path

        source = (Path(__file__).parent / "plugins" / "stomp" / "test_unsupported_features.py").read_text()
        refused = {r.id for r in FEATURES if r.status is Status.REFUSED}
        assert refused >= STOMP_ONLY
        for feature in STOMP_ONLY:
            assert f'"{feature}"' in source, feature

    @pytest.mark.parametrize(
        "row", [r for r in FEATURES if r.status is not Status.REFUSED and r.example is not None], ids=lambda r: r.id
    )
    def test_every_supported_example_passes_its_check(self, row: object) -> None:
        from minibroker.features import Feature

        assert isinstance(row, Feature)
        assert row.example is not None
        assert refusals(row.kind, row.example, row.id) == set()

    def test_the_error_names_the_feature_and_the_value_and_is_a_not_implemented_error(self) -> None:
        error = refuse("wildcard-browser", "queue://orders.>")
        assert isinstance(error, MinibrokerError) and isinstance(error, NotImplementedError)
        assert error.feature == "wildcard-browser" and error.value == "queue://orders.>"
        assert error.message.startswith("Unsupported feature [wildcard-browser]: ") and "'queue://orders.>'" in str(
            error
        )

    def test_the_error_crosses_the_native_wire_with_its_feature(self) -> None:
        sent = refuse("wildcard-browser", "queue://qa,qb")
        received = error_for(sent.code, sent.message)
        assert type(received) is UnsupportedFeature and received.feature == "wildcard-browser"

    async def test_wildcards_stay_legal_in_policy_patterns(self) -> None:
        """Policies (like auth and the Spark source) match wildcards through destination_map, not the checks."""
        policy = DestinationPolicy(dead_letter_strategy="individual", queue_prefix="DLQ.")
        async with Broker(clock=ManualClock(), policies={"orders.>": policy}) as broker:
            assert broker.core._policy_for(Destination.queue("orders.eu")) == policy

    def test_scheduler_properties_are_ignored_without_scheduler_support_as_in_activemq(self) -> None:
        check_message_properties({"AMQ_SCHEDULED_PERIOD": 1000, "AMQ_SCHEDULED_REPEAT": 2}, False)
        check_message_properties({"AMQ_SCHEDULED_REPEAT": 0, "AMQ_SCHEDULED_CRON": ""}, True)
        check_message_properties({"AMQ_SCHEDULED_CRON": "* * * * *"}, True)  # the scheduler reads it

    def test_plain_and_vendor_properties_pass(self) -> None:
        check_message_properties({"color": "red", "JMSXAppID": "app", "AMQ_OTHER": 1}, True)


@pytest_asyncio.fixture
async def broker() -> AsyncIterator[Broker]:
    async with Broker(clock=ManualClock(), scheduler_support=True) as b:
        yield b
    await close_servers()


async def session_on(broker: Broker, transport: str) -> tuple[Connection, Session]:
    conn = await connect_to(broker, transport)
    return conn, await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)


CONSUMER_CASES = [
    ("topic://ActiveMQ.Advisory.SlowConsumer.Queue.orders", "advisory"),
    ("queue://orders?consumer.retroactive=true", "destination-option-retroactive"),
]
SEND_CASES = [
    ("queue://orders?consumer.prefetchSize=1", "destination-options"),
]
PROPERTY_CASES = [
    ({"JMSXGroupID": "g"}, "group-id-property"),
]


@pytest.mark.parametrize("transport", TRANSPORTS)
class TestNativeEdges:
    """In-process and over the native TCP protocol: the same typed error, and nothing left behind."""

    @pytest.mark.parametrize(("destination", "feature"), CONSUMER_CASES)
    async def test_consumer_is_refused(self, broker: Broker, transport: str, destination: str, feature: str) -> None:
        conn, session = await session_on(broker, transport)
        async with conn:
            with pytest.raises(UnsupportedFeature) as caught:
                await session.create_consumer(destination)
            assert caught.value.feature == feature
            assert not session.consumers
            assert broker.queue_names() == []

    @pytest.mark.parametrize(("destination", "feature"), SEND_CASES)
    async def test_send_is_refused(self, broker: Broker, transport: str, destination: str, feature: str) -> None:
        conn, session = await session_on(broker, transport)
        async with conn:
            producer = await session.create_producer(destination)
            with pytest.raises(UnsupportedFeature) as caught:
                await producer.send("m")
            assert caught.value.feature == feature
            assert broker.queue_names() == []

    @pytest.mark.parametrize(("properties", "feature"), PROPERTY_CASES)
    async def test_special_property_is_refused(
        self, broker: Broker, transport: str, properties: dict[str, PropertyValue], feature: str
    ) -> None:
        conn, session = await session_on(broker, transport)
        async with conn:
            producer = await session.create_producer("orders")
            with pytest.raises(UnsupportedFeature) as caught:
                await producer.send("m", properties=properties)
            assert caught.value.feature == feature
            assert broker.queue("orders").size == 0
            await producer.send("m", properties={"AMQ_SCHEDULED_DELAY": 1000})  # the delay alone works
            assert broker.queue("orders").size == 0 and broker.clock is not None

    async def test_a_send_to_a_wildcard_name_fills_a_queue_of_that_literal_name(
        self, broker: Broker, transport: str
    ) -> None:
        """As ActiveMQ 5.17.2 does (tests/conformance/recordings/wildcard_send_literal_queue.json)."""
        conn, session = await session_on(broker, transport)
        async with conn:
            producer = await session.create_producer("orders.*")
            await producer.send("m")
            assert broker.queue("orders.*").size == 1 and not broker.queue("orders.a").exists

    async def test_a_queue_named_like_a_virtual_topic_is_a_plain_queue(self, broker: Broker, transport: str) -> None:
        conn, session = await session_on(broker, transport)
        async with conn:
            producer = await session.create_producer("VirtualTopic.orders")
            await producer.send("m")
            await producer.send("m")
            assert broker.queue("VirtualTopic.orders").size == 2

    async def test_a_message_without_a_body_is_refused(self, broker: Broker, transport: str) -> None:
        conn, session = await session_on(broker, transport)
        async with conn:
            producer = await session.create_producer("orders")
            with pytest.raises(UnsupportedFeature) as caught:
                await producer.send(None)  # type: ignore[arg-type]
            assert caught.value.feature == "bodiless-message" and not broker.queue("orders").exists

    @pytest.mark.parametrize("body", [{1, 2}, 3.5, object()])
    async def test_a_body_of_no_jms_type_is_a_message_format_error(
        self, broker: Broker, transport: str, body: object
    ) -> None:
        conn, session = await session_on(broker, transport)
        async with conn:
            producer = await session.create_producer("orders")
            with pytest.raises(MessageFormatError):
                await producer.send(body)  # type: ignore[arg-type]
            assert not broker.queue("orders").exists

    async def test_plain_names_still_work(self, broker: Broker, transport: str) -> None:
        conn, session = await session_on(broker, transport)
        async with conn:
            consumer = await session.create_consumer("orders.eu")
            producer = await session.create_producer("orders.eu")
            await producer.send("m", properties={"JMSXAppID": "a"})
            received = await consumer.receive(timeout=5)
            assert received is not None and received.body == "m"


class TestClientOnly:
    async def test_temporary_destination_uris_name_queues_and_topics(self) -> None:
        """``temp-queue://``/``temp-topic://`` name the broker's temporary destinations (ActiveMQ's toString)."""
        assert Destination.parse("temp-queue://ID:c:1") == Destination.queue("ID:c:1")
        assert Destination.parse("temp-topic://ID:c:2") == Destination.topic("ID:c:2")

    @pytest.mark.parametrize(
        ("url", "feature"),
        [
            ("failover:(tcp://127.0.0.1:1)", "failover-uri"),
            ("tcp://127.0.0.1:1?jms.prefetchPolicy.all=1", "uri-options"),
            ("vm://localhost", "transport-scheme"),
        ],
    )
    async def test_connection_url_is_refused_before_connecting(self, url: str, feature: str) -> None:
        with pytest.raises(UnsupportedFeature) as caught:
            await connect(url)
        assert caught.value.feature == feature

    async def test_a_browser_on_a_wildcard_is_refused(self, broker: Broker) -> None:
        async with await connect(broker) as conn:
            session = await conn.create_session(AckMode.AUTO_ACKNOWLEDGE)
            with pytest.raises(UnsupportedFeature) as caught:
                await session.create_browser("orders.>")
            assert caught.value.feature == "wildcard-browser"


def test_one_list_of_refused_destination_options() -> None:
    """The checks (minibroker.refusals) and the table (minibroker.features) name the same refused options."""
    from minibroker.features import _DESTINATION_OPTIONS
    from minibroker.refusals import REFUSED_OPTIONS

    assert {name for name, _ in _DESTINATION_OPTIONS} == set(REFUSED_OPTIONS)
