"""An asyncio event loop whose time is a :class:`~minibroker.ManualClock`'s: the application's own timers, virtual.

Why: a broker on a :class:`~minibroker.ManualClock` makes its own delays virtual (redelivery, expiry, scheduling),
but the code under test has timers of its own (``asyncio.sleep(30)`` between retries, ``asyncio.timeout``,
``wait_for``, a reconnect timer, ``loop.call_later``), and those ride on the event loop's clock. Opt in per test::

    @pytest.mark.asyncio
    @pytest.mark.minibroker_virtual_time
    async def test_the_service_retries(minibroker_stomp, manual_clock):
        await run_service(minibroker_stomp.url)        # sleeps 30 s between attempts: milliseconds here
        assert manual_clock.elapsed >= 60              # loop.time() is manual_clock.elapsed

The marker makes the test's event loop (pytest-asyncio's, for the test's ``loop_scope``: with ``loop_scope="module"``
the module's marked tests share one loop and its time) a :class:`VirtualTimeLoop`, and the ``minibroker`` fixture
(with ``manual_clock``, ``minibroker_stomp``, ``minibroker_mqtt``, ``minibroker_server``) runs on that loop's clock;
the fixtures' loop scope (``asyncio_default_fixture_loop_scope``) must be the test's, or the test is refused at
collection (the broker would run on another loop, with another time).
Keywords: ``autojump`` (True; False: time moves only by ``await manual_clock.advance(seconds)``) and
``autojump_threshold`` (real seconds of idleness before a jump, 0.01). It needs pytest-asyncio; a suite that picks
its loops with pytest-asyncio's ``pytest_asyncio_loop_factories`` hook adds ``VirtualTimeLoop`` there instead.

How it behaves, without patching :mod:`time` (as pytest's ``looptime`` plugin does):

* ``loop.time()`` is the clock's elapsed time, so every ``asyncio`` timer is a virtual timer;
* when the loop would wait for a timer, it first waits on its selector for ``autojump_threshold`` real seconds, so
  real sockets and threads still get their answers in; when nothing came and the process stayed idle (no hold of the
  clock, no executor job, no other thread using CPU), virtual time jumps to the next timer (the loop's or the
  clock's), the auto-jump rule of ``ManualClock(autojump=True)``; when something kept the process busy, virtual time
  follows real time for that step instead;
* ``await clock.advance(seconds)`` moves the loop's timers too, in order with the clock's.

What stays real: :func:`time.time`, :func:`time.monotonic` and every wall-clock read; threads and blocking clients
(``time.sleep`` in a thread, a stomp.py receiver's socket timeouts, paho's keep-alive, ``asyncio.to_thread`` jobs,
while which virtual time follows real time); other event loops (``minibroker_sync``'s, a Spark
``ThreadedBroker``'s). An MQTT client connected with a keep-alive holds virtual time to real speed (its PINGREQs are
timed in real time): connect with ``keepalive=0`` in a test that should jump. Outside pytest:
``asyncio.Runner(loop_factory=VirtualTimeLoop)``, or :class:`VirtualTimePolicy`.
"""

from __future__ import annotations

import asyncio
import math
import selectors
import time
from collections.abc import Callable
from typing import Any

from .clock import (
    _OTHER_THREADS_IDLE_NS,
    DEFAULT_AUTOJUMP_THRESHOLD,
    NS_PER_SECOND,
    ManualClock,
    _acknowledge_at_once,
    _jumper_handles,
    _other_threads_cpu_ns,
)

__all__ = ["VirtualTimeLoop", "VirtualTimePolicy"]

_Events = list[tuple[selectors.SelectorKey, int]]


class _VirtualSelector(selectors.DefaultSelector):
    """The loop's selector: a wait for a timer goes through the loop, which decides how long it is in real time."""

    loop: VirtualTimeLoop | None = None

    def select(self, timeout: float | None = None) -> _Events:
        loop = self.loop
        if loop is None or (timeout is not None and timeout <= 0):
            return super().select(timeout)
        return loop._wait(super().select)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector event loop on virtual time: ``loop.time()`` is ``clock.elapsed`` (see the module notes).

    ``clock``: the :class:`~minibroker.ManualClock` to follow (one is made with ``autojump`` and
    ``autojump_threshold`` when left out); give it to the broker (``Broker(clock=loop.clock)``) so that the broker's
    timers and the application's share one time. Without autojump, time moves only by ``clock.advance``.
    """

    def __init__(
        self,
        clock: ManualClock | None = None,
        *,
        autojump: bool = True,
        autojump_threshold: float = DEFAULT_AUTOJUMP_THRESHOLD,
    ) -> None:
        self.clock = (
            clock if clock is not None else ManualClock(autojump=autojump, autojump_threshold=autojump_threshold)
        )
        selector = _VirtualSelector()
        super().__init__(selector)
        self.clock._drive_from(self)
        selector.loop = self

    def time(self) -> float:
        return self.clock.elapsed_ns / NS_PER_SECOND

    def next_timer_ns(self) -> int | None:
        """When the loop's earliest timer that is work is due (elapsed nanoseconds), or None. Polls
        (:func:`~minibroker.clock.poll_sleep`) are not work: they wake when time passes them, and never hold it."""
        return self._earliest(polls=False)

    def _earliest(self, *, polls: bool) -> int | None:
        found: int | None = None
        scheduled: list[asyncio.TimerHandle] = getattr(self, "_scheduled", [])
        for handle in scheduled:
            if handle.cancelled() or (handle in _jumper_handles) != polls:
                continue
            when = math.ceil(handle.when() * NS_PER_SECOND)
            found = when if found is None else min(found, when)
        return found

    def _next_deadline_ns(self) -> int | None:
        """The next moment something is due: a loop timer or a clock timer; a poll only when there is nothing else."""
        due = [ns for ns in (self.next_timer_ns(), self.clock._next_deadline_ns()) if ns is not None]
        if due:
            return min(due)
        return self._earliest(polls=True)

    def _wait(self, select: Callable[[float | None], _Events]) -> _Events:
        """A wait for I/O with a timer pending: real readiness first, then virtual time moves (module notes)."""
        clock = self.clock
        deadline = self._next_deadline_ns() if clock.autojump else None
        if deadline is None:
            return select(None)  # nothing timed (or time moves only by advance): wait for real I/O or a wake-up
        if deadline <= clock.elapsed_ns:
            self.call_soon(self._fire_clock_timers)
            return select(0)
        _acknowledge_at_once(self)
        others = _other_threads_cpu_ns()
        began = time.monotonic()
        events = select(clock.autojump_threshold)
        if events:
            return events
        if clock._flow_reason(self) is not None or _other_threads_cpu_ns() - others > _OTHER_THREADS_IDLE_NS:
            # a peer is working (a hold, an executor job, another thread): follow real time for this step
            target = min(clock.elapsed_ns + round((time.monotonic() - began) * NS_PER_SECOND), deadline)
        else:
            target = deadline
        clock._move_to(target)
        self.call_soon(self._fire_clock_timers)
        return []

    def _fire_clock_timers(self) -> None:
        """Fire the clock's timers now due, one per turn of the loop, so that what each wakes runs before the next."""
        clock = self.clock
        if clock._fire_due(clock.elapsed_ns):
            self.call_soon(self._fire_clock_timers)


class VirtualTimePolicy(asyncio.DefaultEventLoopPolicy):
    """An event loop policy whose new loops are :class:`VirtualTimeLoop` (for pytest-asyncio's
    ``event_loop_policy`` fixture), each with its own clock."""

    def __init__(self, *, autojump: bool = True, autojump_threshold: float = DEFAULT_AUTOJUMP_THRESHOLD) -> None:
        super().__init__()
        self.autojump = autojump
        self.autojump_threshold = autojump_threshold

    def new_event_loop(self) -> VirtualTimeLoop:
        return VirtualTimeLoop(autojump=self.autojump, autojump_threshold=self.autojump_threshold)

    def __repr__(self) -> str:
        return f"VirtualTimePolicy(autojump={self.autojump}, autojump_threshold={self.autojump_threshold})"


def clock_of(loop: Any) -> ManualClock | None:
    """The clock a :class:`VirtualTimeLoop` follows, None for any other loop."""
    return loop.clock if isinstance(loop, VirtualTimeLoop) else None
