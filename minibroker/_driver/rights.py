"""The three rights a security filter grants (ActiveMQ's authorization entries): what a connection asks for."""

from __future__ import annotations

__all__ = ["ADMIN", "READ", "WRITE"]

READ, WRITE, ADMIN = "read", "write", "admin"
