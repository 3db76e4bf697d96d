"""The README's list of the pytest plugin's fixtures and markers is complete (issue 43, item 3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from minibroker.plugins import pytest_plugin

README = Path(__file__).resolve().parents[1] / "README.md"


def plugin_section() -> str:
    return README.read_text().split("## The pytest plugin", 1)[1].split("\n## ", 1)[0]


def fixtures() -> list[str]:
    return sorted(
        name
        for name, value in vars(pytest_plugin).items()
        if getattr(value, "_fixture_function_marker", None) or getattr(value, "_pytestfixturefunction", None)
    )


@pytest.mark.parametrize("name", fixtures())
def test_every_fixture_is_listed(name: str) -> None:
    assert f"`{name}`" in plugin_section()


def test_every_marker_and_keyword_is_listed() -> None:
    class Config:
        lines: list[str] = []

        def addinivalue_line(self, _name: str, line: str) -> None:
            self.lines.append(line)

    config = Config()
    pytest_plugin.pytest_configure(config)  # type: ignore[arg-type]
    section = plugin_section()
    markers = [re.match(r"\w+", line).group(0) for line in config.lines]  # type: ignore[union-attr]
    assert markers and all(f"@pytest.mark.{marker}" in section for marker in markers), markers
    import attrs

    from minibroker.plugins.testing._pytest_fixtures import BrokerOptions

    for field in attrs.fields(BrokerOptions):
        assert f"`{field.name}`" in section, field.name
