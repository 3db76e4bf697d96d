"""The converter alone, sans I/O: the handshake, responses, refusals (every command minibroker does not act on is
answered, naming what is refused), authorization and a failed transport, with commands built in Python."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from minibroker import Broker
from minibroker.plugins.auth import AuthorizationEntry, AuthPlugin, User
from minibroker.plugins.openwire import commands as ow
from minibroker.plugins.openwire.converter import OpenWireConverter
from minibroker.plugins.openwire.primitives import marshal_primitive_map, unmarshal_primitive_map
from minibroker.typed import Long

CONNECTION = ow.ConnectionId("ID:test-1-0:1")
SESSION = ow.SessionId(CONNECTION.value, 1)
CONSUMER = ow.ConsumerId(CONNECTION.value, 1, 1)
PRODUCER = ow.ProducerId(CONNECTION.value, 1, 1)
QUEUE = ow.ActiveMQQueue("work")
TX = ow.LocalTransactionId(1, CONNECTION)


def client_offer(**overrides: object) -> ow.WireFormatInfo:
    offer: dict[str, object] = {
        "TightEncodingEnabled": True,
        "CacheEnabled": True,
        "StackTraceEnabled": True,
        "SizePrefixDisabled": False,
        "MaxInactivityDuration": Long(30_000),
        "MaxFrameSize": Long(1 << 40),
        **overrides,
    }
    return ow.WireFormatInfo(version=12, marshalled_properties=marshal_primitive_map(offer))


def text(seq: int, body: str = "hi", **fields: object) -> ow.TextMessage:
    content = len(body.encode()).to_bytes(4, "big") + body.encode()
    return ow.TextMessage(
        **{
            "command_id": 100 + seq,
            "response_required": True,
            "producer_id": PRODUCER,
            "destination": QUEUE,
            "message_id": ow.MessageId(None, PRODUCER, seq),
            "persistent": True,
            "content": content,
            **fields,
        }  # type: ignore[arg-type]
    )


@pytest.fixture
async def broker() -> AsyncIterator[Broker]:
    async with Broker() as broker:
        yield broker


def connected(broker: Broker, user: str | None = None, password: str | None = None) -> OpenWireConverter:
    converter = OpenWireConverter(broker)
    converter.receive(client_offer())
    converter.receive(ow.ConnectionInfo(1, True, CONNECTION, "client-1", password, user))
    out = converter.take_commands()
    assert [type(c) for c in out] == [ow.BrokerInfo, ow.ConnectionControl, ow.Response], out
    converter.receive(ow.SessionInfo(2, False, SESSION))
    return converter


async def test_handshake_takes_the_and_and_the_min(broker: Broker) -> None:
    converter = OpenWireConverter(broker, max_frame_size=1 << 20)
    hello = converter.hello()
    assert hello.magic == b"ActiveMQ" and hello.version == 12
    offer = unmarshal_primitive_map(hello.marshalled_properties or b"")
    assert offer is not None
    assert (offer["TightEncodingEnabled"], offer["CacheEnabled"], offer["StackTraceEnabled"]) == (False, False, False)
    converter.receive(client_offer(MaxInactivityDuration=Long(10_000), MaxFrameSize=Long(4096)))
    assert converter.negotiated and converter.fmt.version == 12 and not converter.fmt.stack_trace
    assert (converter.fmt.max_frame_size, converter.max_inactivity_ms) == (4096, 10_000)
    (info,) = converter.take_commands()
    assert isinstance(info, ow.BrokerInfo) and info.broker_name == broker.name


@pytest.mark.parametrize(
    "first",
    [
        ow.ConnectionInfo(1, True, CONNECTION),  # nothing before WireFormatInfo
        ow.WireFormatInfo(magic=b"NotAMQ!!", version=12),
        ow.WireFormatInfo(version=11),  # minibroker speaks v12 only
    ],
)
async def test_a_bad_start_fails_the_connection(broker: Broker, first: ow.DataStructure) -> None:
    converter = OpenWireConverter(broker)
    converter.receive(first)
    (error,) = converter.take_commands()
    assert isinstance(error, ow.ConnectionErrorCommand) and error.exception is not None
    assert error.exception.class_name == "java.io.IOException"
    assert converter.close_after_output and converter.connection is None


#: every command minibroker does not act on, and the feature its ExceptionResponse names
REFUSED: list[tuple[ow.BaseCommand, str]] = [
    (ow.BrokerInfo(), "openwire-network-bridge"),
    (ow.MessageDispatchNotification(), "openwire-network-bridge"),
    (ow.BrokerSubscriptionInfo(), "openwire-network-bridge"),
    (ow.ConnectionInfo(connection_id=CONNECTION, broker_master_connector=True), "openwire-network-bridge"),
    (ow.ProducerInfo(producer_id=PRODUCER, broker_path=(ow.BrokerId("b"),)), "openwire-network-bridge"),
    (
        ow.ConsumerInfo(consumer_id=CONSUMER, destination=QUEUE, network_subscription=True),
        "destination-option-networkSubscription",
    ),
    (text(1, broker_path=(ow.BrokerId("b"),)), "openwire-network-bridge"),
    (ow.ReplayCommand(), "openwire-replay"),
    (ow.ControlCommand(command="shutdown"), "openwire-control-command"),
    (ow.TransactionInfo(transaction_id=ow.XATransactionId(1, b"g", b"b")), "openwire-xa-transaction"),
    (ow.TransactionInfo(transaction_id=TX, type=ow.TransactionType.PREPARE), "openwire-xa-transaction"),
    (ow.TransactionInfo(transaction_id=TX, type=ow.TransactionType.RECOVER), "openwire-xa-transaction"),
    (text(2, transaction_id=ow.XATransactionId(1, b"g", b"b")), "openwire-xa-transaction"),
    (ow.BlobMessage(destination=QUEUE, message_id=ow.MessageId(None, PRODUCER, 3)), "openwire-blob-message"),
    (ow.Message(destination=QUEUE, message_id=ow.MessageId(None, PRODUCER, 4)), "bodiless-message"),
    (text(5, marshalled_properties=marshal_primitive_map({"nested": {"a": 1}})), "openwire-nested-property"),
    (ow.ConsumerInfo(consumer_id=CONSUMER, destination=QUEUE, retroactive=True), "destination-option-retroactive"),
    (
        ow.ConsumerInfo(consumer_id=CONSUMER, destination=QUEUE, maximum_pending_message_limit=10),
        "destination-option-maximumPendingMessageLimit",
    ),
    (ow.Response(), "openwire-unknown-command"),
    (ow.ExceptionResponse(), "openwire-unknown-command"),
    (ow.MessageDispatch(), "openwire-unknown-command"),
    (ow.ProducerAck(), "openwire-unknown-command"),
    (ow.ConnectionErrorCommand(), "openwire-unknown-command"),
    (ow.DataArrayResponse(), "openwire-unknown-command"),
]


@pytest.mark.parametrize(("command", "feature"), REFUSED, ids=[f"{type(c).__name__}-{f}" for c, f in REFUSED])
async def test_every_refused_command_is_answered_naming_the_feature(
    broker: Broker, command: ow.BaseCommand, feature: str
) -> None:
    converter = connected(broker)
    command.command_id, command.response_required = 77, True
    converter.receive(command)
    (answer,) = converter.take_commands()
    assert isinstance(answer, ow.ExceptionResponse) and answer.correlation_id == 77
    assert answer.exception is not None
    assert answer.exception.class_name == "java.lang.UnsupportedOperationException"
    assert (answer.exception.message or "").startswith(f"Unsupported feature [{feature}]: ")
    assert not converter.close_after_output  # the connection goes on, as ActiveMQ's does
    converter.receive(ow.KeepAliveInfo(78, True))
    assert converter.take_commands() == [ow.KeepAliveInfo()]  # answered in kind


async def test_a_failing_command_that_wants_no_response_gets_a_connection_error(broker: Broker) -> None:
    converter = connected(broker)
    converter.receive(ow.ControlCommand(command="shutdown"))
    (error,) = converter.take_commands()
    assert isinstance(error, ow.ConnectionErrorCommand) and error.connection_id == CONNECTION
    assert error.exception is not None and "[openwire-control-command]" in (error.exception.message or "")
    assert not converter.close_after_output


async def test_local_transaction_commit_and_rollback(broker: Broker) -> None:
    converter = connected(broker)
    converter.receive(ow.ProducerInfo(3, True, PRODUCER, QUEUE))
    converter.receive(ow.TransactionInfo(4, False, CONNECTION, TX, ow.TransactionType.BEGIN))
    converter.receive(text(1, transaction_id=TX, response_required=False))
    assert (broker.queue_statistics("work") or pytest.fail()).size == 0
    converter.receive(ow.TransactionInfo(5, True, CONNECTION, TX, ow.TransactionType.COMMIT_ONE_PHASE))
    assert (broker.queue_statistics("work") or pytest.fail()).size == 1
    tx2 = ow.LocalTransactionId(2, CONNECTION)
    converter.receive(ow.TransactionInfo(6, False, CONNECTION, tx2, ow.TransactionType.BEGIN))
    converter.receive(text(2, transaction_id=tx2, response_required=False))
    converter.receive(ow.TransactionInfo(7, True, CONNECTION, tx2, ow.TransactionType.ROLLBACK))
    assert (broker.queue_statistics("work") or pytest.fail()).size == 1
    converter.receive(ow.TransactionInfo(8, True, CONNECTION, tx2, ow.TransactionType.COMMIT_ONE_PHASE))
    out = converter.take_commands()
    assert [type(c).__name__ for c in out] == ["Response", "Response", "Response", "ExceptionResponse"]
    failure = out[-1]
    assert isinstance(failure, ow.ExceptionResponse) and failure.exception is not None
    assert failure.exception.message == "Transaction 'TX:2' has not been started."


async def test_a_failed_transport_gives_back_what_the_client_held(broker: Broker) -> None:
    converter = connected(broker)
    converter.receive(text(1))
    converter.receive(ow.ConsumerInfo(3, True, CONSUMER, destination=QUEUE, prefetch_size=10))
    out = converter.take_commands()
    assert [type(c) for c in out] == [ow.Response, ow.Response, ow.MessageDispatch]
    dispatch = out[-1]
    assert isinstance(dispatch, ow.MessageDispatch) and isinstance(dispatch.message, ow.TextMessage)
    assert dispatch.consumer_id == CONSUMER and dispatch.message.message_id == ow.MessageId(None, PRODUCER, 1, 1)
    converter.connection_lost()
    stats = broker.queue_statistics("work")
    assert stats is not None and (stats.size, stats.inflight, stats.consumers) == (1, 0, 0)
    again = connected(broker)
    again.receive(ow.ConsumerInfo(3, True, CONSUMER, destination=QUEUE, prefetch_size=10))
    redelivered = again.take_commands()[-1]
    assert isinstance(redelivered, ow.MessageDispatch) and redelivered.redelivery_counter == 1
    assert redelivered.message is not None
    last = redelivered.message.message_id
    again.receive(ow.MessageAck(consumer_id=CONSUMER, ack_type=2, last_message_id=last, message_count=1))
    again.receive(ow.ShutdownInfo())
    assert again.close_after_output and again.closed
    assert (broker.queue_statistics("work") or pytest.fail()).size == 0


async def test_authorization_is_the_connections() -> None:
    users = {"app": User("app-pw", {"apps"})}
    entries = [AuthorizationEntry("work", read="apps", write="apps", admin="apps")]
    async with Broker(plugins=[AuthPlugin(users, entries)]) as broker:
        refused = OpenWireConverter(broker)
        refused.receive(client_offer())
        refused.receive(ow.ConnectionInfo(1, True, CONNECTION, "c", "wrong", "app"))
        answer = refused.take_commands()[-1]
        assert isinstance(answer, ow.ExceptionResponse) and answer.exception is not None
        assert answer.exception.class_name == "java.lang.SecurityException" and refused.close_after_output
        converter = connected(broker, "app", "app-pw")
        converter.receive(text(1, destination=ow.ActiveMQQueue("elsewhere")))
        (denied,) = converter.take_commands()
        assert isinstance(denied, ow.ExceptionResponse) and denied.exception is not None
        assert denied.exception.class_name == "java.lang.SecurityException"
        converter.receive(text(2))
        assert converter.take_commands() == [ow.Response(correlation_id=102)]


async def test_a_failover_clients_controls(broker: Broker) -> None:
    """ConnectionControl (faultTolerant) is noted; a ConsumerControl giving a restored prefetch-0 consumer its
    prefetch back is carried out; one that would close, start, stop or flush a consumer is refused."""
    converter = connected(broker)
    converter.receive(ow.ConnectionControl(3, True, fault_tolerant=True))
    assert converter.take_commands() == [ow.Response(correlation_id=3)] and converter.fault_tolerant
    converter.receive(text(1))
    converter.receive(ow.ConsumerInfo(4, True, CONSUMER, destination=QUEUE, prefetch_size=0))
    assert [type(c) for c in converter.take_commands()] == [ow.Response, ow.Response]  # nothing dispatched
    converter.receive(ow.ConsumerControl(5, False, QUEUE, consumer_id=CONSUMER, prefetch=10))
    (dispatch,) = converter.take_commands()
    assert isinstance(dispatch, ow.MessageDispatch) and dispatch.consumer_id == CONSUMER
    assert (broker.queue_statistics("work") or pytest.fail()).consumers == 1
    converter.receive(ow.ConsumerControl(6, True, QUEUE, consumer_id=CONSUMER, prefetch=10, close=True))
    (refused,) = converter.take_commands()
    assert isinstance(refused, ow.ExceptionResponse) and refused.exception is not None
    assert "[openwire-control-command]" in (refused.exception.message or "")


async def test_a_consumer_control_changes_a_consumers_prefetch(broker: Broker) -> None:
    """ConsumerControl's prefetch is the subscription's from then on (ActiveMQ's setPrefetchSize), for any consumer:
    a larger window is filled at once, a smaller one takes nothing back and lets no more in until acks make room."""
    converter = connected(broker)
    for seq in range(1, 6):
        converter.receive(text(seq))
    converter.receive(ow.ConsumerInfo(4, True, CONSUMER, destination=QUEUE, prefetch_size=1))
    commands = converter.take_commands()
    assert sum(isinstance(command, ow.MessageDispatch) for command in commands) == 1
    converter.receive(ow.ConsumerControl(5, False, QUEUE, consumer_id=CONSUMER, prefetch=3))
    assert [type(command) for command in converter.take_commands()] == [ow.MessageDispatch, ow.MessageDispatch]
    converter.receive(ow.ConsumerControl(6, False, QUEUE, consumer_id=CONSUMER, prefetch=1))
    assert converter.take_commands() == []
    stats = broker.queue_statistics("work") or pytest.fail()
    assert stats.inflight == 3 and stats.size == 5
