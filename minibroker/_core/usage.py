"""The broker's memory usage: one counter every queue adds its unacked messages' bytes to (ActiveMQ's
``systemUsage``). Its own module, imported by the queues and by the core's flow control (memory.py) alike."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["DEFAULT_SYSTEM_MEMORY_LIMIT", "MemoryUsage"]


#: an embedded ActiveMQ's ``systemUsage`` memory limit (``BrokerService``: 1 GB)
DEFAULT_SYSTEM_MEMORY_LIMIT = 1 << 30


class MemoryUsage:
    """The broker's memory usage (ActiveMQ's ``systemUsage``/``memoryUsage``): the bytes every queue's unacked
    messages hold, against a system limit (1 GiB by default, an embedded ActiveMQ's; 0: none). Past the limit every
    queue is full, so producer flow control holds (or fails) sends until consumers free memory."""

    __slots__ = ("full", "limit", "on_change", "used")

    def __init__(self, limit: int, on_change: Callable[[bool], None] | None = None) -> None:
        #: the limit in bytes; no limit is one no usage reaches
        self.limit = limit if limit > 0 else 1 << 62
        self.used = 0
        self.full = False
        self.on_change = on_change

    def fill(self) -> None:
        self.full = True
        if self.on_change is not None:
            self.on_change(True)

    def free(self) -> None:
        self.full = False
        if self.on_change is not None:
            self.on_change(False)
