"""The requests a client makes of its connection, as values (ActiveMQ's ``Command`` objects).

A client builds one of these and hands it to its link (:meth:`BrokerLink.request`); the in-process link passes it
to :meth:`BrokerConnection.dispatch` as it is, the TCP link writes it as a frame (one row per command in
:mod:`~minibroker.transport.tcp_link`) that the server turns back into the same value, and the STOMP and MQTT edges
build the same values from their frames. The connection carries every one out through one table
(:data:`minibroker._driver.connection.HANDLERS`), so authorization and bookkeeping are written once per command.

The per-message traffic (send, ack, pull) and the consumer and producer lifecycle stay methods of the link and the
connection: over TCP they are one-way frames that carry no request, and in-process they are the hot path, where a
value per call costs measurably (see ``docs/development.md``).

Each command says what its answer is (``Command[R]``), so ``await link.request(Purge("orders"))`` is an ``int`` to a
type checker too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from ..message import Destination, Message

if TYPE_CHECKING:  # the answers' types, named as strings in the bases: the replay rules load with the first read
    from .._core.queue import QueueStatistics  # noqa: F401 (issue 45)
    from .._core.replay import BrokerInfo, CursorAck, PublishResult, RangeRead  # noqa: F401
    from ..message import DestinationKind

__all__ = [
    "AckBelow",
    "Browse",
    "Command",
    "Commit",
    "CreateTemporary",
    "DeleteTemporary",
    "GetBrokerInfo",
    "GetQueueStatistics",
    "Publish",
    "Purge",
    "ReadRange",
    "RemoveConsumer",
    "Rollback",
    "Unsubscribe",
]

R = TypeVar("R", covariant=True)


class Command(Generic[R]):
    """A request whose answer is an ``R``."""

    __slots__ = ()


@attrs.frozen(slots=True)
class RemoveConsumer(Command[None]):
    """Close a consumer; what it was delivered after ``last_delivered_seq`` comes back undelivered."""

    consumer_id: int
    last_delivered_seq: int = -1


@attrs.frozen(slots=True)
class Commit(Command[None]):
    """Commit the connection's transaction (its sends and acks take effect)."""

    transaction_id: int


@attrs.frozen(slots=True)
class Rollback(Command[None]):
    """Roll back the connection's transaction (its sends go, its consumed messages come back redelivered)."""

    transaction_id: int


@attrs.frozen(slots=True)
class Unsubscribe(Command[None]):
    """Remove the connection's durable subscription ``name`` (that of client id ``client_id`` when given: ActiveMQ's
    STOMP 1.0 connector names the subscription as its client id)."""

    name: str
    client_id: str | None = None


@attrs.frozen(slots=True)
class CreateTemporary(Command[Destination]):
    """A temporary queue or topic owned by the connection, named ``<connection_name>:<n>``."""

    kind: DestinationKind
    connection_name: str | None = None


@attrs.frozen(slots=True)
class DeleteTemporary(Command[None]):
    """Delete the connection's temporary destination (refused while a consumer reads it)."""

    destination: Destination


@attrs.frozen(slots=True)
class Browse(Command[list[Message]]):
    """What a queue browser sees (needs the right to read the queue)."""

    queue: str
    selector: str | None = None


@attrs.frozen(slots=True)
class GetQueueStatistics(Command["QueueStatistics | None"]):
    """A queue's counters (None: no such queue); needs the right to read it."""

    queue: str


@attrs.frozen(slots=True)
class Purge(Command[int]):
    """Remove a queue's messages (a wildcard of queues, a durable subscription's queue), or with a selector the
    waiting ones it matches; answers how many (needs the right to administer every queue it empties)."""

    queue: str
    selector: str | None = None


@attrs.frozen(slots=True)
class ReadRange(Command["RangeRead"]):
    """The messages of ``queue`` not yet acked with ``from_seq <= seq < to_seq``, without consuming them."""

    queue: str
    from_seq: int = 0
    to_seq: int | None = None
    limit: int | None = None
    epoch: str | None = None


@attrs.frozen(slots=True)
class AckBelow(Command["CursorAck"]):
    """Consume every message of ``queue`` below ``seq`` for the reader ``cursor``."""

    queue: str
    cursor: str
    seq: int
    epoch: str | None = None


def _names(queues: Sequence[str] | None) -> tuple[str, ...] | None:
    return None if queues is None else tuple(queues)


@attrs.frozen(slots=True)
class GetBrokerInfo(Command["BrokerInfo"]):
    """The broker's epoch and name, and the positions of ``queues`` (None: every queue the connection may see)."""

    queues: tuple[str, ...] | None = attrs.field(default=None, converter=_names)
    cursor: str | None = None


@attrs.frozen(slots=True)
class Publish(Command["PublishResult"]):
    """A batch of messages in one request (``dedupe``: drop message ids already seen)."""

    messages: Sequence[Message]
    dedupe: bool = False
