"""Where a failed message goes, and what its dead-lettered copy looks like (ActiveMQ's dead-letter strategies).

Rules (``AbstractDeadLetterStrategy``, ``RegionBroker.sendToDeadLetterQueue``, ``BrokerSupport.doResend``):

* non-persistent messages are dropped unless ``process_non_persistent``; expired ones go only if ``process_expired``;
* a message already dead-lettered once by the same strategy is dropped (the strategy's audit);
* a message whose dead-letter queue is its own destination is dropped (no loops);
* the copy keeps its message id, becomes persistent, never expires (unless the strategy says so), carries the cause in
  ``dlqDeliveryFailureCause`` and its former destination in ``original_destination``, and its counter is reset to 0
  (no ``originalExpiration`` property: ActiveMQ 5.17 does not stamp it, as the recordings show).
"""

from __future__ import annotations

import attrs

from ..message import Destination, Message, PropertyValue
from .policy import DestinationPolicy

__all__ = ["dead_letter_copy", "dead_letter_destination", "should_dead_letter"]


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
    if not message.persistent:
        properties["originalDeliveryMode"] = "NON_PERSISTENT"
    if cause is not None:
        properties["dlqDeliveryFailureCause"] = cause
    expiration = now + policy.dead_letter_expiration if policy.dead_letter_expiration > 0 else 0.0
    return attrs.evolve(
        message,
        destination=to,
        properties=properties,
        persistent=True,
        expiration=expiration,
        original_destination=message.original_destination or message.destination,
    )
