"""The broker-side redelivery plugin (ActiveMQ's ``RedeliveryPlugin``).

Instead of dead-lettering a poisoned message, the broker sends a copy back to the tail of its queue after a delay,
with its redelivery counter raised and the properties ``redeliveryDelay`` and ``scheduledJobId`` set. Only once the
broker's counter reaches the policy's maximum does the message go to the dead-letter queue. Meant to be used with
client ``maximum_redeliveries=0``; otherwise client and broker retries multiply, exactly as in ActiveMQ.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import attrs

from minibroker import Broker
from minibroker.destination_map import DestinationMap
from minibroker.errors import IllegalStateError
from minibroker.filters import BrokerFilter, DeadLetterRequest
from minibroker.redelivery import RedeliveryPolicy

__all__ = ["RedeliveryPlugin"]

#: ActiveMQ refuses broker redelivery delays shorter than this (milliseconds in its message)
MINIMUM_DELAY = 1.0
DEFAULT_POLICY = RedeliveryPolicy()


class RedeliveryPlugin(BrokerFilter):
    """Install with ``Broker(plugins=[RedeliveryPlugin(RedeliveryPolicy(...))], scheduler_support=True)``.

    ``policy`` applies to every destination, or give ``policies`` keyed by destination wildcards. A destination that
    matches no entry (and no default) is dead-lettered when ``fallback_to_dead_letter``, else dropped.
    """

    def __init__(
        self,
        policy: RedeliveryPolicy | None = DEFAULT_POLICY,
        *,
        policies: Mapping[str, RedeliveryPolicy] | None = None,
        send_to_dlq_if_max_retries_exceeded: bool = True,
        fallback_to_dead_letter: bool = True,
    ) -> None:
        self.policies: DestinationMap[RedeliveryPolicy | None] = DestinationMap(policy, policies or {})
        self.send_to_dlq_if_max_retries_exceeded = send_to_dlq_if_max_retries_exceeded
        self.fallback_to_dead_letter = fallback_to_dead_letter
        self._job_ids = itertools.count(1)

    def on_attach(self, broker: Broker) -> None:
        """Refuses, like ActiveMQ, without scheduler support or with a delay under one second."""
        if not broker.scheduler_support:
            raise IllegalStateError("RedeliveryPlugin requires schedulerSupport=true on the broker")
        candidates = [self.policies.default, *(policy for _, policy in self.policies.entries)]
        for policy in candidates:
            if policy is None:
                continue
            for name, value in (
                ("initialRedeliveryDelay", policy.initial_redelivery_delay),
                ("redeliveryDelay", policy.redelivery_delay),
            ):
                if value < MINIMUM_DELAY:
                    raise IllegalStateError(
                        f"RedeliveryPolicy {name} must exceed: 1000. {policy.activemq_string()}",
                        policy=policy,
                    )

    def on_dead_letter(self, request: DeadLetterRequest) -> bool:
        """True when the plugin took the message (rescheduled or dropped); else the next filter decides (by default
        the message goes to the DLQ)."""
        if request.expired:
            return self.next.on_dead_letter(request)
        policy = self.policies.get(str(request.source))
        counter = request.redelivery_counter
        if policy is None:
            return not self.fallback_to_dead_letter or self.next.on_dead_letter(request)
        maximum = policy.maximum_redeliveries
        if maximum != -1 and counter >= maximum:
            return not self.send_to_dlq_if_max_retries_exceeded or self.next.on_dead_letter(request)
        message = request.message
        delay = policy.delay_for(counter + 1)
        properties = dict(message.properties)
        properties["redeliveryDelay"] = int(round(delay * 1000))
        properties["scheduledJobId"] = f"ID:scheduler-{self.broker.name}:{next(self._job_ids)}"
        copy = attrs.evolve(message, properties=properties)
        self.broker.schedule_redelivery(delay, copy, counter + 1, request.cause)
        return True
