"""What the core does when its clock moves: the expiry sweep, pull timeouts, scheduled jobs and throttles come due
at :meth:`Timers.tick`, which the driver calls at :meth:`Timers.next_deadline`; and the fault injections that pause
or throttle a queue's dispatch. A part of :class:`~minibroker._core.broker.BrokerCore` (state.py says how the parts
share the core)."""

from __future__ import annotations

import heapq

from .binding import TopicBinding
from .effects import Dispatch
from .state import CoreState

__all__ = ["EXPIRE_PERIOD", "Timers"]

#: seconds between two expiry sweeps while a message with an expiration waits (ActiveMQ's ``expireMessagesPeriod``)
EXPIRE_PERIOD = 30.0


class Timers(CoreState):
    """Timers and the faults that work through dispatch timing."""

    def sweep_again(self, delay: float) -> None:
        """Sweep for expired messages again in ``delay`` seconds at the latest (a store failure took an expiry
        back: it is tried again soon, not in a loop)."""
        due = self.clock.now() + delay
        if self._next_sweep is None or due < self._next_sweep:
            self._next_sweep = due
            self.timers_set += 1

    def _arm_sweep(self) -> None:
        """A message with an expiration arrived: the expiry sweep runs in EXPIRE_PERIOD unless it is armed already."""
        if self._next_sweep is None:
            self._next_sweep = self.clock.now() + EXPIRE_PERIOD
            self.timers_set += 1

    def sweep_expired(self) -> None:
        """Expire every waiting message whose time has come (ActiveMQ's periodic ``expireMessages``)."""
        now = self.clock.now()
        any_expiring = False
        self._catch_up_expiring(now)
        for q in list(self.queues.values()):
            for entry in list(q.pending()):
                if entry.message.expiration:
                    if now >= entry.message.expiration:
                        self._expire_entry(q, entry, now, pending=True)
                    else:
                        any_expiring = True
        any_expiring = any_expiring or any(t.log is not None and t.log.expiring for t in self.topics.values())
        self._next_sweep = now + EXPIRE_PERIOD if any_expiring else None
        self.timers_set += 1

    # -- the timers the driver arms ---------------------------------------------------------------------------------

    def pending_work(self) -> list[str]:
        """What the core still has to do now or on a timer (for ``Broker.settled``): descriptions."""
        now = self.clock.now()
        pending = [
            f"broker: {message.message_id} scheduled for {message.destination} at +{when - now:.3f}s "
            f"(redelivery counter {counter})"
            for when, _, message, counter in sorted(self._scheduled)
        ]
        for name, q in sorted(self.queues.items()):
            if q.consumers and q.dispatchable():
                pending.append(f"broker: queue {name} has {q.pending_count} message(s) ready to dispatch")
        pending.extend(f"broker: queue {name} throttled" for name in sorted(self._throttle_due))
        pending.extend(
            f"broker: consumer {consumer_id} still joining {len(work.topics) - work.next} topic(s)"
            for consumer_id, work in self.binding.items()
            if TopicBinding.step_ready(work)  # a subscription waiting for its subscriber to take more is not work left
        )
        return pending

    def next_deadline(self) -> float | None:
        """The earliest timer due (None: none): the driver asks after each call, to arm its one timer."""
        if not (self._pull_timers or self._scheduled or self._next_sweep is not None or self._throttle_due):
            return None
        candidates = list(self._throttle_due.values())
        if self._pull_timers:
            candidates.append(self._pull_timers[0][0])
        if self._next_sweep is not None:
            candidates.append(self._next_sweep)
        if self._scheduled:
            candidates.append(self._scheduled[0][0])
        return min(candidates) if candidates else None

    def tick(self) -> None:
        """Do whatever was due by now: pull timeouts, scheduled deliveries, the expiry sweep."""
        now = self.clock.now()
        while self._pull_timers and self._pull_timers[0][0] <= now:
            _, consumer_id, mark = heapq.heappop(self._pull_timers)
            sub = self.subscriptions.get(consumer_id)
            if sub is not None and sub.dispatch_count == mark:
                sub.extension = 0
                self.output.append(Dispatch(consumer_id, None))
        if self._scheduled and self._scheduled[0][0] <= now:
            self._fire_due_jobs(now)
        if self._next_sweep is not None and self._next_sweep <= now:
            self.sweep_expired()
        for name, due in list(self._throttle_due.items()):
            if due <= now:
                del self._throttle_due[name]
                q = self.queues.get(name)
                if q is not None:
                    self._dispatch_destination(q.destination)

    # -- fault injection --------------------------------------------------------------------------------------------

    def pause(self, name: str) -> None:
        """Stop dispatching from a queue (sends are still accepted)."""
        self.queue(name).paused = True

    def resume(self, name: str) -> None:
        q = self.queue(name)
        q.paused = False
        self._dispatch_destination(q.destination)

    def throttle(self, name: str, interval: float | None) -> None:
        """Dispatch at most one message of a queue every ``interval`` seconds (None: back to full speed)."""
        if interval is None or interval <= 0:
            self.throttles.pop(name, None)
            self._throttle_due.pop(name, None)
            q = self.queues.get(name)
            if q is not None:
                self._dispatch_destination(q.destination)
            return
        self.throttles[name] = interval
