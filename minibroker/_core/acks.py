"""What each acknowledgement type does to a subscription (semantics §2, ActiveMQ's ``PrefetchSubscription``).

An ack names a range of the subscription's dispatches, ``first_message_id`` (None: the oldest) to
``last_message_id``, in dispatch order. Per type:

* STANDARD: the range is consumed (outside a transaction its size must equal ``message_count``), or, inside one,
  marked for the transaction to consume at commit; each consumed message narrows the window by one;
* INDIVIDUAL: exactly ``last_message_id``, whatever was dispatched before it; in a transaction it widens the window
  by one until the transaction ends;
* DELIVERED: the client holds the messages: widen the window by ``message_count``;
* REDELIVERED: the client redelivers locally: recorded, nothing changes;
* POISON: the range leaves the subscription (the window narrows by one for the whole range) for the dead-letter
  path; never transacted;
* EXPIRED: the range leaves the subscription (the window narrows by one) for the expiry path.

Each function checks everything before it changes anything, so a refused ack leaves the broker as it was; the
broker routes what POISON and EXPIRED hand back, and dispatches again after every ack.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import InvalidAcknowledge
from .commands import MessageAck
from .history import History
from .subscription import QueueEntry, Subscription
from .topic import count_before
from .transaction import Transaction

__all__ = [
    "ack_delivered",
    "ack_expired",
    "ack_individual",
    "ack_poison",
    "ack_range",
    "ack_redelivered",
    "ack_standard",
]


def ack_range(sub: Subscription, ack: MessageAck) -> list[QueueEntry]:
    """The dispatched entries from ``first_message_id`` (None: the oldest) to ``last_message_id``, in dispatch
    order; empty when ``last`` comes before ``first`` there, which ActiveMQ answers by acking nothing."""
    first = ack.first_message_id
    last = ack.last_message_id
    if last not in sub.dispatched or (first is not None and first not in sub.dispatched):
        raise InvalidAcknowledge(
            f"Unmatched acknowledge: {ack.ack_type.name} {first}..{last} was not dispatched to consumer "
            f"{sub.consumer_id}",
            ack=ack,
        )
    span: list[QueueEntry] = []
    inside = first is None
    for message_id, entry in sub.dispatched.items():
        if not inside and message_id == first:
            inside = True
        if inside:
            span.append(entry)
            if message_id == last:
                return span
    return []  # ActiveMQ: "Could not correlate acknowledgment with dispatched message": nothing is acked


def _record(history: History, now: float, sub: Subscription, entries: Iterable[QueueEntry], ack: MessageAck) -> None:
    if not history.enabled:
        return
    detail = ack.poison_cause
    for entry in entries:
        history.add(
            entry.message.message_id,
            now,
            "ack",
            sub.consumer_id,
            ack.ack_type.name,
            ack.transaction_id,
            entry.redelivery_counter,
            detail,
            None,
            ack.redelivery_delay,
        )


def ack_standard(sub: Subscription, ack: MessageAck, txn: Transaction | None, history: History, now: float) -> None:
    dispatched = sub.dispatched
    # Fast path: AUTO acks one message at a time, usually the oldest dispatched one.
    last = ack.last_message_id
    if txn is None and ack.message_count == 1 and ack.first_message_id in (None, last):
        entry = dispatched.get(last)
        if entry is not None and (ack.first_message_id == last or next(iter(dispatched)) == last):
            _record(history, now, sub, (entry,), ack)
            sub.consume(entry)
            return
    span = ack_range(sub, ack)
    if not span:
        return
    if txn is None and len(span) != ack.message_count:
        raise InvalidAcknowledge(
            f"Unmatched acknowledge: the range holds {len(span)} messages, the ack says {ack.message_count}",
            ack=ack,
        )
    _record(history, now, sub, span, ack)
    for entry in span:
        if txn is None:
            sub.consume(entry)
        else:
            txn.add_ack(sub, entry)


def ack_individual(sub: Subscription, ack: MessageAck, txn: Transaction | None, history: History, now: float) -> None:
    entry = sub.dispatched.get(ack.last_message_id)
    if entry is None:
        raise InvalidAcknowledge(
            f"Unmatched acknowledge: {ack.last_message_id} was not dispatched to consumer {sub.consumer_id}",
            ack=ack,
        )
    _record(history, now, sub, (entry,), ack)
    if txn is None:
        if sub.inflight_record is not None:  # ActiveMQ's client names no first message: all before it count too
            count_before(sub.inflight_record, entry.message.message_id)  # and the consume counts it
        sub.consume(entry)
    elif txn.add_ack(sub, entry):
        sub.expand(1)


def ack_delivered(sub: Subscription, ack: MessageAck, history: History, now: float) -> None:
    entry = sub.dispatched.get(ack.last_message_id)
    if entry is None:
        raise InvalidAcknowledge(
            f"Could not correlate acknowledgment with dispatched message: {ack.last_message_id}", ack=ack
        )
    sub.expand(ack.message_count)
    _record(history, now, sub, (entry,), ack)


def ack_redelivered(sub: Subscription, ack: MessageAck, history: History, now: float) -> None:
    if ack.last_message_id not in sub.dispatched:
        raise InvalidAcknowledge(f"Unmatched acknowledge: {ack.last_message_id} was not dispatched", ack=ack)
    _record(history, now, sub, ack_range(sub, ack), ack)


def ack_poison(sub: Subscription, ack: MessageAck, history: History, now: float) -> list[QueueEntry]:
    """Take the range from the subscription, consumed; the caller dead-letters the entries it returns."""
    span = ack_range(sub, ack)
    _record(history, now, sub, span, ack)
    # ActiveMQ narrows the window by one for the whole range, not one per message
    sub.contract(1)
    for entry in span:
        sub.consume(entry, contract=False)
    return span


def ack_expired(sub: Subscription, ack: MessageAck, history: History, now: float) -> list[QueueEntry]:
    """Take the range from the subscription, not yet from its destination: the caller expires each entry it
    returns (or consumes it, when the client's clock ran ahead of the broker's)."""
    span = ack_range(sub, ack)
    _record(history, now, sub, span, ack)
    for entry in span:
        sub.untrack(entry)
        entry.holder = None
    sub.contract(1)
    return span
