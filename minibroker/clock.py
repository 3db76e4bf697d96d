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
import os
import socket
import time
import warnings
import weakref
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "ManualClock", "RealClock", "TimerHandle", "poll_sleep", "settle"]

#: 2026-01-01T00:00:00Z: where a ManualClock starts unless told otherwise, so timestamps are plausible and fixed.
DEFAULT_MANUAL_EPOCH = 1_767_225_600.0

#: Nanoseconds per second: a ManualClock counts elapsed time in integer nanoseconds, so advances add up exactly.
NS_PER_SECOND = 1_000_000_000

#: Absolute times (``call_at(when)``, ``advance_to(when)``) reach the clock as epoch floats, which carry about 2.4e-7 s
#: of rounding; they are read to the nearest microsecond, so a timer set "0.2 s from now" is due at exactly +0.2 s.
_ABSOLUTE_RESOLUTION_NS = 1_000

#: Real seconds the loop must stay idle before autojump moves virtual time (trio's ``autojump_threshold``): long
#: enough for a peer thread (stomp.py's receiver, a worker) that was just woken to answer, short enough to be unseen.
DEFAULT_AUTOJUMP_THRESHOLD = 0.01

#: A task sleeping on the loop's real clock for at most this many seconds is about to act, so autojump waits for it;
#: a longer real timer (a test's ``asyncio.timeout(10)`` guard) is not work and does not hold virtual time.
DEFAULT_REAL_TIMER_HORIZON = 1.0


class VirtualLoop(Protocol):
    """What a clock asks of the event loop it drives (:class:`~minibroker.virtual_time.VirtualTimeLoop`)."""

    def next_timer_ns(self) -> int | None: ...


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

    __slots__ = ("now",)

    def __init__(self) -> None:
        #: ``time.time`` itself, held by the instance: the broker reads the clock a few times per message, and a
        #: slot is read at once where a class-level staticmethod is looked up through the type every time
        self.now: Callable[[], float] = time.time

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        loop = asyncio.get_running_loop()
        return loop.call_later(max(0.0, when - time.time()), callback)

    def __repr__(self) -> str:
        return "RealClock()"


class _ManualTimer:
    __slots__ = ("callback", "cancelled", "when", "when_ns")

    def __init__(self, when: float, when_ns: int, callback: Callable[[], None]) -> None:
        self.when = when
        self.when_ns = when_ns
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


def _acknowledge_at_once(loop: asyncio.AbstractEventLoop) -> None:
    """Send every delayed TCP ACK owed by this loop's sockets now (Linux ``TCP_QUICKACK``).

    Why: a peer that writes twice without reading (stomp.py's SUBSCRIBE then SEND) holds the second write back
    (Nagle) until our ACK of the first, which the kernel delays up to 40 ms: bytes "in flight" that no select() sees.
    Acknowledging at once releases them before the idle test is trusted.
    """
    quickack = getattr(socket, "TCP_QUICKACK", None)
    selector = getattr(loop, "_selector", None)
    if quickack is None or selector is None:
        return
    for key in list(selector.get_map().values()):
        try:
            with socket.socket(fileno=os.dup(key.fd)) as sock:
                if sock.type == socket.SOCK_STREAM and sock.family in (socket.AF_INET, socket.AF_INET6):
                    sock.setsockopt(socket.IPPROTO_TCP, quickack, 1)
        except OSError:  # not a socket (the loop's self-pipe), or closing
            continue


#: CPU nanoseconds other threads may use in an idle window and still count as idle (bookkeeping noise)
_OTHER_THREADS_IDLE_NS = 50_000


def _other_threads_cpu_ns() -> int:
    """CPU time used so far by this process's threads other than the calling one (portable: process minus thread)."""
    return time.process_time_ns() - time.thread_time_ns()


#: Real-time wake-ups that are not work: jumpers' own (so one clock's jumper never waits on another's) and polls.
_jumper_handles: weakref.WeakSet[asyncio.TimerHandle] = weakref.WeakSet()


def _executor_busy(loop: asyncio.AbstractEventLoop) -> bool:
    """True when the loop's default executor runs or queues a job (``asyncio.to_thread``, ``run_in_executor``)."""
    executor = getattr(loop, "_default_executor", None)
    queue = getattr(executor, "_work_queue", None)
    threads = getattr(executor, "_threads", None)
    idle = getattr(getattr(executor, "_idle_semaphore", None), "_value", None)
    if queue is None or threads is None or idle is None:
        return False
    return bool(queue.qsize() > 0 or len(threads) > idle)


def _real_timer_due(loop: asyncio.AbstractEventLoop, horizon: float) -> bool:
    """True when a task waits on the loop's real clock for at most ``horizon`` more seconds (``asyncio.sleep(0.2)``)."""
    scheduled: list[asyncio.TimerHandle] = getattr(loop, "_scheduled", [])
    limit = loop.time() + horizon
    return any(h.when() <= limit and not h.cancelled() and h not in _jumper_handles for h in scheduled)


async def poll_sleep(seconds: float) -> None:
    """Sleep ``seconds`` on the loop's real clock without holding autojump back.

    Why: a task in ``asyncio.sleep(0.01)`` is about to act, so autojump waits for it; a test polling for a condition
    ("until the DLQ holds one message") is not, and must let virtual time jump while it polls.
    """
    loop = asyncio.get_running_loop()
    woken = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    handle = loop.call_later(seconds, wake)
    _jumper_handles.add(handle)
    try:
        await woken
    finally:
        handle.cancel()


def loop_is_introspectable(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether autojump can see this loop's ready queue, timers and selector (CPython's selector loops only)."""
    return all(hasattr(loop, name) for name in ("_ready", "_scheduled", "_selector"))


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
    run after each one. Elapsed time is counted in integer nanoseconds, so advances that sum to T land exactly on T.

    With ``autojump=True`` a background task jumps straight to the next timer once the event loop has been truly idle
    for ``autojump_threshold`` real seconds: no ready callback, no socket with bytes waiting, no job in the default
    executor, no task sleeping on the real clock for less than ``real_timer_horizon`` seconds, no other thread of the
    process using CPU meanwhile, and no hold (see :meth:`hold_while`). While a hold, an executor job or another
    thread keeps the process busy, virtual time flows at real speed instead of jumping, as a real broker's would. On
    an event loop it cannot inspect (uvloop, ...) it never jumps: virtual time flows at real speed, with a
    :class:`RuntimeWarning`.
    """

    def __init__(
        self,
        start: float = DEFAULT_MANUAL_EPOCH,
        *,
        autojump: bool = False,
        autojump_threshold: float = DEFAULT_AUTOJUMP_THRESHOLD,
        real_timer_horizon: float = DEFAULT_REAL_TIMER_HORIZON,
    ) -> None:
        if autojump_threshold < 0:
            raise ValueError(f"autojump_threshold must not be negative: {autojump_threshold!r}")
        if real_timer_horizon < 0:
            raise ValueError(f"real_timer_horizon must not be negative: {real_timer_horizon!r}")
        self.start = float(start)
        self.autojump_threshold = autojump_threshold
        self.real_timer_horizon = real_timer_horizon
        self._elapsed_ns = 0
        #: what now() returns: start + elapsed, but never less than a fired timer's own ``when`` (float rounding)
        self._now = self.start
        self._timers: list[tuple[int, int, _ManualTimer]] = []
        self._counter = itertools.count()
        self._autojump = autojump
        self._jumper: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Event | None = None
        self._holds: list[Callable[[], str | None]] = []
        #: the VirtualTimeLoop whose time this clock is (minibroker.virtual_time): it does the jumping, and
        #: ``advance`` moves its timers too
        self._driver: VirtualLoop | None = None

    def __repr__(self) -> str:
        return f"ManualClock(now={self.elapsed:.6f}s after start, timers={len(self._timers)})"

    @property
    def elapsed(self) -> float:
        """Virtual seconds since the clock was created (exact: kept in integer nanoseconds)."""
        return self._elapsed_ns / NS_PER_SECOND

    @property
    def elapsed_ns(self) -> int:
        """Virtual nanoseconds since the clock was created."""
        return self._elapsed_ns

    @property
    def autojump(self) -> bool:
        return self._autojump

    def now(self) -> float:
        return self._now

    def _offset_ns(self, when: float) -> int:
        """An absolute time as nanoseconds after start, read to the microsecond (the epoch float's precision)."""
        return round((when - self.start) * (NS_PER_SECOND // _ABSOLUTE_RESOLUTION_NS)) * _ABSOLUTE_RESOLUTION_NS

    def _move_to(self, elapsed_ns: int, at_least: float | None = None) -> None:
        self._elapsed_ns = max(self._elapsed_ns, elapsed_ns)
        self._now = max(self._now, self.start + self._elapsed_ns / NS_PER_SECOND)
        if at_least is not None:
            self._now = max(self._now, at_least)

    def call_at(self, when: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _ManualTimer(when, self._offset_ns(when), callback)
        heapq.heappush(self._timers, (timer.when_ns, next(self._counter), timer))
        if self._autojump and self._driver is None:
            self._ensure_jumper()
        return timer

    def next_deadline(self) -> float | None:
        """When the earliest pending timer is due, or None."""
        self._drop_cancelled()
        return self._timers[0][2].when if self._timers else None

    def _next_deadline_ns(self) -> int | None:
        self._drop_cancelled()
        return self._timers[0][0] if self._timers else None

    def _drop_cancelled(self) -> None:
        timers = self._timers
        while timers and timers[0][2].cancelled:
            heapq.heappop(timers)

    def _fire_due(self, until_ns: int) -> bool:
        """Fire the earliest timer due at or before ``until_ns``; False when there is none."""
        self._drop_cancelled()
        if not self._timers or self._timers[0][0] > until_ns:
            return False
        when_ns, _, timer = heapq.heappop(self._timers)
        # the callback sees now() >= the float it asked for, so "now >= deadline" checks hold at the deadline
        self._move_to(when_ns, at_least=timer.when)
        timer.cancelled = True
        timer.callback()
        return True

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing due timers in order and letting the woken tasks run."""
        if seconds < 0:
            raise ValueError(f"cannot move a clock backwards: {seconds!r}")
        await self._advance_to_ns(self._elapsed_ns + round(seconds * NS_PER_SECOND))

    async def advance_to(self, when: float) -> None:
        """Move time forward to the absolute time ``when`` (a time already passed only lets tasks run)."""
        await self._advance_to_ns(self._offset_ns(when), at_least=when)

    async def _advance_to_ns(self, target_ns: int, at_least: float | None = None) -> None:
        await settle()
        while self._reach_loop_timer(target_ns) or self._fire_due(target_ns):
            await settle()
        self._move_to(target_ns, at_least)
        await settle()

    def _drive_from(self, loop: VirtualLoop) -> None:
        """Be the time of ``loop`` (a :class:`~minibroker.virtual_time.VirtualTimeLoop`): the loop jumps when idle,
        and ``advance`` fires the loop's timers in order with this clock's."""
        self._driver = loop
        self.stop()

    def _reach_loop_timer(self, until_ns: int) -> bool:
        """Move to the driving loop's next timer when it comes before this clock's next one and ``until_ns``; the
        loop runs it while the caller settles. False when there is none."""
        if self._driver is None:
            return False
        loop_ns = self._driver.next_timer_ns()
        if loop_ns is None or not self._elapsed_ns < loop_ns <= until_ns:
            return False
        own = self._next_deadline_ns()
        if own is not None and own <= loop_ns:
            return False
        self._move_to(loop_ns)
        return True

    async def advance_to_next_deadline(self) -> bool:
        """Jump to the next timer and fire it; False when no timer is pending."""
        deadline = self.next_deadline()
        if deadline is None:
            return False
        await self.advance_to(deadline)
        return True

    # -- autojump ---------------------------------------------------------------------------------------------------

    def hold_while(self, check: Callable[[], str | None]) -> Callable[[], None]:
        """Keep autojump from jumping while ``check()`` names a reason (for example "a peer is mid-handshake");
        virtual time then flows at real speed. Returns a function that removes the hold.

        Why: only the edge that talks to a real peer knows it is waiting on one; jumping 30 virtual seconds to a
        handshake deadline would close a client that is merely a few real milliseconds slow."""
        self._holds.append(check)

        def release() -> None:
            if check in self._holds:
                self._holds.remove(check)

        return release

    def busy_reason(self) -> str | None:
        """Why autojump would not jump now (None: the loop is idle). Must run on the loop."""
        loop = asyncio.get_running_loop()
        ready = getattr(loop, "_ready", ())
        if len(ready) > _settlers.get(loop, 0):
            return "callbacks are ready to run"
        if _io_pending(loop):
            return "a socket has bytes waiting"
        if _real_timer_due(loop, self.real_timer_horizon):
            return "a task sleeps on the real clock"
        return self._flow_reason(loop)

    def _flow_reason(self, loop: asyncio.AbstractEventLoop) -> str | None:
        """Reasons for which virtual time follows real time rather than waiting for idleness."""
        for check in list(self._holds):
            reason = check()
            if reason:
                return reason
        if _executor_busy(loop):
            return "an executor job is running"
        return None

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

    async def _flow_real_time(self, deadline_ns: int) -> None:
        """Let virtual time follow real time for one step (at most up to the next deadline)."""
        step = max(self.autojump_threshold, 0.001)
        wait = min(step, max((deadline_ns - self._elapsed_ns) / NS_PER_SECOND, 0.0))
        began = time.monotonic()
        await poll_sleep(wait)
        spent_ns = round((time.monotonic() - began) * NS_PER_SECOND)
        await self._advance_to_ns(min(self._elapsed_ns + spent_ns, deadline_ns))

    async def _jump_when_idle(self) -> None:
        assert self._wakeup is not None
        loop = asyncio.get_running_loop()
        introspectable = loop_is_introspectable(loop)
        if not introspectable:
            warnings.warn(
                f"ManualClock autojump cannot tell when {type(loop).__name__} is idle: virtual time follows real "
                "time instead of jumping",
                RuntimeWarning,
                stacklevel=1,
            )
        while True:
            await settle()
            deadline_ns = self._next_deadline_ns()
            if deadline_ns is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            if not introspectable or self._flow_reason(loop) is not None:
                await self._flow_real_time(deadline_ns)
                continue
            if self.busy_reason() is not None:
                await poll_sleep(self.autojump_threshold)
                continue
            # idle now: still idle, with the same next deadline, after the threshold (and the peers' held bytes)?
            # A peer in another thread of this process (stomp.py's receiver, a service) that ran meanwhile is
            # answering: time then flows at real speed for a step rather than jumping past its answer.
            _acknowledge_at_once(loop)
            others_before = _other_threads_cpu_ns()
            await poll_sleep(self.autojump_threshold)
            _acknowledge_at_once(loop)
            if self.busy_reason() is not None or self._next_deadline_ns() != deadline_ns:
                continue
            if _other_threads_cpu_ns() - others_before > _OTHER_THREADS_IDLE_NS:
                await self._flow_real_time(deadline_ns)
                continue
            self._fire_due(deadline_ns)

    def set_autojump(self, enabled: bool) -> None:
        """Turn autojump on or off (on: whenever the loop is idle, jump to the next timer)."""
        self._autojump = enabled
        if enabled:
            if self._timers and self._driver is None:
                self._ensure_jumper()
        else:
            self.stop()

    def stop(self) -> None:
        """Stop the autojump task (called by the broker on close)."""
        if self._jumper is not None:
            self._jumper.cancel()
            self._jumper = None
