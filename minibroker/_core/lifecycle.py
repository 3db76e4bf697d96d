"""The life of a message in a queue, as a transition table (in the manner of h11's ``_state.py``).

Theory of operation
-------------------
A message sent to a queue is in exactly one of these states at any moment:

* ``UNCOMMITTED``: sent inside a transaction that is still open (``Transaction.sends``): invisible to everyone;
* ``DELAYED``: waiting in the broker's scheduler (``AMQ_SCHEDULED_DELAY``, the broker redelivery plugin);
* ``READY``: a queue entry waiting for a consumer, in one of the queue's pending lists (queue.py);
* ``IN_FLIGHT``: dispatched to a consumer and not acked (``QueueEntry.holder``); nobody else can get it;
* ``TX_ACKED``: acked inside a transaction still open (``QueueEntry.acked_in_txn``); its consumer keeps it, and
  keeps it even if it closes, until the transaction ends (transaction.py);

and then, for good, ``CONSUMED`` (acked, committed or cursor-acked), ``EXPIRED``, ``DEAD`` (poisoned: the broker
gave up on it; a dead-lettered copy starts a new life on the dead-letter queue under the same message id),
``PURGED``, or ``DISCARDED`` (its transaction rolled back). Only the three middle states are queue entries; which
one an entry is in follows from its fields (:func:`state_of`).

Every move is one row of :data:`TRANSITIONS`, named after the event the broker's history records for it (see
:func:`event_of`). A row may lead to more than one state where the event alone does not tell (a rollback gives an
acked message back to its consumer, or to the queue when the consumer left meanwhile). The property tests
(``tests/core/test_core_properties.py``) replay every history record of random runs through this table, and check
the state it arrives at against the broker's own structures; a move the table lacks fails them.
"""

from __future__ import annotations

import enum

from .subscription import QueueEntry

__all__ = ["FINAL", "TRANSITIONS", "State", "event_of", "next_states", "state_of"]


class State(enum.Enum):
    NEW = "new"
    UNCOMMITTED = "uncommitted"
    DELAYED = "delayed"
    READY = "ready"
    IN_FLIGHT = "in flight"
    TX_ACKED = "acked in a transaction"
    CONSUMED = "consumed"
    EXPIRED = "expired"
    DEAD = "dead"
    PURGED = "purged"
    DISCARDED = "discarded"


NEW, UNCOMMITTED, DELAYED, READY = State.NEW, State.UNCOMMITTED, State.DELAYED, State.READY
IN_FLIGHT, TX_ACKED, CONSUMED, EXPIRED = State.IN_FLIGHT, State.TX_ACKED, State.CONSUMED, State.EXPIRED
DEAD, PURGED, DISCARDED = State.DEAD, State.PURGED, State.DISCARDED

#: the states a message never leaves
FINAL = frozenset({CONSUMED, EXPIRED, DEAD, PURGED, DISCARDED})

#: (state, event) -> the states that event can lead to; an event a state has no row for cannot happen in it
TRANSITIONS: dict[tuple[State, str], frozenset[State]] = {
    # arriving
    (NEW, "send"): frozenset({READY, DELAYED}),
    (NEW, "send in transaction"): frozenset({UNCOMMITTED}),
    (UNCOMMITTED, "commit send"): frozenset({READY, DELAYED}),
    (UNCOMMITTED, "discard"): frozenset({DISCARDED}),
    (DELAYED, "due"): frozenset({READY}),
    # dispatch and release (semantics §1)
    (READY, "dispatch"): frozenset({IN_FLIGHT}),
    (IN_FLIGHT, "release"): frozenset({READY}),
    # acknowledgements (semantics §2, acks.py)
    (IN_FLIGHT, "ack STANDARD"): frozenset({CONSUMED}),
    (IN_FLIGHT, "ack INDIVIDUAL"): frozenset({CONSUMED}),
    (IN_FLIGHT, "ack STANDARD in transaction"): frozenset({TX_ACKED}),
    (IN_FLIGHT, "ack INDIVIDUAL in transaction"): frozenset({TX_ACKED}),
    (IN_FLIGHT, "ack DELIVERED"): frozenset({IN_FLIGHT}),
    (IN_FLIGHT, "ack REDELIVERED"): frozenset({IN_FLIGHT}),
    (IN_FLIGHT, "ack POISON"): frozenset({DEAD}),
    # an EXPIRED ack of a message the broker does not see as expired yet consumes it
    (IN_FLIGHT, "ack EXPIRED"): frozenset({EXPIRED, CONSUMED}),
    (READY, "ack CURSOR"): frozenset({CONSUMED}),
    # transactions (semantics §4, transaction.py)
    (TX_ACKED, "commit ack"): frozenset({CONSUMED}),
    (TX_ACKED, "roll back ack"): frozenset({IN_FLIGHT, READY}),
    # expiry and dead letters (semantics §5); the fate of an expired or poisoned message is recorded after it
    (READY, "expire"): frozenset({EXPIRED}),
    (EXPIRED, "expire"): frozenset({EXPIRED}),
    (EXPIRED, "dead-letter"): frozenset({EXPIRED}),
    (EXPIRED, "drop"): frozenset({EXPIRED}),
    (DEAD, "dead-letter"): frozenset({DEAD}),
    (DEAD, "drop"): frozenset({DEAD}),
    (DEAD, "schedule redelivery"): frozenset({DEAD}),
    # a slow topic subscriber's pending limit (its copy only), then the copy's fate
    (READY, "discard"): frozenset({DISCARDED}),
    (DISCARDED, "dead-letter"): frozenset({DISCARDED}),
    (DISCARDED, "drop"): frozenset({DISCARDED}),
    # administration
    (READY, "purge"): frozenset({PURGED}),
    (IN_FLIGHT, "purge"): frozenset({PURGED}),
    (TX_ACKED, "purge"): frozenset({PURGED}),
}

#: history event -> lifecycle event, where the names differ (``ack`` and the transaction events are qualified)
_EVENTS = {
    "dispatched": "dispatch",
    "released": "release",
    "expired": "expire",
    "dead-lettered": "dead-letter",
    "dropped": "drop",
    "purged": "purge",
    "discarded": "discard",
    "rolled-back": "roll back ack",
    "redelivery-scheduled": "schedule redelivery",
}


def event_of(event: str, ack_type: str | None, transaction_id: int | None, consumer_id: int | None) -> str:
    """The lifecycle event a history record (its ``event``, ``ack_type``, ``transaction_id``, ``consumer_id``)
    stands for."""
    if event == "ack":
        return f"ack {ack_type}" + (" in transaction" if transaction_id is not None else "")
    if event == "sent":
        return "send" if transaction_id is None else "send in transaction"
    if event == "committed":
        return "commit send" if consumer_id is None else "commit ack"
    return _EVENTS.get(event, event)


def next_states(state: State, event: str) -> frozenset[State]:
    """Where ``event`` can take a message in ``state``; empty when the table has no such move."""
    return TRANSITIONS.get((state, event), frozenset())


def state_of(entry: QueueEntry) -> State:
    """The state of a message that is a queue entry, read from the entry's fields."""
    if entry.acked_in_txn is not None:
        return TX_ACKED
    return READY if entry.holder is None else IN_FLIGHT
