"""What a STOMP connection's subscriptions hold, and how their acks reach the broker.

Each subscription keeps its unacked deliveries in dispatch order (``ack:client`` settles every one up to the named
message); 1.2 ack ids map to one delivery. Auto acks are owed at dispatch and sent later, in batches, by
:func:`send_auto_acks`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Final

import attrs

from minibroker import AckType, BrokerConnection, Destination, MessageAck
from minibroker.errors import MinibrokerError

from .codec import StompFrame
from .values import StompError

__all__ = [
    "Delivery",
    "Ignored",
    "StompAckMode",
    "Subscription",
    "Transaction",
    "find_delivery",
    "send_ack",
    "send_auto_acks",
]


class StompAckMode:
    """The ``ack`` header's values."""

    AUTO: Final = "auto"
    CLIENT: Final = "client"
    INDIVIDUAL: Final = "client-individual"


@attrs.define(slots=True, eq=False)
class Delivery:
    message_id: str
    ack_id: str | None
    index: int


@attrs.define(slots=True, eq=False)
class Subscription:
    #: the ``id`` header (None: a 1.0 subscription without one)
    header_id: str | None
    destination: Destination
    stomp_destination: str
    mode: str
    browser: bool = False
    consumer_id: int | None = None
    unacked: dict[str, Delivery] = attrs.field(factory=dict)
    next_index: int = 0
    closed: bool = False
    #: the ``subscription`` header line of its MESSAGEs, escaped ("" without an id; None: MESSAGEs take the frame path)
    id_line: str | None = ""
    #: the SUBSCRIBE's ``transformation`` (``jms-map-json``, ...): how messages are written (transformations.py)
    transformation: str | None = None
    #: the last destination the auto hot path wrote (by identity) and its escaped STOMP name: a queue consumer's
    #: messages share one Destination object per producer, whose hash is a Python call (converter._on_auto_dispatch)
    escaped_for: Destination | None = None
    escaped_destination: str = ""


@attrs.define(slots=True, eq=False)
class Transaction:
    core_id: int
    #: deliveries acked in this transaction: restored to their subscription on ABORT
    acked: list[tuple[Subscription, Delivery]] = attrs.field(factory=list)
    #: why a SEND in it failed unseen (no receipt asked): its COMMIT fails and rolls it back, as ActiveMQ's
    #: ``rollbackOnlyOnAsyncException`` marks it
    rollback_only: str | None = None


class Ignored(Exception):
    """A NACK ActiveMQ accepts without doing anything."""


def find_delivery(
    frame: StompFrame,
    version: str,
    *,
    nack: bool,
    acks: Mapping[str, tuple[Subscription, Delivery]],
    subs: Mapping[str, Subscription],
    all_subs: Iterable[Subscription],
    check_transaction: Callable[[str | None], object],
) -> tuple[Subscription, Delivery] | None:
    """The subscription and delivery an ACK/NACK names, after ActiveMQ's header checks (None: no such one)."""
    headers = frame.headers
    message_id = headers.get("message-id")
    sub_id = headers.get("subscription")
    if nack:
        if version == "1.0":
            raise StompError("NACK received but connection is in v1.0 mode.")
        if version == "1.1":
            if sub_id is None:
                raise StompError("NACK received without a subscription id for acknowledge!")
            if message_id is None:
                raise StompError("NACK received without a message-id to acknowledge!")
    else:
        if message_id is None and version != "1.2":
            raise StompError("ACK received without a message-id to acknowledge!")
        if version == "1.1" and sub_id is None:
            raise StompError("ACK received without a subscription id for acknowledge!")
    ack_id = headers.get("id") if version == "1.2" else None
    if version == "1.2" and ack_id is None:
        raise StompError(
            "NACK received without an ack header to acknowledge!"
            if nack
            else "ACK received without a ack id for acknowledge!"
        )
    check_transaction(headers.get("transaction"))
    if ack_id is not None:
        return acks.get(ack_id)
    assert message_id is not None
    if sub_id is not None:
        sub = subs.get(sub_id)
        if sub is None:
            return None
        delivery = sub.unacked.get(message_id)
        if delivery is None:
            if nack:
                raise Ignored
            return None
        return sub, delivery
    for sub in all_subs:
        delivery = sub.unacked.get(message_id)
        if delivery is not None:
            return sub, delivery
    return None


def send_ack(
    connection: BrokerConnection, sub: Subscription, delivery: Delivery, txn: Transaction | None
) -> list[Delivery]:
    """The broker acks of an ACK of ``delivery`` (``ack:client``: every delivery up to it, one range ack); returns
    the deliveries it settles."""
    assert sub.consumer_id is not None
    if sub.mode == StompAckMode.CLIENT:
        span: list[Delivery] = []
        for item in sub.unacked.values():
            span.append(item)
            if item is delivery:
                break
        first = span[0].message_id
        if txn is None:
            connection.ack(MessageAck(sub.consumer_id, AckType.STANDARD, delivery.message_id, first, len(span)))
        else:
            # the prefetch slots are free at once; the messages are settled at COMMIT
            connection.ack(MessageAck(sub.consumer_id, AckType.DELIVERED, delivery.message_id, first, len(span)))
            connection.ack(
                MessageAck(sub.consumer_id, AckType.STANDARD, delivery.message_id, first, len(span), txn.core_id),
            )
            txn.acked.extend((sub, item) for item in span)
        return span
    connection.ack(
        MessageAck(
            sub.consumer_id,
            AckType.INDIVIDUAL,
            delivery.message_id,
            delivery.message_id,
            1,
            None if txn is None else txn.core_id,
        ),
    )
    if txn is not None:
        txn.acked.append((sub, delivery))
    return [delivery]


def send_auto_acks(
    connection: BrokerConnection | None,
    pending: deque[tuple[int, str]],
    by_consumer: Mapping[int, Subscription],
    limit: int | None,
) -> None:
    """Send the owed auto acks, oldest first (at most ``limit`` messages, counting those dispatched meanwhile).

    Consecutive acks of one consumer go as one STANDARD range ack (first..last, with its count), which the broker
    checks against what it dispatched: all of a consumer's auto acks are owed in dispatch order, so the range is
    exactly those messages. Should it not be (the broker refuses the count or the ids), each message is acked on
    its own, as before; a refusal then means the message is no longer held (the consumer went away meanwhile).
    A lone message goes through ``BrokerConnection.ack_one`` (the same STANDARD ack, without building a MessageAck).
    """
    if not pending or connection is None:
        return
    budget: float = math.inf if limit is None else limit
    ack = connection.ack
    ack_one = connection.ack_one
    while pending and budget > 0:
        consumer_id, first = pending.popleft()
        budget -= 1
        if not pending or pending[0][0] != consumer_id:  # one message (prefetch 1, or several consumers)
            if consumer_id in by_consumer:
                try:
                    if not ack_one(consumer_id, first):  # not held any more: the full ack
                        ack(MessageAck(consumer_id, AckType.STANDARD, first, first, 1))
                except MinibrokerError:
                    pass
            continue
        ids = [first]
        while pending and budget > 0 and pending[0][0] == consumer_id:
            ids.append(pending.popleft()[1])
            budget -= 1
        if consumer_id not in by_consumer:
            continue
        try:
            ack(MessageAck(consumer_id, AckType.STANDARD, ids[-1], first, len(ids)))
            continue
        except MinibrokerError:
            if len(ids) == 1:
                continue
        for message_id in ids:
            try:
                ack(MessageAck(consumer_id, AckType.STANDARD, message_id, message_id, 1))
            except MinibrokerError:
                pass
