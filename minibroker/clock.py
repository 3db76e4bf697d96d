"""Time, as the broker and its clients see it.

Why a clock object: every delay in a message broker (redelivery back-off, receive timeouts, expiry, pull timeouts)
must be testable without waiting. The broker core only ever calls ``clock.now()``; the edges (the asyncio driver, the
client) ask the clock for timers with ``call_at``. Swap in a :class:`ManualClock` and hours of back-off run in
microseconds.

Times are seconds since the Unix epoch as floats, so that message timestamps and expirations look like JMS ones.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
import weakref
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "ManualClock", "RealClock", "TimerHandle"]

#: 2026-01-01T00:00:00Z: where a ManualClock starts unless told otherwise, so timestamps are plausible and fixed.
DEFAULT_MANUAL_EPOCH = 1_767_225_600.0

#: Timers due within this many seconds of the target of an advance fire with it. Epoch-based float times carry
#: about 2e-7 s of rounding, so "advance(0.199) then advance(0.001)" must still reach a timer set 0.2 s ahead.
TIMER_TOLERANCE = 1e-6


class TimerHandle(Protocol):
    """What ``call_at`` returns: something that can be cancelled."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """The only source of time for the broker core and the client."""

    def now(self) -> float:
        """Current time, seconds since the epoch."""
        ...

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` (a plain function) once the clock reaches ``when``. Needs a running event loop."""
        ...


class RealClock:
    """Wall-clock time; timers ride on the running asyncio loop."""

    __slots__ = ()

    #: ``time.time`` itself, not a method around it: the broker reads the clock a few times per message
    now: Callable[[], float] = staticmethod(time.time)

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, when - time.time()), callback)

    def __repr__(self) -> str:
        return "RealClock()"


class _ManualTimer:
    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


_settlers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = weakref.WeakKeyDictionary()


def _io_pending(loop: asyncio.AbstractEventLoop) -> bool:
    """True when a socket of this loop is ready to read or write (bytes in flight between two local peers)."""
    selector = getattr(loop, "_selector", None)
    if selector is None:
        return False
    try:
        return bool(selector.select(0))
    except (OSError, ValueError):  # pragma: no cover - a closing loop
        return False


async def settle(max_rounds: int = 10_000) -> None:
    """Let every task that can run, run, until the event loop has nothing left to do now.

    Why: after a timer fires, the woken tasks (a consumer waiting in ``receive``, a listener) must get to run before
    virtual time moves on, or a test would observe events out of order. "Nothing left to do" means: no callback is
    ready except other settlers' own wake-ups, and no local socket has bytes waiting (so a TCP round trip between a
    client and a broker in the same process completes first).
    """
    loop = asyncio.get_running_loop()
    ready = getattr(loop, "_ready", None)
    if ready is None:  # pragma: no cover - non-CPython loops
        for _ in range(100):
            await asyncio.sleep(0)
        return
    _settlers[loop] = _settlers.get(loop, 0) + 1
    try:
        idle_rounds = 0
        for _ in range(max_rounds):
            await asyncio.sleep(0)
            # Other settlers' wake-ups are always ready; anything beyond them is work. Two idle rounds in a row make
            # sure call_soon chains started by the tasks we just ran have drained too.
            if len(ready) <= _settlers[loop] - 1 and not _io_pending(loop):
                idle_rounds += 1
                if idle_rounds >= 2:
                    return
            else:
                idle_rounds = 0
    finally:
        _settlers[loop] -= 1


class ManualClock:
    """Virtual time that only moves when the test says so (or, with ``autojump``, when everything is waiting).

    ``await clock.advance(2.5)`` fires, in order, every timer due in the next 2.5 virtual seconds, letting woken tasks
    run after each one. With ``autojump=True`` a background task jumps straight to the next timer whenever the event
    loop is idle (as trio's ``MockClock(autojump_threshold=0)``), so code that waits on timeouts just runs.
    """

    def __init__(self, start: float = DEFAULT_MANUAL_EPOCH, *, autojump: bool = False) -> None:
        self._now = float(start)
        self._timers: list[tuple[float, int, _ManualTimer]] = []
        self._counter = itertools.count()
        self._autojump = autojump
        self._jumper: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Event | None = None
        self.start = float(start)

    def __repr__(self) -> str:
        return f"ManualClock(now={self._now - self.start:.6f}s after start, timers={len(self._timers)})"

    @property
    def elapsed(self) -> float:
        """Virtual seconds since the clock was created."""
        return self._now - self.start

    @property
    def autojump(self) -> bool:
        return self._autojump

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _ManualTimer(when, callback)
        heapq.heappush(self._timers, (when, next(self._counter), timer))
        if self._autojump:
            self._ensure_jumper()
        return timer

    def next_deadline(self) -> float | None:
        """When the earliest pending timer is due, or None."""
        self._drop_cancelled()
        return self._timers[0][0] if self._timers else None

    def _drop_cancelled(self) -> None:
        timers = self._timers
        while timers and timers[0][2].cancelled:
            heapq.heappop(timers)

    def _fire_due(self, until: float) -> bool:
        """Fire the earliest timer due at or before ``until``; False when there is none."""
        self._drop_cancelled()
        if not self._timers or self._timers[0][0] > until:
            return False
        when, _, timer = heapq.heappop(self._timers)
        self._now = max(self._now, when)
        timer.cancelled = True
        timer.callback()
        return True

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing due timers in order and letting the woken tasks run."""
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards: {seconds!r}")
        await self.advance_to(self._now + seconds)

    async def advance_to(self, when: float) -> None:
        """Move time forward to the absolute time ``when``."""
        await settle()
        while self._fire_due(when + TIMER_TOLERANCE):
            await settle()
        self._now = max(self._now, when)
        await settle()

    async def advance_to_next_deadline(self) -> bool:
        """Jump to the next timer and fire it; False when no timer is pending."""
        deadline = self.next_deadline()
        if deadline is None:
            return False
        await self.advance_to(deadline)
        return True

    # -- autojump ---------------------------------------------------------------------------------------------------

    def _ensure_jumper(self) -> None:
        if self._jumper is not None and not self._jumper.done():
            if self._wakeup is not None:
                self._wakeup.set()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._wakeup = asyncio.Event()
        self._jumper = loop.create_task(self._jump_when_idle(), name="minibroker-manual-clock-autojump")

    async def _jump_when_idle(self) -> None:
        assert self._wakeup is not None
        while True:
            await settle()
            deadline = self.next_deadline()
            if deadline is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            self._fire_due(deadline)

    def set_autojump(self, enabled: bool) -> None:
        """Turn autojump on or off (on: whenever the loop is idle, jump to the next timer)."""
        self._autojump = enabled
        if enabled:
            if self._timers:
                self._ensure_jumper()
        else:
            self.stop()

    def stop(self) -> None:
        """Stop the autojump task (called by the broker on close)."""
        if self._jumper is not None:
            self._jumper.cancel()
            self._jumper = None
