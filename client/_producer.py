"""A producer: builds messages (ids, timestamps, expiration) and hands them to the broker."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from minibroker.errors import InvalidDestination
from minibroker.message import Body, Destination, HasDestination, Message, PropertyValue, checked_body
from minibroker.refusals import body_refusal

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["Producer"]

#: the properties of a message sent without any: shared, and read-only so that sharing is safe
NO_PROPERTIES: Mapping[str, PropertyValue] = MappingProxyType({})


class Producer:
    """Sends to its destination (or to the one named in each ``send`` when created without one)."""

    def __init__(self, session: Session, producer_id: int, destination: Destination | None) -> None:
        self.session = session
        self.producer_id = producer_id
        self.destination = destination
        self._seq = 0
        self._id_prefix = f"{session.connection.connection_id}:{session.session_id}:{producer_id}"
        self._message_id_prefix = f"ID:{self._id_prefix}:"
        self._transacted = session.transacted  # a session's ack mode never changes
        #: the link takes the ids this producer mints as never sent before (an in-process link's ``send_new``: the
        #: broker skips its duplicate check for them); not after a failover, when a send may be sent again
        self._minted = hasattr(session.connection._link, "send_new") and not session.connection.fault_tolerant
        self.closed = False
        #: the producer's id at the broker, unique in its connection (statistics, advisories)
        self.broker_id = 0

    def __repr__(self) -> str:
        return f"<Producer {self._id_prefix} to {self.destination}>"

    async def send(
        self,
        body: Body | list[PropertyValue],
        *,
        properties: Mapping[str, PropertyValue] | None = None,
        priority: int = 4,
        ttl: float | None = None,
        persistent: bool = True,
        correlation_id: str | None = None,
        reply_to: str | Destination | HasDestination | None = None,
        type: str | None = None,
        group_id: str | None = None,
        group_seq: int = 0,
        destination: str | Destination | HasDestination | None = None,
    ) -> str:
        """Send one message and return its message id. ``ttl`` is in seconds (None or 0: never expires).

        The body says the JMS message type: ``str`` a TextMessage, ``bytes`` a BytesMessage, a mapping a MapMessage,
        a list or tuple a StreamMessage, an :class:`~minibroker.message.ObjectBody` an ObjectMessage.

        In a transacted session the message stays invisible until ``commit()``.
        """
        session = self.session
        conn = session.connection
        if session._closed or conn._closed:
            session._check_open()
        if self.closed:
            raise InvalidDestination("The producer is closed")
        dest = self.destination if destination is None else Destination.parse(destination)
        if dest is None:
            raise InvalidDestination("this producer has no destination: pass destination=...")
        if not isinstance(body, (str, bytes)):
            if body is None:
                raise body_refusal(body)  # a Message without a body: UnsupportedFeature
            body = checked_body(body)  # a Map-, Stream- or ObjectMessage
        if not 0 <= priority <= 9:
            raise ValueError(f"priority must be 0..9, not {priority!r}")
        seq = self._seq = self._seq + 1
        now = conn.clock.now()
        # positional arguments: one Message is built per send, and keywords cost more
        message = Message(
            f"{self._message_id_prefix}{seq}",
            dest,
            body,
            dict(properties) if properties else NO_PROPERTIES,
            priority,
            persistent,
            now,
            now + ttl if ttl else 0.0,
            correlation_id,
            None if reply_to is None else Destination.parse(reply_to),
            type,
            group_id,
            group_seq,
            self._id_prefix,
            seq,
        )
        txn = session._transaction_for() if self._transacted else None
        # ActiveMQ: persistent sends outside a transaction wait for the broker's receipt, others do not,
        # unless the connection asks for alwaysSyncSend
        link = conn._link
        waiting = (link.send_new if self._minted else link.send)(  # type: ignore[attr-defined]
            message, txn, conn.always_sync_send or (persistent and txn is None)
        )
        if waiting is not None:  # a receipt, flow control, a full socket buffer: most sends are done already
            await waiting
        return message.message_id

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.session.connection._link.remove_producer(self.broker_id)
        if self in self.session.producers:
            self.session.producers.remove(self)
