"""Ids minted by the edges carry one per-process prefix, so they never repeat across processes or restarts."""

from __future__ import annotations

import os

from minibroker._ids import PROCESS_ID_PREFIX, process_id_prefix
from minibroker.plugins.stomp.naming import new_connection_name


def test_the_prefix_names_this_process() -> None:
    assert f"-{os.getpid()}-" in PROCESS_ID_PREFIX
    assert process_id_prefix().rsplit("-", 2)[0] == PROCESS_ID_PREFIX.rsplit("-", 2)[0]


def test_stomp_connection_names_carry_the_prefix() -> None:
    first, second = new_connection_name(), new_connection_name()
    assert first != second
    assert first.startswith(f"ID:{PROCESS_ID_PREFIX}-stomp-")
