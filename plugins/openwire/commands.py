# ruff: noqa: RUF009  (each field is declared with field(), which wraps attrs.field: the codec reads its wire kind)
"""OpenWire v12's data types, one class per type: the class *is* the codec's row.

Each class lists its wire fields in the order ``openwire/v12/*Marshaller.java`` writes them in the loose encoding,
each declared with :func:`field` and its :class:`Kind`; a subclass's fields follow its parent's, as the Java
marshallers call their parent first. :mod:`.codec` reads the layout from these declarations (``TYPES``: type byte
to class), so adding a type is adding a class. Names are ActiveMQ's, in snake case.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar

import attrs

__all__ = ["TYPES", "DataStructure", "JavaThrowable", "Kind", "field"]


class Kind(enum.Enum):
    """How one field travels in the loose encoding (BaseDataStreamMarshaller's ``looseMarshal*``)."""

    BYTE = "byte"
    BOOL = "boolean"
    INT = "int"
    LONG = "long"
    STRING = "string"  # present flag, then writeUTF
    NESTED = "nested"  # present flag, type byte, the object's fields
    CACHED = "cached"  # as NESTED when the marshal cache is off (always: the server offers none)
    BYTES = "bytes"  # present flag, int length, the bytes (byte arrays and byte sequences alike)
    MAGIC = "magic"  # eight bytes, no flag (WireFormatInfo's "ActiveMQ")
    THROWABLE = "throwable"  # present flag, class name, message (and, with stack traces, the trace and the cause)
    ARRAY = "array"  # present flag, short count, that many NESTED


_DEFAULTS: dict[Kind, Any] = {Kind.BYTE: 0, Kind.BOOL: False, Kind.INT: 0, Kind.LONG: 0, Kind.MAGIC: b"ActiveMQ"}


def field(kind: Kind, default: Any = None) -> Any:
    """A wire field of ``kind`` (its default: zero, False, or None for what may be absent)."""
    return attrs.field(default=_DEFAULTS.get(kind) if default is None else default, metadata={"wire": kind})


@attrs.frozen(slots=True)
class JavaThrowable:
    """An exception as OpenWire carries it: its Java class and message; a trace and a cause only when both sides
    enabled stack traces (minibroker offers none)."""

    class_name: str | None
    message: str | None
    stack: tuple[tuple[str | None, str | None, str | None, int], ...] = ()
    cause: JavaThrowable | None = None


@attrs.define(slots=True, eq=True)
class DataStructure:
    """Any OpenWire value with a type byte."""

    TYPE: ClassVar[int] = -1


# -- identifiers --------------------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class ConnectionId(DataStructure):
    TYPE: ClassVar[int] = 120
    value: str | None = field(Kind.STRING)


@attrs.frozen(slots=True)
class SessionId(DataStructure):
    TYPE: ClassVar[int] = 121
    connection_id: str | None = field(Kind.STRING)
    value: int = field(Kind.LONG)


@attrs.frozen(slots=True)
class ConsumerId(DataStructure):
    TYPE: ClassVar[int] = 122
    connection_id: str | None = field(Kind.STRING)
    session_id: int = field(Kind.LONG)
    value: int = field(Kind.LONG)


@attrs.frozen(slots=True)
class ProducerId(DataStructure):
    TYPE: ClassVar[int] = 123
    connection_id: str | None = field(Kind.STRING)
    value: int = field(Kind.LONG)
    session_id: int = field(Kind.LONG)

    def __str__(self) -> str:  # ProducerId.toString(): the prefix of its messages' ids
        return f"{self.connection_id}:{self.session_id}:{self.value}"


@attrs.frozen(slots=True)
class BrokerId(DataStructure):
    TYPE: ClassVar[int] = 124
    value: str | None = field(Kind.STRING)


@attrs.frozen(slots=True)
class MessageId(DataStructure):
    TYPE: ClassVar[int] = 110
    text_view: str | None = field(Kind.STRING)
    producer_id: ProducerId | None = field(Kind.CACHED)
    producer_sequence_id: int = field(Kind.LONG)
    broker_sequence_id: int = field(Kind.LONG)

    def __str__(self) -> str:  # MessageId.toString(): the JMSMessageID
        if self.text_view is not None:
            return self.text_view if self.text_view.startswith("ID:") else "ID:" + self.text_view
        return f"{self.producer_id}:{self.producer_sequence_id}"


@attrs.frozen(slots=True)
class LocalTransactionId(DataStructure):
    TYPE: ClassVar[int] = 111
    value: int = field(Kind.LONG)
    connection_id: ConnectionId | None = field(Kind.CACHED)


@attrs.frozen(slots=True)
class XATransactionId(DataStructure):
    TYPE: ClassVar[int] = 112
    format_id: int = field(Kind.INT)
    global_transaction_id: bytes | None = field(Kind.BYTES)
    branch_qualifier: bytes | None = field(Kind.BYTES)


# -- destinations -------------------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class ActiveMQDestination(DataStructure):
    physical_name: str | None = field(Kind.STRING)


@attrs.frozen(slots=True)
class ActiveMQQueue(ActiveMQDestination):
    TYPE: ClassVar[int] = 100


@attrs.frozen(slots=True)
class ActiveMQTopic(ActiveMQDestination):
    TYPE: ClassVar[int] = 101


@attrs.frozen(slots=True)
class ActiveMQTempQueue(ActiveMQDestination):
    TYPE: ClassVar[int] = 102


@attrs.frozen(slots=True)
class ActiveMQTempTopic(ActiveMQDestination):
    TYPE: ClassVar[int] = 103


# -- the handshake and the plumbing -------------------------------------------------------------------------------


@attrs.define(slots=True)
class WireFormatInfo(DataStructure):
    """The first frame each side sends: its version and its options (a primitive map), settled by AND and min."""

    TYPE: ClassVar[int] = 1
    magic: bytes = field(Kind.MAGIC)
    version: int = field(Kind.INT)
    marshalled_properties: bytes | None = field(Kind.BYTES)


@attrs.define(slots=True)
class BaseCommand(DataStructure):
    """What every command starts with: its id (a Response's correlation id names it) and whether it wants one."""

    command_id: int = field(Kind.INT)
    response_required: bool = field(Kind.BOOL)


@attrs.define(slots=True)
class BrokerInfo(BaseCommand):
    TYPE: ClassVar[int] = 2
    broker_id: BrokerId | None = field(Kind.CACHED)
    broker_url: str | None = field(Kind.STRING)
    peer_broker_infos: tuple[DataStructure | None, ...] | None = field(Kind.ARRAY)
    broker_name: str | None = field(Kind.STRING)
    slave_broker: bool = field(Kind.BOOL)
    master_broker: bool = field(Kind.BOOL)
    fault_tolerant_configuration: bool = field(Kind.BOOL)
    duplex_connection: bool = field(Kind.BOOL)
    network_connection: bool = field(Kind.BOOL)
    connection_id: int = field(Kind.LONG)
    broker_upload_url: str | None = field(Kind.STRING)
    network_properties: str | None = field(Kind.STRING)


@attrs.define(slots=True)
class ConnectionInfo(BaseCommand):
    TYPE: ClassVar[int] = 3
    connection_id: ConnectionId | None = field(Kind.CACHED)
    client_id: str | None = field(Kind.STRING)
    password: str | None = field(Kind.STRING)
    user_name: str | None = field(Kind.STRING)
    broker_path: tuple[DataStructure | None, ...] | None = field(Kind.ARRAY)
    broker_master_connector: bool = field(Kind.BOOL)
    manageable: bool = field(Kind.BOOL)
    client_master: bool = field(Kind.BOOL)
    fault_tolerant: bool = field(Kind.BOOL)
    failover_reconnect: bool = field(Kind.BOOL)
    client_ip: str | None = field(Kind.STRING)


@attrs.define(slots=True)
class SessionInfo(BaseCommand):
    TYPE: ClassVar[int] = 4
    session_id: SessionId | None = field(Kind.CACHED)


@attrs.define(slots=True)
class ConsumerInfo(BaseCommand):
    TYPE: ClassVar[int] = 5
    consumer_id: ConsumerId | None = field(Kind.CACHED)
    browser: bool = field(Kind.BOOL)
    destination: ActiveMQDestination | None = field(Kind.CACHED)
    prefetch_size: int = field(Kind.INT)
    maximum_pending_message_limit: int = field(Kind.INT)
    dispatch_async: bool = field(Kind.BOOL)
    selector: str | None = field(Kind.STRING)
    client_id: str | None = field(Kind.STRING)
    subscription_name: str | None = field(Kind.STRING)
    no_local: bool = field(Kind.BOOL)
    exclusive: bool = field(Kind.BOOL)
    retroactive: bool = field(Kind.BOOL)
    priority: int = field(Kind.BYTE)
    broker_path: tuple[DataStructure | None, ...] | None = field(Kind.ARRAY)
    additional_predicate: DataStructure | None = field(Kind.NESTED)
    network_subscription: bool = field(Kind.BOOL)
    optimized_acknowledge: bool = field(Kind.BOOL)
    no_range_acks: bool = field(Kind.BOOL)
    network_consumer_path: tuple[DataStructure | None, ...] | None = field(Kind.ARRAY)


@attrs.define(slots=True)
class ProducerInfo(BaseCommand):
    TYPE: ClassVar[int] = 6
    producer_id: ProducerId | None = field(Kind.CACHED)
    destination: ActiveMQDestination | None = field(Kind.CACHED)
    broker_path: tuple[DataStructure | None, ...] | None = field(Kind.ARRAY)
    dispatch_async: bool = field(Kind.BOOL)
    window_size: int = field(Kind.INT)


class TransactionType(enum.IntEnum):
    BEGIN = 0
    PREPARE = 1
    COMMIT_ONE_PHASE = 2
    COMMIT_TWO_PHASE = 3
    ROLLBACK = 4
    RECOVER = 5
    FORGET = 6
    END = 7


@attrs.define(slots=True)
class TransactionInfo(BaseCommand):
    TYPE: ClassVar[int] = 7
    connection_id: ConnectionId | None = field(Kind.CACHED)
    transaction_id: DataStructure | None = field(Kind.CACHED)
    type: int = field(Kind.BYTE)


@attrs.define(slots=True)
class DestinationInfo(BaseCommand):
    TYPE: ClassVar[int] = 8
    ADD: ClassVar[int] = 0
    REMOVE: ClassVar[int] = 1
    connection_id: ConnectionId | None = field(Kind.CACHED)
    destination: ActiveMQDestination | None = field(Kind.CACHED)
    operation_type: int = field(Kind.BYTE)
    timeout: int = field(Kind.LONG)
    broker_path: tuple[DataStructure | None, ...] | None = field(Kind.ARRAY)


@attrs.define(slots=True)
class RemoveSubscriptionInfo(BaseCommand):
    TYPE: ClassVar[int] = 9
    connection_id: ConnectionId | None = field(Kind.CACHED)
    subscription_name: str | None = field(Kind.STRING)
    client_id: str | None = field(Kind.STRING)


@attrs.define(slots=True)
class KeepAliveInfo(BaseCommand):
    TYPE: ClassVar[int] = 10


@attrs.define(slots=True)
class ShutdownInfo(BaseCommand):
    TYPE: ClassVar[int] = 11


@attrs.define(slots=True)
class RemoveInfo(BaseCommand):
    TYPE: ClassVar[int] = 12
    object_id: DataStructure | None = field(Kind.CACHED)
    last_delivered_sequence_id: int = field(Kind.LONG)


@attrs.define(slots=True)
class ControlCommand(BaseCommand):
    TYPE: ClassVar[int] = 14
    command: str | None = field(Kind.STRING)


@attrs.define(slots=True)
class FlushCommand(BaseCommand):
    TYPE: ClassVar[int] = 15


@attrs.define(slots=True)
class ConnectionErrorCommand(BaseCommand):
    """ActiveMQ's ConnectionError (renamed: Python has a builtin of that name): the broker failed the connection."""

    TYPE: ClassVar[int] = 16
    exception: JavaThrowable | None = field(Kind.THROWABLE)
    connection_id: ConnectionId | None = field(Kind.NESTED)


@attrs.define(slots=True)
class ConsumerControl(BaseCommand):
    TYPE: ClassVar[int] = 17
    destination: ActiveMQDestination | None = field(Kind.NESTED)
    close: bool = field(Kind.BOOL)
    consumer_id: ConsumerId | None = field(Kind.NESTED)
    prefetch: int = field(Kind.INT)
    flush: bool = field(Kind.BOOL)
    start: bool = field(Kind.BOOL)
    stop: bool = field(Kind.BOOL)


@attrs.define(slots=True)
class ConnectionControl(BaseCommand):
    TYPE: ClassVar[int] = 18
    close: bool = field(Kind.BOOL)
    exit: bool = field(Kind.BOOL)
    fault_tolerant: bool = field(Kind.BOOL)
    resume: bool = field(Kind.BOOL)
    suspend: bool = field(Kind.BOOL)
    connected_brokers: str | None = field(Kind.STRING)
    reconnect_to: str | None = field(Kind.STRING)
    rebalance_connection: bool = field(Kind.BOOL)
    token: bytes | None = field(Kind.BYTES)


@attrs.define(slots=True)
class ProducerAck(BaseCommand):
    TYPE: ClassVar[int] = 19
    producer_id: ProducerId | None = field(Kind.NESTED)
    size: int = field(Kind.INT)


@attrs.define(slots=True)
class MessagePull(BaseCommand):
    TYPE: ClassVar[int] = 20
    consumer_id: ConsumerId | None = field(Kind.CACHED)
    destination: ActiveMQDestination | None = field(Kind.CACHED)
    timeout: int = field(Kind.LONG)
    correlation_id: str | None = field(Kind.STRING)
    message_id: MessageId | None = field(Kind.NESTED)


@attrs.define(slots=True)
class MessageDispatch(BaseCommand):
    TYPE: ClassVar[int] = 21
    consumer_id: ConsumerId | None = field(Kind.CACHED)
    destination: ActiveMQDestination | None = field(Kind.CACHED)
    message: Message | None = field(Kind.NESTED)
    redelivery_counter: int = field(Kind.INT)


@attrs.define(slots=True)
class MessageAck(BaseCommand):
    TYPE: ClassVar[int] = 22
    destination: ActiveMQDestination | None = field(Kind.CACHED)
    transaction_id: DataStructure | None = field(Kind.CACHED)
    consumer_id: ConsumerId | None = field(Kind.CACHED)
    ack_type: int = field(Kind.BYTE)
    first_message_id: MessageId | None = field(Kind.NESTED)
    last_message_id: MessageId | None = field(Kind.NESTED)
    message_count: int = field(Kind.INT)
    poison_cause: JavaThrowable | None = field(Kind.THROWABLE)


# -- messages -----------------------------------------------------------------------------------------------------


@attrs.define(slots=True)
class Message(BaseCommand):
    """ActiveMQMessage's fields; the JMS type is the class (its body is ``content``, its properties a primitive
    map in ``marshalled_properties``)."""

    TYPE: ClassVar[int] = 23
    #: the first of the fields a client's message leaves at their defaults (the codec reads them as one run)
    RARELY_SET: ClassVar[str] = "data_structure"
    producer_id: ProducerId | None = field(Kind.CACHED)
    destination: ActiveMQDestination | None = field(Kind.CACHED)
    transaction_id: DataStructure | None = field(Kind.CACHED)
    original_destination: ActiveMQDestination | None = field(Kind.CACHED)
    message_id: MessageId | None = field(Kind.NESTED)
    original_transaction_id: DataStructure | None = field(Kind.CACHED)
    group_id: str | None = field(Kind.STRING)
    group_sequence: int = field(Kind.INT)
    correlation_id: str | None = field(Kind.STRING)
    persistent: bool = field(Kind.BOOL)
    expiration: int = field(Kind.LONG)
    priority: int = field(Kind.BYTE)
    reply_to: ActiveMQDestination | None = field(Kind.NESTED)
    timestamp: int = field(Kind.LONG)
    type: str | None = field(Kind.STRING)
    content: bytes | None = field(Kind.BYTES)
    marshalled_properties: bytes | None = field(Kind.BYTES)
    data_structure: DataStructure | None = field(Kind.NESTED)
    target_consumer_id: ConsumerId | None = field(Kind.CACHED)
    compressed: bool = field(Kind.BOOL)
    redelivery_counter: int = field(Kind.INT)
    broker_path: tuple[DataStructure | None, ...] | None = field(Kind.ARRAY)
    arrival: int = field(Kind.LONG)
    user_id: str | None = field(Kind.STRING)
    recieved_by_df_bridge: bool = field(Kind.BOOL)  # (ActiveMQ's spelling)
    droppable: bool = field(Kind.BOOL)
    cluster: tuple[DataStructure | None, ...] | None = field(Kind.ARRAY)
    broker_in_time: int = field(Kind.LONG)
    broker_out_time: int = field(Kind.LONG)
    jmsx_group_first_for_consumer: bool = field(Kind.BOOL)
    #: not a wire field: the frame's payload as read (set by OpenWireDecoder), which a dispatch may reuse
    raw: bytes | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)


@attrs.define(slots=True)
class BytesMessage(Message):
    TYPE: ClassVar[int] = 24


@attrs.define(slots=True)
class MapMessage(Message):
    TYPE: ClassVar[int] = 25


@attrs.define(slots=True)
class ObjectMessage(Message):
    TYPE: ClassVar[int] = 26


@attrs.define(slots=True)
class StreamMessage(Message):
    TYPE: ClassVar[int] = 27


@attrs.define(slots=True)
class TextMessage(Message):
    TYPE: ClassVar[int] = 28


@attrs.define(slots=True)
class BlobMessage(Message):
    TYPE: ClassVar[int] = 29
    remote_blob_url: str | None = field(Kind.STRING)
    mime_type: str | None = field(Kind.STRING)
    deleted_by_broker: bool = field(Kind.BOOL)


# -- responses ----------------------------------------------------------------------------------------------------


@attrs.define(slots=True)
class Response(BaseCommand):
    TYPE: ClassVar[int] = 30
    correlation_id: int = field(Kind.INT)


@attrs.define(slots=True)
class ExceptionResponse(Response):
    TYPE: ClassVar[int] = 31
    exception: JavaThrowable | None = field(Kind.THROWABLE)


@attrs.define(slots=True)
class DataResponse(Response):
    TYPE: ClassVar[int] = 32
    data: DataStructure | None = field(Kind.NESTED)


@attrs.define(slots=True)
class DataArrayResponse(Response):
    TYPE: ClassVar[int] = 33
    data: tuple[DataStructure | None, ...] | None = field(Kind.ARRAY)


@attrs.define(slots=True)
class IntegerResponse(Response):
    TYPE: ClassVar[int] = 34
    result: int = field(Kind.INT)


# -- what minibroker reads only to refuse (network bridges, replay, fragments) -------------------------------------


@attrs.define(slots=True)
class DiscoveryEvent(DataStructure):
    TYPE: ClassVar[int] = 40
    service_name: str | None = field(Kind.STRING)
    broker_name: str | None = field(Kind.STRING)


@attrs.define(slots=True)
class SubscriptionInfo(DataStructure):
    TYPE: ClassVar[int] = 55
    client_id: str | None = field(Kind.STRING)
    destination: ActiveMQDestination | None = field(Kind.CACHED)
    selector: str | None = field(Kind.STRING)
    subscription_name: str | None = field(Kind.STRING)
    subscribed_destination: ActiveMQDestination | None = field(Kind.NESTED)
    no_local: bool = field(Kind.BOOL)


@attrs.define(slots=True)
class PartialCommand(DataStructure):
    TYPE: ClassVar[int] = 60
    command_id: int = field(Kind.INT)
    data: bytes | None = field(Kind.BYTES)


@attrs.define(slots=True)
class LastPartialCommand(PartialCommand):
    TYPE: ClassVar[int] = 61


@attrs.define(slots=True)
class ReplayCommand(BaseCommand):
    TYPE: ClassVar[int] = 65
    first_nak_number: int = field(Kind.INT)
    last_nak_number: int = field(Kind.INT)


@attrs.define(slots=True)
class MessageDispatchNotification(BaseCommand):
    TYPE: ClassVar[int] = 90
    consumer_id: ConsumerId | None = field(Kind.CACHED)
    destination: ActiveMQDestination | None = field(Kind.CACHED)
    delivery_sequence_id: int = field(Kind.LONG)
    message_id: MessageId | None = field(Kind.NESTED)


@attrs.define(slots=True)
class NetworkBridgeFilter(DataStructure):
    TYPE: ClassVar[int] = 91
    network_broker_id: BrokerId | None = field(Kind.CACHED)
    message_ttl: int = field(Kind.INT)
    consumer_ttl: int = field(Kind.INT)


@attrs.define(slots=True)
class BrokerSubscriptionInfo(BaseCommand):
    TYPE: ClassVar[int] = 92
    broker_id: BrokerId | None = field(Kind.NESTED)
    broker_name: str | None = field(Kind.STRING)
    subscription_infos: tuple[DataStructure | None, ...] | None = field(Kind.ARRAY)


def _concrete(cls: type[DataStructure]) -> list[type[DataStructure]]:
    found = [cls] if cls.TYPE >= 0 else []
    for sub in cls.__subclasses__():
        found += _concrete(sub)
    return found


#: type byte -> class: every type the codec reads and writes
TYPES: dict[int, type[DataStructure]] = {cls.TYPE: cls for cls in _concrete(DataStructure)}
