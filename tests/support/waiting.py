"""Waiting on a condition in tests: the event loop runs (socket reads and writes included) until it holds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["until"]


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Let the event loop run until ``predicate`` holds: TimeoutError after ``timeout`` real seconds."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0)
