"""The count of tests that ran on the real ActiveMQ and of minibroker-only ones, printed at the end of the run."""

from __future__ import annotations

from typing import Any

import pytest

#: one line per project run on ActiveMQ, as its pytest printed the count (filled by test_on_activemq.py)
COUNTS: list[str] = []


@pytest.fixture(scope="session")
def activemq_counts() -> list[str]:
    return COUNTS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if COUNTS:
        terminalreporter.write_sep("-", "the guides and examples on a real ActiveMQ 5.17.2 (--minibroker-external)")
        for line in COUNTS:
            terminalreporter.write_line(line)
