"""A message as the application receives it: the broker's message plus this delivery's state."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from minibroker import Dispatch
from minibroker.errors import MessageFormatError
from minibroker.message import (
    ORIGINAL_EXPIRATION,
    Body,
    Destination,
    Message,
    ObjectBody,
    PropertyValue,
    body_as_bytes,
    jms_class,
)
from minibroker.typed import convert

from ._stream import StreamReader

if TYPE_CHECKING:
    from ._consumer import Consumer

__all__ = ["ReceivedMessage"]


def without_original_expiration(message: Message) -> Message:
    """The message as ActiveMQ's JMS client hands it over: its ``Message.copy()`` of what it received drops the
    broker's ``originalExpiration`` stamp (a dead letter's)."""
    return attrs.evolve(message, properties={k: v for k, v in message.properties.items() if k != ORIGINAL_EXPIRATION})


class ReceivedMessage:
    """What ``receive()`` returns and listeners get.

    The headers mirror JMS: ``redelivered`` is True once the message has been delivered before,
    ``delivery_count`` is JMSXDeliveryCount (``redelivery_counter + 1``).
    """

    __slots__ = (
        "_consumer",
        "_properties",
        "arrival",
        "broker_seq",
        "dispatch_counter",
        "group_first",
        "message",
        "redelivery_counter",
        "rollback_cause",
        "seq",
        "sub_id",
    )

    def __init__(self, dispatch: Dispatch, consumer: Consumer) -> None:
        # one unpacking instead of seven field reads (once per received message)
        sub_id, message, seq, redelivery_counter, group_first, broker_seq = dispatch
        assert message is not None
        if message.properties and ORIGINAL_EXPIRATION in message.properties:
            message = without_original_expiration(message)
        self.message: Message = message
        #: the broker's sequence number of the message in its destination (per destination, in send order; the
        #: ``seq`` of ``Connection.read_range`` and ``ack_below``)
        self.seq = seq
        #: its broker sequence id (ActiveMQ's ``brokerSequenceId``: one count across the broker's destinations, in
        #: arrival order): a closing consumer, session or connection reports the last one it delivered
        self.broker_seq = broker_seq
        #: the broker subscription that dispatched it: acks name it
        self.sub_id = sub_id
        #: the order in which the broker dispatched it to this consumer (kept across local redeliveries)
        self.arrival = 0
        self.redelivery_counter = redelivery_counter
        #: the broker's counter when it dispatched the message; local rollbacks raise only ``redelivery_counter``
        self.dispatch_counter = redelivery_counter
        self.group_first = group_first
        self._consumer = consumer
        self._properties: dict[str, PropertyValue] | None = None
        self.rollback_cause: BaseException | None = None

    # -- content ----------------------------------------------------------------------------------------------------

    @property
    def body(self) -> Body:
        """Text (a TextMessage), bytes (a BytesMessage), a read-only mapping (a MapMessage), a tuple (a
        StreamMessage) or an :class:`~minibroker.message.ObjectBody` (an ObjectMessage)."""
        return self.message.body

    @property
    def jms_type(self) -> str:
        """The JMS message class ActiveMQ would deliver: ``TextMessage``, ``BytesMessage``, ``MapMessage``,
        ``StreamMessage`` or ``ObjectMessage``."""
        return jms_class(self.message.body).removeprefix("ActiveMQ")

    def stream_reader(self) -> StreamReader:
        """A StreamMessage's values, read from the first as JMS's ``readXxx`` reads them
        (:class:`~minibroker.client.StreamReader`); MessageFormatError for another message type."""
        body = self.message.body
        if not isinstance(body, tuple):
            raise MessageFormatError(
                f"message {self.message.message_id} is a {self.jms_type}, not a StreamMessage", value=self.jms_type
            )
        return StreamReader(body)

    @property
    def object_value(self) -> object:
        """An ObjectMessage's object (``getObject()``) for the classes Python reads (String, boxed primitives,
        byte[]; None without one); MessageFormatError for another message type or class: its bytes stay in
        ``body.data``."""
        body = self.message.body
        if not isinstance(body, ObjectBody):
            raise MessageFormatError(
                f"message {self.message.message_id} is a {self.jms_type}, not an ObjectMessage", value=self.jms_type
            )
        return body.value()

    @property
    def text(self) -> str:
        """The body as text (bytes are decoded as UTF-8); a MapMessage has none (MessageFormatError)."""
        body = self.message.body
        if isinstance(body, str):
            return body
        if isinstance(body, bytes):
            return body.decode("utf-8")
        raise MessageFormatError(
            f"message {self.message.message_id} is a {self.jms_type}: it has no text", value=self.jms_type
        )

    def property_as(self, name: str, as_type: str) -> object:
        """Property ``name`` read as Java type ``as_type`` (``"long"``, ``"string"``, ...), by JMS's conversion
        table (:func:`minibroker.typed.convert`): ``property_as("retries", "long")`` is ``getLongProperty``."""
        return convert(self.message.properties.get(name), as_type)

    @property
    def properties(self) -> dict[str, PropertyValue]:
        """Application properties with their types, and the JMSX properties ActiveMQ's client lists with them
        (``getPropertyNames``, recorded): ``JMSXGroupID`` and ``JMSXGroupSeq`` of a grouped message, and
        ``JMSXDeliveryCount`` once a message was delivered before."""
        if self._properties is None:
            props = dict(self.message.properties)
            if self.message.group_id is not None:
                props["JMSXGroupID"] = self.message.group_id
                props["JMSXGroupSeq"] = self.message.group_seq
            self._properties = props
        if self.redelivery_counter > 0:  # a local rollback may raise it on this very object: not cached
            return {**self._properties, "JMSXDeliveryCount": self.delivery_count}
        return self._properties

    def get_property(self, name: str, default: PropertyValue = None) -> PropertyValue:
        """A property by name; ``JMSXGroupFirstForConsumer`` too (True on the first message of a group this
        consumer gets), which ActiveMQ answers but does not list among the names."""
        if name == "JMSXGroupFirstForConsumer":
            return True if self.group_first else default
        return self.properties.get(name, default)

    # -- headers ----------------------------------------------------------------------------------------------------

    @property
    def message_id(self) -> str:
        return self.message.message_id

    @property
    def destination(self) -> Destination:
        return self.message.destination

    @property
    def redelivered(self) -> bool:
        return self.redelivery_counter > 0

    @property
    def delivery_count(self) -> int:
        return self.redelivery_counter + 1

    @property
    def priority(self) -> int:
        return self.message.priority

    @property
    def persistent(self) -> bool:
        return self.message.persistent

    @property
    def timestamp(self) -> float:
        return self.message.timestamp

    @property
    def expiration(self) -> float:
        return self.message.expiration

    @property
    def correlation_id(self) -> str | None:
        return self.message.correlation_id

    @property
    def reply_to(self) -> Destination | None:
        return self.message.reply_to

    @property
    def type(self) -> str | None:
        return self.message.type

    @property
    def group_id(self) -> str | None:
        return self.message.group_id

    @property
    def group_seq(self) -> int:
        return self.message.group_seq

    @property
    def original_destination(self) -> Destination | None:
        """Where a dead-lettered message was when it failed."""
        return self.message.original_destination

    @property
    def headers(self) -> Mapping[str, object]:
        """The JMS headers by their JMS names, for logging and assertions."""
        m = self.message
        return {
            "JMSMessageID": m.message_id,
            "JMSDestination": str(m.destination),
            "JMSDeliveryMode": 2 if m.persistent else 1,
            "JMSPriority": m.priority,
            "JMSTimestamp": int(round(m.timestamp * 1000)),
            "JMSExpiration": int(round(m.expiration * 1000)),
            "JMSCorrelationID": m.correlation_id,
            "JMSReplyTo": None if m.reply_to is None else str(m.reply_to),
            "JMSType": m.type,
            "JMSRedelivered": self.redelivered,
            "JMSXDeliveryCount": self.delivery_count,
        }

    # -- acknowledgement --------------------------------------------------------------------------------------------

    async def acknowledge(self) -> None:
        """CLIENT mode: ack everything delivered on the session; INDIVIDUAL: this message; other modes: nothing."""
        await self._consumer._acknowledge_message(self)

    def __repr__(self) -> str:
        body = self.message.body
        if not isinstance(body, (str, bytes)):
            body = body_as_bytes(body)
        shown = body if len(body) <= 40 else f"{body[:37]!r}..."
        return (
            f"<ReceivedMessage {self.message.message_id} {self.message.destination} body={shown!r} "
            f"redelivery_counter={self.redelivery_counter}>"
        )
