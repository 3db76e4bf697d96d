"""The README's first test, verbatim: what a new user copies must pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def first_test() -> str:
    section = README.read_text().split("## A first test", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def test_first_test_is_short() -> None:
    """The README promises a complete first test in under 15 lines."""
    assert len(first_test().strip().splitlines()) < 15


def test_first_test_passes(pytester: pytest.Pytester) -> None:
    """It passes as written, in auto mode with warnings as errors."""
    pytester.makepyfile(test_readme_example=first_test())
    result = pytester.runpytest(
        "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function", "-W", "error"
    )
    result.assert_outcomes(passed=1)
