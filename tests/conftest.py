"""Shared test setup: makes the helper modules in ``tests/support`` (``scriptrunner``) importable.

This file lives in ``tests/``, not at the repository root, so the source tree never shadows the installed package.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SUPPORT = Path(__file__).resolve().parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))


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
