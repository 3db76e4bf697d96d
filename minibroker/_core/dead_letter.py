"""Where a failed message goes, and what its dead-lettered copy looks like (ActiveMQ's dead-letter strategies).

Rules (``AbstractDeadLetterStrategy``, ``RegionBroker.sendToDeadLetterQueue``, ``BrokerSupport.doResend``):

* non-persistent messages are dropped unless ``process_non_persistent``; expired ones go only if ``process_expired``;
* a message already dead-lettered once by the same strategy is dropped (the strategy's audit);
* a message whose dead-letter queue is its own destination is dropped (no loops);
* the copy keeps its message id, becomes persistent, never expires (unless the strategy says so), carries the cause in
  ``dlqDeliveryFailureCause`` and its former destination in ``original_destination``, and its counter is reset to 0
  (and, unless the policy gives dead letters an expiration, ``originalExpiration``: the expiration it had, in epoch
  milliseconds, 0 for none. ActiveMQ's JMS client drops that property when it copies what it receives, so the JMS
  recordings never show it; STOMP subscribers see it as a header, issue 42).

:class:`DeadLetters` takes the decision and keeps the audit and the record of every message given up on; the
broker asks it after its ``dead_letter_hook`` (the broker redelivery plugin) declined the message, and enqueues the
copy it returns.
"""

from __future__ import annotations

import attrs

from ..message import ORIGINAL_EXPIRATION, Destination, Message, PropertyValue
from .history import DeadLetterRecord, History
from .policy import DestinationPolicy

__all__ = ["DeadLetters", "dead_letter_copy", "dead_letter_destination", "expiry_cause", "should_dead_letter"]

#: how many :class:`DeadLetterRecord` a broker keeps (the first ones: a test reads them to explain what went wrong)
RECORD_LIMIT = 10_000


class DeadLetters:
    """The broker's dead-letter strategy at work: routes each failed message, remembers what it dead-lettered."""

    __slots__ = ("_audit", "_history", "records")

    def __init__(self, history: History) -> None:
        self._history = history
        #: dead-letter queue -> ids already dead-lettered to it (ActiveMQ's per-strategy audit)
        self._audit: dict[str, set[str]] = {}
        #: every message given up on (dead-lettered or dropped), oldest first, at most RECORD_LIMIT
        self.records: list[DeadLetterRecord] = []

    def route(
        self, policy: DestinationPolicy, message: Message, cause: str | None, *, expired: bool, now: float
    ) -> Message | None:
        """The copy of ``message`` to put on its dead-letter queue, or None when the strategy drops it."""
        source = message.destination
        dlq = dead_letter_destination(policy, source)
        if not should_dead_letter(policy, message, expired=expired):
            self._record(now, message, None, cause)
            return None
        if dlq == source:
            self._record(now, message, None, f"loop: {cause}")
            return None
        audit = self._audit.setdefault(str(dlq), set())
        if message.message_id in audit:
            self._record(now, message, None, f"duplicate: {cause}")
            return None
        audit.add(message.message_id)
        self._record(now, message, dlq, cause)
        return dead_letter_copy(message, dlq, cause, now, policy)

    def forget(self, dlq: Destination, message_id: str) -> None:
        """The copy of ``message_id`` never reached ``dlq`` (its store write failed, undo.py): it may go again."""
        self._audit.get(str(dlq), set()).discard(message_id)

    def _record(self, now: float, message: Message, dlq: Destination | None, cause: str | None) -> None:
        if dlq is None:
            self._history.add(message.message_id, now, "dropped", detail=cause)
        else:
            self._history.add(message.message_id, now, "dead-lettered", detail=cause, destination=str(dlq))
        if len(self.records) < RECORD_LIMIT:
            self.records.append(
                DeadLetterRecord(
                    now,
                    message.message_id,
                    message.body,
                    str(message.destination),
                    None if dlq is None else dlq.name,
                    cause,
                )
            )


def expiry_cause(message: Message) -> str:
    """The ``dlqDeliveryFailureCause`` ActiveMQ stamps on an expired message's copy."""
    return f"java.lang.Throwable: Message Expired. Expiration:{int(round(message.expiration * 1000))}"


def dead_letter_destination(policy: DestinationPolicy, destination: Destination) -> Destination:
    """The queue a failed message from ``destination`` is sent to."""
    if policy.dead_letter_strategy == "individual":
        if destination.is_queue:
            return Destination.queue(f"{policy.queue_prefix}{destination.name}{policy.queue_suffix}")
        name = f"{policy.topic_prefix}{destination.name}{policy.topic_suffix}"
        return Destination.queue(name) if policy.use_queue_for_topic_messages else Destination.topic(name)
    return Destination.queue(policy.dead_letter_queue)


def should_dead_letter(policy: DestinationPolicy, message: Message, *, expired: bool) -> bool:
    """ActiveMQ's ``isSendToDeadLetterQueue`` minus the audit (kept by the broker)."""
    if not message.persistent and not policy.process_non_persistent:
        return False
    return not (expired and not policy.process_expired)


def dead_letter_copy(
    message: Message, to: Destination, cause: str | None, now: float, policy: DestinationPolicy
) -> Message:
    """The message as it lands on the dead-letter queue."""
    properties: dict[str, PropertyValue] = dict(message.properties)
    properties.pop(ORIGINAL_EXPIRATION, None)  # ActiveMQ copies the message first, which drops it
    if policy.dead_letter_expiration > 0:
        expiration = now + policy.dead_letter_expiration
    else:  # RegionBroker.stampAsExpired: what its expiration was (0: none), as a long
        expiration = 0.0
        from ..typed import Long  # Java's numbers (decimal) load with the first expired dead letter (issue 45)

        properties[ORIGINAL_EXPIRATION] = Long(round(message.expiration * 1000) if message.expiration else 0)
    if not message.persistent:
        properties["originalDeliveryMode"] = "NON_PERSISTENT"
    if cause is not None:
        properties["dlqDeliveryFailureCause"] = cause
    return attrs.evolve(
        message,
        destination=to,
        properties=properties,
        persistent=True,
        expiration=expiration,
        original_destination=message.destination,  # BrokerSupport.doResend: where it was, whatever it was before
    )
