"""``serve``'s garbage-collector policy: full collections that walk nothing but what a thaw hands back.

CPython's full collection walks every tracked object that reached its oldest generation, and a broker's long-lived
state is made of them: a queued message is two (the message and its queue entry), a retained topic and a wildcard
subscriber's place in it a few more. Under a flood of 100,000 queued messages one full collection took 60-145 ms,
over a second on a loaded machine (issue 41); over 50,000 retained topics, 47 ms (issue 45), every client waiting.

So when a full collection starts, everything tracked is frozen first (``gc.freeze``: an O(1) move to the permanent
generation) and the collection walks nothing. Young collections still run as before, and frozen objects are still
freed when their last reference goes (an acked message, a closed connection's state); only garbage *cycles* among
them wait, for the next thaw. What stays frozen is bounded twice: every ``thaw_interval`` seconds (5 minutes), or
once ``thaw_growth`` more objects (one million) are frozen than after the last thaw, that full collection walks the
whole heap once, frees the cycles, and freezes what survives. A thaw's walk is the pause this saves elsewhere
(about 1 ms per 2,000 tracked objects on these machines), taken once per bound instead of at every full collection.

On only in ``minibroker serve``, whose process is the broker's alone: an application that embeds ``Broker`` keeps
its own collector, whose garbage the broker must not hold back.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

__all__ = ["GenerationalFreeze"]


class GenerationalFreeze:
    """A ``gc.callbacks`` entry: freeze when a full collection starts; thaw for one full collection every
    ``thaw_interval`` seconds or once ``thaw_growth`` more objects are frozen than after the last thaw."""

    __slots__ = ("_clock", "_thawing", "frozen_after_thaw", "last_thaw", "thaw_growth", "thaw_interval", "thaws")

    def __init__(
        self,
        thaw_interval: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        thaw_growth: int = 1_000_000,
    ) -> None:
        self.thaw_interval = thaw_interval
        self.thaw_growth = thaw_growth
        self._clock = clock
        self.last_thaw = clock()
        #: objects frozen once the last thaw's collection was over (the growth bound counts from here)
        self.frozen_after_thaw = 0
        self._thawing = False
        #: full collections that walked the whole heap (for the tests and the benchmark's notes)
        self.thaws = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            now = self._clock()
            if (
                now - self.last_thaw >= self.thaw_interval
                or gc.get_freeze_count() - self.frozen_after_thaw >= self.thaw_growth
            ):
                gc.unfreeze()  # this collection walks everything, cycles among the frozen included
                self.last_thaw = now
                self._thawing = True
                self.thaws += 1
            else:
                gc.freeze()  # this collection walks nothing
        elif phase == "stop" and self._thawing:
            self._thawing = False
            gc.freeze()  # what survived the whole walk
            self.frozen_after_thaw = gc.get_freeze_count()

    def install(self) -> None:
        """Freeze what starting made and take part in every collection from now on."""
        gc.freeze()
        self.frozen_after_thaw = gc.get_freeze_count()
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def remove(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)
        gc.unfreeze()
