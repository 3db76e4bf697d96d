"""A local transaction: sends held back until commit, acks that only take effect at commit (semantics §4).

An ack inside a transaction marks the entry (``QueueEntry.acked_in_txn``) and leaves it with its consumer: the
consumer keeps holding it, nobody else can get it, and closing the consumer does not release it. The transaction's
end settles each marked entry:

* commit: the message is consumed (TX_ACKED -> CONSUMED in lifecycle.py), from its subscription if that is still
  open, straight from its queue if the consumer left meanwhile;
* rollback: the mark goes; the consumer still holds the message (TX_ACKED -> IN_FLIGHT) and ActiveMQ's
  ``afterRollback`` narrows its window by one, or, if the consumer left, the message goes back to the head of its
  queue with one more delivery counted (TX_ACKED -> READY).

Held-back sends are the broker's to deliver at commit (they may be scheduled instead); here they are only recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ..message import Destination, Message
from .history import History
from .journal import COUNTER
from .multi import queue_of
from .subscription import QueueEntry, Subscription

if TYPE_CHECKING:
    from .queue import Queue

__all__ = ["Transaction"]


@attrs.define(slots=True, eq=False)
class Transaction:
    transaction_id: int
    connection_id: int
    sends: list[Message] = attrs.field(factory=list)
    #: for each send, the broker sequence ids it took on arrival (BrokerCore._reserve_sequence)
    reserved: list[list[int]] = attrs.field(factory=list)
    #: (subscription, entry) for every message acked inside the transaction
    acks: list[tuple[Subscription, QueueEntry]] = attrs.field(factory=list)

    def add_ack(self, sub: Subscription, entry: QueueEntry) -> bool:
        """Mark ``entry`` as acked by this transaction; False when some transaction acked it already."""
        if entry.acked_in_txn is not None:
            return False
        entry.acked_in_txn = self.transaction_id
        self.acks.append((sub, entry))
        return True

    def _settled(self) -> list[tuple[Subscription, QueueEntry, Queue | None]]:
        """The acks this transaction still owns, unmarked now that it ends, each with the queue holding its message
        (None on a topic); a message purged meanwhile is gone for good (PURGED is final), and is left out."""
        mine = []
        txn_id = self.transaction_id
        for sub, entry in self.acks:
            if entry.acked_in_txn == txn_id:
                entry.acked_in_txn = None
                q = queue_of(sub, entry)
                if q is not None or sub.destination.is_topic:
                    mine.append((sub, entry, q))
        return mine

    def commit_acks(self, now: float, history: History) -> set[Destination]:
        """Consume every message acked in the transaction; the destinations touched (to dispatch again)."""
        touched: set[Destination] = set()
        txn_id = self.transaction_id
        recording = history.enabled
        for sub, entry, q in self._settled():
            if recording:
                history.add(entry.message.message_id, now, "committed", sub.consumer_id, transaction_id=txn_id)
            if not sub.closed:
                sub.consume(entry)
            elif q is not None:
                # its consumer left during the transaction: the entry is no longer dispatched anywhere
                q.consume(entry)
            touched.add(sub.destination)
        if recording:
            for message in self.sends:
                history.add(message.message_id, now, "committed", transaction_id=txn_id)
        return touched

    def roll_back(self, now: float, history: History) -> set[Destination]:
        """Undo the transaction's acks and discard its sends; the destinations touched (to dispatch again)."""
        touched: set[Destination] = set()
        txn_id = self.transaction_id
        for sub, entry, q in self._settled():
            history.add(entry.message.message_id, now, "rolled-back", sub.consumer_id, transaction_id=txn_id)
            if sub.closed and q is not None:
                if q.journal is not None and entry.message.persistent:
                    q.journal.undo.append((COUNTER, q, entry, entry.redelivery_counter))
                entry.redelivery_counter += 1
                q.give_back([entry])
            else:
                # ActiveMQ's afterRollback narrows the window by one for a STANDARD and an INDIVIDUAL ack alike
                # (the INDIVIDUAL one had widened it by one when it was made)
                sub.contract(1)
            touched.add(sub.destination)
        for message in self.sends:
            history.add(message.message_id, now, "discarded", transaction_id=txn_id)
        return touched
