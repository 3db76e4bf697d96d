"""``serve``'s garbage-collector policy: full collections that walk only what is new.

CPython's full collection walks every tracked object, and a queued message is two (the message and its queue
entry): under a flood of 100,000 queued messages one took 60-145 ms, and over a second on a loaded machine, with
every client waiting (issue 41). What survives a full collection is frozen here (``gc.freeze``), so the next one
walks only the objects made since. Frozen objects are still freed when their last reference goes (an acked message
is); only garbage cycles among them wait, for the next thaw: every ``thaw_interval`` seconds a full collection runs
over the whole heap once.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

__all__ = ["GenerationalFreeze"]


class GenerationalFreeze:
    """A ``gc.callbacks`` entry: freeze after each full collection, thaw every ``thaw_interval`` seconds."""

    __slots__ = ("_clock", "last_thaw", "thaw_interval")

    def __init__(self, thaw_interval: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.thaw_interval = thaw_interval
        self._clock = clock
        self.last_thaw = clock()

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info.get("generation") != 2:
            return
        now = self._clock()
        if now - self.last_thaw >= self.thaw_interval:
            gc.unfreeze()  # the next full collection walks everything, cycles among the frozen included
            self.last_thaw = now
        else:
            gc.freeze()

    def install(self) -> None:
        """Freeze what starting made and take part in every collection from now on."""
        gc.freeze()
        if self not in gc.callbacks:
            gc.callbacks.append(self)

    def remove(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)
        gc.unfreeze()
