"""A producer: builds messages (ids, timestamps, expiration) and hands them to the broker."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from minibroker.errors import InvalidDestination
from minibroker.message import Destination, Message, PropertyValue

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["Producer"]


class Producer:
    """Sends to its destination (or to the one named in each ``send`` when created without one)."""

    def __init__(self, session: Session, producer_id: int, destination: Destination | None) -> None:
        self.session = session
        self.producer_id = producer_id
        self.destination = destination
        self._seq = 0
        self._id_prefix = f"{session.connection.connection_id}:{session.session_id}:{producer_id}"
        self.closed = False

    def __repr__(self) -> str:
        return f"<Producer {self._id_prefix} to {self.destination}>"

    async def send(
        self,
        body: str | bytes,
        *,
        properties: Mapping[str, PropertyValue] | None = None,
        priority: int = 4,
        ttl: float | None = None,
        persistent: bool = True,
        correlation_id: str | None = None,
        reply_to: str | Destination | None = None,
        type: str | None = None,
        group_id: str | None = None,
        group_seq: int = 0,
        destination: str | Destination | None = None,
    ) -> str:
        """Send one message and return its message id. ``ttl`` is in seconds (None or 0: never expires).

        In a transacted session the message stays invisible until ``commit()``.
        """
        session = self.session
        session._check_open()
        if self.closed:
            raise InvalidDestination("The producer is closed")
        dest = self.destination if destination is None else Destination.parse(destination)
        if dest is None:
            raise InvalidDestination("this producer has no destination: pass destination=...")
        if not isinstance(body, (str, bytes)):
            raise TypeError(f"a message body is str or bytes, not {type_name(body)}")
        if not 0 <= priority <= 9:
            raise ValueError(f"priority must be 0..9, not {priority!r}")
        self._seq += 1
        conn = session.connection
        now = conn.clock.now()
        message = Message(
            message_id=f"ID:{self._id_prefix}:{self._seq}",
            destination=dest,
            body=body,
            properties=dict(properties) if properties else {},
            priority=priority,
            persistent=persistent,
            timestamp=now,
            expiration=now + ttl if ttl else 0.0,
            correlation_id=correlation_id,
            reply_to=None if reply_to is None else Destination.parse(reply_to),
            type=type,
            group_id=group_id,
            group_seq=group_seq,
            producer_id=self._id_prefix,
            producer_seq=self._seq,
        )
        txn = session._transaction_for() if session.transacted else None
        # ActiveMQ: persistent sends outside a transaction wait for the broker's receipt, others do not,
        # unless the connection asks for alwaysSyncSend
        await conn._link.send(message, txn, conn.always_sync_send or (persistent and txn is None))
        return message.message_id

    async def close(self) -> None:
        self.closed = True
        if self in self.session.producers:
            self.session.producers.remove(self)


def type_name(value: object) -> str:
    return type(value).__name__
