"""Shared test setup: one summary line per suite of real-broker replays.

This file lives in ``tests/``, not at the repository root, so the source tree never shadows the installed package.
The helpers in ``tests/support`` are the ``support`` package (pytest puts ``tests/`` on ``sys.path``: ``pythonpath``
in pyproject.toml).
"""

from __future__ import annotations

import zoneinfo  # noqa: F401  (see below)

import pytest

import minibroker._core.replay_reads
import minibroker._core.scheduler
import minibroker._core.topic_log
import minibroker.destination_options
import minibroker.plugins.mqtt
import minibroker.plugins.stomp
import minibroker.selector
import minibroker.store
import minibroker.typed  # noqa: F401
from minibroker import *  # noqa: F403  (every name: minibroker and its client load theirs on first use, and keep
from minibroker.client import *  # noqa: F403  what they loaded: it must not be a module pytester drops)

# The broker, its client and edges are imported here, before any in-process pytester run: the pytest plugin imports
# them lazily (issue 45), as minibroker.client its names and the core its features (replayable reads, the scheduler,
# topic logs, the driver's results), and what is first imported inside such a run is dropped afterwards by pytester's
# sys.modules snapshot. The next run imports it again: new classes that tables built by the first no longer know
# (KeyError on a command class), and C extensions that cannot be imported twice (zoneinfo: "SystemError: null
# argument to internal routine").

# -- replays of real-broker recordings: one summary line per suite -----------------------------------------------

RESULTS: dict[str, dict[str, int]] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and item.get_closest_marker("conformance") is not None:
        counts = RESULTS.setdefault(item.path.parent.name, {"passed": 0, "failed": 0, "skipped": 0})
        if hasattr(report, "wasxfail"):
            counts["skipped"] += 1  # expected to fail: a feature still to be built (the reason is in the test)
        else:
            counts["passed" if report.passed else "failed"] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """``conformance: N passed, M failed, K skipped`` (and the same for the differential and STOMP replays)."""
    for suite, counts in sorted(RESULTS.items()):
        terminalreporter.write_line(
            f"{suite}: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
        )
