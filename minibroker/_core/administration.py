"""What operators and connections do to a destination as a whole: browse it, purge it, remove the messages a
selector matches, remove it; and the temporary destinations connections create and delete. A part of
:class:`~minibroker._core.broker.BrokerCore` (state.py says how the parts share the core)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import DestinationInUse
from ..message import Destination, DestinationKind, Message
from .durable import DURABLE_PREFIX
from .state import CoreState
from .subscription import header_lookup

if TYPE_CHECKING:
    from ..selector import Selector

__all__ = ["Administration"]

QUEUE = DestinationKind.QUEUE


class Administration(CoreState):
    """Browsing and administration of destinations, and temporary destinations."""

    def browse(self, name: str, limit: int | None = None, selector: Selector | None = None) -> list[Message]:
        """The queue's unacked messages as ActiveMQ's browser sees them (``Queue.doBrowse``): a waiting message whose
        time ran out is expired on the way (counted, dead-lettered) and an expired one in flight is skipped; a queue
        with ``prioritized_messages`` is browsed highest priority first, FIFO within a priority. With a
        ``selector`` only matching messages are shown, and ``limit`` counts those (as recorded on ActiveMQ)."""
        self.catch_up_queue(name)  # a durable subscription away: its messages from its topic's log first
        q = self.queues.get(name)
        if q is None:
            return []
        now = self.clock.now()
        if q.policy.prioritized_messages:
            entries = sorted(q.entries.values(), key=lambda e: (-e.message.priority, e.seq))
        elif q.consumers or q.dispatched_total:
            # ActiveMQ browses what it paged in for its consumers first, in the order it paged them in, which for a
            # queue that has had consumers is the order messages came, and stays so after they left (recorded in the
            # mixed corpus: a message no consumer's selector takes stays before the ones consumers held,
            # mixed_3_029, mixed_9_053)
            entries = sorted(q.entries.values(), key=lambda e: e.seq)
        else:
            # nothing paged in: the cursors' order, which shows a mixed backlog's persistent messages first, as
            # ActiveMQ's separate store and memory cursors do (recorded: mixed_browse_order_persistent_first)
            # (entries in neither list, acked in an open transaction: the plain order)
            waiting = list(q.pending())
            entries = waiting if len(waiting) == len(q.entries) else sorted(q.entries.values(), key=lambda e: e.seq)
        shown: list[Message] = []
        for entry in entries:
            if entry.message.is_expired(now):
                if entry.holder is None and entry.acked_in_txn is None:
                    self._expire_entry(q, entry, now, pending=True)
                continue
            if selector is not None and not selector.matches(header_lookup(entry.message, entry.redelivery_counter)):
                continue
            if limit is not None and len(shown) >= limit:
                break
            shown.append(entry.message)
        return shown

    def purge(self, name: str) -> int:
        """Remove every message of a queue, in flight ones included; nothing is dead-lettered."""
        self.catch_up_queue(name)  # a durable subscription away: its messages from its topic's log first
        q = self.queues.get(name)
        if q is None:
            return 0
        if self.history.enabled:
            now = self.clock.now()
            for entry in q.entries.values():
                self.history.add(entry.message.message_id, now, "purged", destination=name)
        count = q.purge()
        if name.startswith(DURABLE_PREFIX):
            self._drop_shares(name)  # the rows of its topic's log it had not been handed yet went with it
        return count

    def remove_matching(self, name: str, selector: Selector) -> int:
        """Remove the waiting messages of a queue that ``selector`` matches (ActiveMQ's ``removeMatchingMessages``;
        ``JMSMessageID = 'ID:x'`` removes one message, its ``removeMessage``): they leave as if acked, counted
        dequeued, nothing dead-lettered. Messages in flight stay with their consumers (their ack settles them)."""
        self.catch_up_queue(name)  # a durable subscription away: its messages from its topic's log first
        q = self.queues.get(name)
        if q is None:
            return 0
        doomed = [
            entry
            for entry in sorted(q.entries.values(), key=lambda e: e.seq)
            if entry.holder is None
            and entry.acked_in_txn is None
            and selector.matches(header_lookup(entry.message, entry.redelivery_counter))
        ]
        if self.history.enabled:
            now = self.clock.now()
            for entry in doomed:
                self.history.add(entry.message.message_id, now, "purged", destination=name)
        q.drop(doomed)
        return len(doomed)

    def remove_destination(self, destination: Destination) -> bool:
        """An operator removes a destination and what it holds (ActiveMQ's ``removeQueue``/``removeTopic``); False
        when there is none. Refused with :class:`DestinationInUse`, before anything changes, while a consumer or a
        durable subscription reads it or an open transaction holds a message of it or for it (ActiveMQ drops it from
        under them; minibroker says so instead)."""
        name = destination.name
        if destination.kind is QUEUE:
            q = self.queues.get(name)
            if q is None:
                return False
            held = any(e.acked_in_txn is not None for e in q.entries.values()) or any(
                m.destination.name == name and m.destination.kind is QUEUE
                for txn in self.transactions.values()
                for m in txn.sends
            )
            if q.consumers or held:
                why = "a consumer reads it" if q.consumers else "an open transaction holds some of its messages"
                raise DestinationInUse(
                    f"{destination} cannot be removed: {why}",
                    destination=destination,
                    consumer_id=q.consumers[0].consumer_id if q.consumers else None,
                )
            self.purge(name)  # counted and journaled as any purge: the store forgets its messages
            del self.queues[name]
            self._virtual_queues.clear()
            q.release_memory()
            if q.policy.memory_limit:
                self.memory_limited -= 1
        else:
            t = self.topics.get(name)
            if t is None:
                return False
            if t.pending or t.durables:
                raise DestinationInUse(
                    f"{destination} cannot be removed: a subscriber or a durable subscription reads it",
                    destination=destination,
                    consumer_id=next(iter(t.pending), None),
                )
            del self.topics[name]
        if self.advisory_support:
            self._advise_destination(destination, added=False)
        return True

    # -- temporary destinations (temporary.py) ----------------------------------------------------------------------

    def create_temporary(
        self, connection_id: int, kind: DestinationKind, connection_name: str | None = None
    ) -> Destination:
        """A temporary queue or topic owned by the connection, deleted with it."""
        self._connection(connection_id)
        destination = self.temporaries.create(connection_id, kind, connection_name)
        if kind is QUEUE:
            self.queue(destination.name)
        else:
            self.topic(destination.name)
        return destination

    def delete_temporary(self, connection_id: int, destination: Destination) -> None:
        """Delete a temporary destination and what it holds; refused while a consumer reads it."""
        consumers = [sub.consumer_id for sub in self.subscriptions.values() if sub.destination == destination]
        self.temporaries.check_delete(connection_id, destination, consumers)
        if destination.kind is QUEUE:
            self.purge(destination.name)
            q = self.queues.pop(destination.name, None)
            self._virtual_queues.clear()
            if q is not None:
                q.release_memory()
                if q.policy.memory_limit:
                    self.memory_limited -= 1
        else:
            self.topics.pop(destination.name, None)
        if self.advisory_support:
            self._advise_destination(destination, added=False)
        self.temporaries.forget(destination)
