"""What the broker tells a client: dispatches (and the null dispatch that ends a pull or a browse)."""

from __future__ import annotations

from typing import NamedTuple

from ..message import Message

__all__ = ["Dispatch"]


class Dispatch(NamedTuple):
    """One message handed to one consumer, or ``message=None``: "nothing for your pull" / "end of browse".

    ``seq`` is the broker's sequence number of the message in its destination; ``broker_seq`` its broker sequence id
    (ActiveMQ's ``brokerSequenceId``: one count across the broker's destinations, taken when the message arrived),
    what a closing client reports as the last message it delivered; ``redelivery_counter`` is the
    broker's count of earlier deliveries (raised when a consumer closed holding the message). Immutable (a NamedTuple:
    one is built per dispatch, and nothing downstream may change what the broker said).
    """

    consumer_id: int
    message: Message | None
    seq: int = -1
    redelivery_counter: int = 0
    #: set on the first message of a message group given to this consumer (JMSXGroupFirstForConsumer)
    group_first: bool = False
    broker_seq: int = 0
