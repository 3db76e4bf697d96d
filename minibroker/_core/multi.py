"""Consumers on several destinations at once: wildcards (``ORDERS.*.IN``, ``ORDERS.>``) and composites (``QA,QB``).

ActiveMQ gives such a consumer one subscription, with one prefetch window, in every destination it reads: those that
exist when it subscribes and those made later (``AbstractRegion.addDestination``). Each destination keeps its own
order and dispatches on its own, so the interleaving across destinations is the real broker's threads' choice (the
recordings compare it per queue); here the queues dispatch in the order they joined the subscription. Only the parts
of a composite's own kind are read: a queue consumer on ``QA,topic://TB`` reads QA alone (recorded), as ActiveMQ looks
the composite up in the region of its own kind.

One message can reach such a consumer twice with one message id (a composite send to two queues it reads, recorded:
both copies are delivered). :class:`Copies` keeps each copy as its own dispatch, so the window counts both and an ack
by id takes the first copy still held, as ActiveMQ's dispatched list does.
"""

from __future__ import annotations

import functools

import attrs

from ..message import Destination, composite_parts
from .queue import Queue
from .subscription import EntryHolder, QueueEntry, Subscription
from .virtual import is_wildcard, topic_matches

__all__ = ["Copies", "QueueSet", "SubscriptionOnMany", "parts_of", "queue_of", "reads", "reads_many"]


def reads_many(destination: Destination) -> bool:
    """Whether a consumer on ``destination`` reads several destinations (a wildcard or a composite name)."""
    name = destination.name
    return "," in name or is_wildcard(name)


def reads(destination: Destination, name: str) -> bool:
    """Whether a consumer on the wildcard or composite ``destination`` reads the destination ``name`` of its kind."""
    exact, patterns = parts_of(destination)
    return name in exact or any(topic_matches(pattern, name) for pattern in patterns)


@functools.lru_cache(maxsize=4096)
def parts_of(destination: Destination) -> tuple[frozenset[str], tuple[str, ...]]:
    """The names a wildcard or composite ``destination`` reads of its own kind: the plain ones (looked up by name)
    and the wildcard patterns; parsed once per destination (a composite of 2,000 parts was parsed per queue)."""
    exact: set[str] = set()
    patterns: list[str] = []
    for part in composite_parts(destination):
        if part.kind is destination.kind:
            if is_wildcard(part.name):
                patterns.append(part.name)
            else:
                exact.add(part.name)
    return frozenset(exact), tuple(patterns)


class Copies(dict[str, QueueEntry]):
    """The dispatched messages of a :class:`SubscriptionOnMany`, by message id, in dispatch order; a second copy of
    an id held already goes under an alias key (``id\\x00n``) until the copies before it are gone."""

    __slots__ = ("aliases",)

    def __init__(self) -> None:
        super().__init__()
        #: how many alias keys are in the dict (none: every operation is a plain dict's)
        self.aliases = 0

    def __setitem__(self, message_id: str, entry: QueueEntry) -> None:
        if message_id in self:
            n = 1
            while f"{message_id}\x00{n}" in self:
                n += 1
            message_id = f"{message_id}\x00{n}"
            self.aliases += 1
        dict.__setitem__(self, message_id, entry)

    def discard(self, entry: QueueEntry) -> None:
        """Take out this very copy; the next copy of its id (if any) then answers to the id."""
        message_id = entry.message.message_id
        if dict.get(self, message_id) is entry:
            dict.__delitem__(self, message_id)
            if self.aliases:
                self._promote(message_id)
            return
        if self.aliases:
            for key, held in list(self.items()):
                if held is entry:
                    dict.__delitem__(self, key)
                    self.aliases -= 1
                    return

    def _promote(self, message_id: str) -> None:
        prefix = message_id + "\x00"
        alias = next((key for key in self if key.startswith(prefix)), None)
        if alias is None:
            return
        items = list(self.items())
        dict.clear(self)
        for key, held in items:
            dict.__setitem__(self, message_id if key == alias else key, held)
        self.aliases -= 1

    def clear(self) -> None:
        dict.clear(self)
        self.aliases = 0


@attrs.define(slots=True, eq=False)
class SubscriptionOnMany(Subscription):
    """A consumer on a wildcard or composite destination: one window over every destination it reads."""

    def consume(self, entry: QueueEntry, contract: bool = True) -> None:
        assert isinstance(self.dispatched, Copies)
        self.dispatched.discard(entry)
        if contract and self.extension and self.prefetch:
            self.extension -= 1
        self.source.consume(entry)  # still held: the store's undo log (undo.py) records who held it
        entry.holder = None

    def untrack(self, entry: QueueEntry) -> None:
        assert isinstance(self.dispatched, Copies)
        self.dispatched.discard(entry)

    def held_from(self, queue: EntryHolder) -> int:
        return sum(1 for entry in self.dispatched.values() if queue.entries.get(entry.seq) is entry)

    def let_go_of(self, queue: EntryHolder) -> None:
        assert isinstance(self.dispatched, Copies)
        for entry in [e for e in self.dispatched.values() if queue.entries.get(e.seq) is e]:
            self.dispatched.discard(entry)


class QueueSet:
    """Where a consumer on several queues takes messages from: an acked message leaves the queue that holds it."""

    __slots__ = ("queues",)

    def __init__(self) -> None:
        #: the queues read, in the order they joined
        self.queues: list[Queue] = []

    def owner(self, entry: QueueEntry) -> Queue | None:
        """The queue ``entry`` is in (None: it is in none any more, purged meanwhile)."""
        for queue in self.queues:
            if queue.entries.get(entry.seq) is entry:
                return queue
        return None

    def consume(self, entry: QueueEntry) -> None:
        queue = self.owner(entry)
        if queue is not None:
            queue.consume(entry)


def queue_of(sub: Subscription, entry: QueueEntry) -> Queue | None:
    """The queue holding a subscription's entry (None for a topic subscriber's own copy, or a purged entry)."""
    source = sub.source
    if isinstance(source, Queue):
        return source if source.entries.get(entry.seq) is entry else None
    if isinstance(source, QueueSet):
        return source.owner(entry)
    return None
