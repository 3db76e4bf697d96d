"""Stores for tests of what the broker does when its disk fails."""

from __future__ import annotations

from collections.abc import Sequence

from minibroker._core.journal import JournalOp
from minibroker.errors import StoreError
from minibroker.store import SqliteStore

__all__ = ["FullDisk"]


class FullDisk(SqliteStore):
    """A SQLite store whose disk can be made full: every batch then fails, and nothing reaches the file."""

    full = False

    def apply(self, ops: Sequence[JournalOp]) -> None:
        if self.full:
            raise StoreError(f"the message store {self.path} failed: database or disk is full")
        super().apply(ops)
