"""Per-destination broker settings: what ActiveMQ configures with a ``policyEntry`` in ``destinationPolicy``.

One frozen value per destination, looked up once when the destination is created (``BrokerCore(policy_for=...)``),
and read by dispatch (priorities, strict order), the dead-letter strategy and producer flow control.
"""

from __future__ import annotations

import attrs

__all__ = ["DestinationPolicy"]


@attrs.frozen(slots=True)
class DestinationPolicy:
    """Per-destination broker settings (ActiveMQ ``PolicyEntry``)."""

    prioritized_messages: bool = False
    #: "shared" (ActiveMQ.DLQ) or "individual" (``<prefix>Queue.<name>``)
    dead_letter_strategy: str = "shared"
    dead_letter_queue: str = "ActiveMQ.DLQ"
    queue_prefix: str = "ActiveMQ.DLQ.Queue."
    topic_prefix: str = "ActiveMQ.DLQ.Topic."
    queue_suffix: str = ""
    topic_suffix: str = ""
    use_queue_for_topic_messages: bool = True
    process_non_persistent: bool = False
    process_expired: bool = True
    #: expiration set on dead-lettered copies, seconds from then (0 = never expire)
    dead_letter_expiration: float = 0.0
    strict_order_dispatch: bool = False
    #: ActiveMQ ``maxBrowsePageSize``
    max_browse_page_size: int = 400
    #: ActiveMQ ``memoryLimit``: bytes of unacked messages (``Message.size_estimate()``) the queue may hold before
    #: producer flow control starts (0 = no limit); topics are not limited
    memory_limit: int = 0
    #: ActiveMQ ``sendFailIfNoSpace``: a send to a full queue fails at once with ``LimitExceeded`` instead of waiting
    send_fail_if_no_space: bool = False
    #: ActiveMQ ``sendFailIfNoSpaceAfterTimeout`` (here in seconds): how long a send waits for space before it fails
    #: with ``LimitExceeded`` (None: as long as it takes)
    send_fail_if_no_space_after_timeout: float | None = None
    #: ActiveMQ ``constantPendingMessageLimitStrategy`` (topics): a non-durable subscriber that falls behind keeps at
    #: most this many messages waiting beyond its prefetch window; older ones are discarded (to the dead-letter queue
    #: when the strategy takes them), as ActiveMQ's stock ``activemq.xml`` does with 1000. -1: no limit
    pending_message_limit: int = 1000
