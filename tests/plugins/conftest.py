"""Fixtures shared by the plugin tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest


@pytest.fixture
async def processes() -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """``minibroker serve`` processes a test started (and may have killed): any still running is killed at the end."""
    started: list[asyncio.subprocess.Process] = []
    yield started
    for proc in started:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
