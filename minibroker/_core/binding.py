"""A wildcard topic subscription joins the topics it reads a step at a time when there are many (issue 31, item 3).

ActiveMQ adds a wildcard subscription to each matching topic when it subscribes (``AbstractRegion.addConsumer``),
and a retroactive one (an MQTT ``#``) gets each topic's retained message. Over tens of thousands of topics that is
a long stretch of work, and the broker runs on one event loop: done in one go, every other client would wait for it.
So past :data:`BIND_STEP` topics the core binds the first step at once and keeps the rest as work
(``BrokerCore.binding``), which the driver hands back a step at a time between other clients' calls
(:meth:`TopicBinding.bind_more`). Nothing is missed meanwhile: a publish to a matching topic not bound yet binds it
first (:meth:`TopicBinding._bind_before_publish`), so the subscriber sees what it would have seen bound at once;
and a topic made meanwhile is joined as it is made, like any wildcard subscription's.

A retroactive subscription joins at its subscriber's pace: its next step waits while :data:`BIND_STEP` topics or
more hold retained messages it has not been given (its prefetch window is full). Joined at once, 50,000 retained
topics put a waiting entry (and a deque to hold it) on each before the subscriber had taken a hundred: 150,000 more
objects in memory, and in every full garbage collection meanwhile, which stalled every client (issue 31).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from .multi import reads
from .state import CoreState
from .subscription import Subscription
from .topic import Topic

__all__ = ["BIND_STEP", "TopicBinding"]

#: topics bound per step: about 5 ms of work with a retained message each, and as much again for an MQTT edge to
#: write what the step dispatched (2,000 held the loop 20 + 16 ms a step in `serve`, and another client waited two)
BIND_STEP = 500


@attrs.define(slots=True, eq=False)
class _Binding:
    """A subscription's topics still to join: ``topics[next:]`` (the topics as they were when it subscribed)."""

    sub: Subscription
    topics: list[Topic]
    next: int
    retroactive: bool


class TopicBinding(CoreState):
    """Wildcard and composite topic subscriptions joining the topics they read."""

    def _bind_topics(self, sub: Subscription, retroactive: bool) -> None:
        """Join ``sub`` to every topic it reads (and give it their retained messages if it is retroactive): at once,
        or the first step now and the rest as work for :meth:`bind_more`."""
        if len(self.topics) <= BIND_STEP:
            self._bind(sub, self.topics.values(), retroactive)
            return
        work = _Binding(sub, list(self.topics.values()), 0, retroactive)
        self.binding[sub.consumer_id] = work
        self._bind_step(work)

    def _bind(self, sub: Subscription, topics: Iterable[Topic], retroactive: bool) -> None:
        destination, live = sub.destination, self.topics
        for t in topics:
            name = t.destination.name
            if t.has_subscriber(sub) or live.get(name) is not t:
                continue  # joined already (a publish bound it first), or gone since
            if reads(destination, name) and self._may_read(sub, t.destination):
                t.add_subscription(sub)
                if retroactive:
                    t.recover(sub)

    def _bind_step(self, work: _Binding) -> None:
        end = work.next + BIND_STEP
        self._bind(work.sub, work.topics[work.next : end], work.retroactive)
        work.next = end
        if end >= len(work.topics):
            del self.binding[work.sub.consumer_id]
        if work.sub.waiting_in:
            self._dispatch_waiting(work.sub)

    def bind_more(self) -> bool:
        """One step of each subscription still joining its topics that is ready for one; whether any is still
        ready (a retroactive subscriber that has not taken what it was given waits: :meth:`binding_ready`)."""
        for consumer_id, work in list(self.binding.items()):
            if work.sub.closed:
                del self.binding[consumer_id]
            elif self.step_ready(work):
                self._bind_step(work)
        return self.binding_ready()

    def binding_ready(self) -> bool:
        """Whether a subscription still joining its topics is ready for its next step."""
        return any(self.step_ready(work) for work in self.binding.values())

    @staticmethod
    def step_ready(work: _Binding) -> bool:
        """A retroactive subscription's next step waits while BIND_STEP topics or more hold what it has not been
        given; any other's is always ready."""
        waiting = work.sub.waiting_in
        return not work.retroactive or waiting is None or len(waiting) < BIND_STEP

    def subscriber_count(self, t: Topic) -> int:
        """``t``'s subscribers as ActiveMQ counts them (an offline durable subscription counts), with those still
        joining that will read it: bound at once, they would be counted."""
        count = len(t.subscriptions) + len(t.durables)
        for work in self.binding.values():
            sub = work.sub
            if (
                not sub.closed
                and not t.has_subscriber(sub)
                and reads(sub.destination, t.destination.name)
                and self._may_read(sub, t.destination)
            ):
                count += 1
        return count

    def _bind_before_publish(self, t: Topic) -> None:
        """A message is about to be published to ``t``: the subscriptions still joining topics join it first if
        they read it (bound at once, they would have)."""
        for work in self.binding.values():
            sub = work.sub
            if not sub.closed and not t.has_subscriber(sub):
                self._bind(sub, (t,), work.retroactive)
