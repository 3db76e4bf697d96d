"""The core's memory limits: a queue's ``memory_limit``, the broker's system memory limit (ActiveMQ's ``systemUsage``,
``usage.MemoryUsage``) and the bytes transacted sends hold from the send on. The driver asks :meth:`has_space`
before it lets a send through (producer flow control); :meth:`_check_space` refuses one it let through to a full
queue (``send_fail_if_no_space``)."""

from __future__ import annotations

from ..errors import LimitExceeded
from ..message import Destination, DestinationKind, Message
from .state import CoreState

__all__ = ["MemoryLimits"]

QUEUE = DestinationKind.QUEUE


class MemoryLimits(CoreState):
    """Producer flow control's questions, answered by the core."""

    def _usage_changed(self, full: bool) -> None:
        """The system memory limit was reached (``full``) or freed: flow control applies to every queue meanwhile."""
        self.memory_limited += 1 if full else -1

    def has_space(self, name: str) -> bool:
        """False when queue ``name`` holds at least its policy's ``memory_limit`` bytes of unacked messages, or the
        broker's queues hold its system memory limit."""
        q = self.queues.get(name)
        if q is None:
            return True
        usage = self.usage
        if usage.full:
            if usage.used >= usage.limit:
                return False
            usage.free()
        limit = q.policy.memory_limit
        return not limit or q.memory + q.txn_memory < limit

    def _check_space(self, dest: Destination, message: Message) -> None:
        """LimitExceeded for a send the driver let through to a full queue (``send_fail_if_no_space``), or to any
        queue while the system memory limit is reached."""
        q = self.queues.get(dest.name)
        usage = self.usage
        if usage.full and usage.used < usage.limit:
            usage.free()
        if usage.full and (q is not None or self._policy_for(dest).send_fail_if_no_space):
            raise LimitExceeded(
                f"Usage Manager Memory Limit reached: the broker's queues hold {usage.used} bytes, system limit "
                f"{usage.limit}. Stopping producer ({message.producer_id}) to prevent flooding "
                f"{message.destination}.",
                destination=str(message.destination),
                limit=usage.limit,
            )
        if q is not None and q.policy.memory_limit and q.memory + q.txn_memory >= q.policy.memory_limit:
            raise LimitExceeded(
                f"Usage Manager Memory Limit reached on {message.destination}: {q.memory} bytes held, limit "
                f"{q.policy.memory_limit}. Stopping producer ({message.producer_id}) to prevent flooding "
                f"{message.destination}.",
                destination=str(message.destination),
                limit=q.policy.memory_limit,
            )

    def _hold_for_transaction(self, message: Message, sign: int) -> None:
        """Count (``sign`` 1) or release (-1) a transacted send's bytes against its queue's memory limit and the
        system's, from the send to the commit or rollback (a queue with a limit is made at the send to count it)."""
        size = sign * message.size_estimate()
        usage = self.usage
        usage.used += size
        if sign > 0 and usage.used >= usage.limit and not usage.full:
            usage.fill()
        name = message.destination.name
        q = self.queues.get(name)
        if q is None and sign > 0 and self._policy_for(message.destination).memory_limit:
            q = self.queue(name)
        if q is not None:
            q.txn_memory = max(0, q.txn_memory + size)
