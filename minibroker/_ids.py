"""The prefix that makes ids unique across hosts, processes and restarts: one home for every edge that mints ids
(the native client's connections and messages, STOMP connections and their messages)."""

from __future__ import annotations

import os
import socket
import time

__all__ = ["PROCESS_ID_PREFIX", "process_id_prefix"]


def process_id_prefix() -> str:
    """As ActiveMQ's ``IdGenerator`` (host, a per-process number, the start time in ms): ids minted by two
    processes, or by one process before and after a restart, never collide."""
    host = "".join(c if c.isalnum() or c in "-." else "-" for c in socket.gethostname()) or "localhost"
    return f"{host}-{os.getpid()}-{time.time_ns() // 1_000_000}-0"


#: this process's prefix, computed once
PROCESS_ID_PREFIX = process_id_prefix()
